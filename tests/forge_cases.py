"""Inputs code hosts choke on, shared by the renderer tests: a messy diff and its findings.

``MESSY_DIFF`` is real ``git diff --cached -M`` output: a deleted file, a binary file, a
rename to a non-ASCII name (git quotes it, octal escapes and all) and a path with spaces
and an accent. :func:`messy_findings` anchors one finding to every kind of place in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

from council.change.commentable import land
from council.change.diff import Change, parse_diff
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, Finding, LineAnchor, Origin
from council.model.report import CouncilReport, ParticipantSummary

Sev = Literal["critical", "medium", "minor"] | None
Label = Literal["issue", "nitpick", "praise", "question", "suggestion", "thought", "note"]

MESSY_DIFF = (
    "diff --git a/gone.py b/gone.py\n"
    "deleted file mode 100644\n"
    "index 04ec35a..0000000\n"
    "--- a/gone.py\n"
    "+++ /dev/null\n"
    "@@ -1,3 +0,0 @@\n"
    "-x\n"
    "-y\n"
    "-z\n"
    "diff --git a/logo.png b/logo.png\n"
    "index 8352675..1592e5c 100644\n"
    "Binary files a/logo.png and b/logo.png differ\n"
    'diff --git a/old name.py "b/new n\\303\\244me.py"\n'
    "similarity index 66%\n"
    "rename from old name.py\n"
    'rename to "new n\\303\\244me.py"\n'
    "index b414108..0676235 100644\n"
    "--- a/old name.py\t\n"
    '+++ "b/new n\\303\\244me.py"\t\n'
    "@@ -1,6 +1,6 @@\n"
    " 1\n"
    " 2\n"
    " 3\n"
    "-4\n"
    "+four\n"
    " 5\n"
    " 6\n"
    'diff --git "a/src/dir with space/caf\\303\\251.py" "b/src/dir with space/caf\\303\\251.py"\n'
    "index 9405325..91ac79b 100644\n"
    '--- "a/src/dir with space/caf\\303\\251.py"\t\n'
    '+++ "b/src/dir with space/caf\\303\\251.py"\t\n'
    "@@ -1,5 +1,6 @@\n"
    " a\n"
    "-b\n"
    "+B\n"
    " c\n"
    " d\n"
    " e\n"
    "+f\n"
)

CAFE = "src/dir with space/café.py"
RENAMED_OLD = "old name.py"
RENAMED_NEW = "new näme.py"
DELETED = "gone.py"
BINARY = "logo.png"

HAWK = Origin(kind="reviewer", run_id="r1", participant="hawk")
OWL = Origin(kind="reviewer", run_id="r1", participant="owl")
HAND = Origin(kind="hand")


def messy_change() -> Change:
    """The parsed :data:`MESSY_DIFF`."""
    return parse_diff(MESSY_DIFF)


def finding(
    ident: int | None,
    anchor: Anchor | None = None,
    *,
    severity: Sev = None,
    label: Label = "issue",
    subject: str = "",
    discussion: str = "",
    origin: Origin | None = HAWK,
    raised_by: tuple[str, ...] | None = None,
) -> Finding:
    """A finding with defaults that keep tests short."""
    return Finding(
        id=ident,
        anchor=anchor or ChangeAnchor(),
        label=label,
        subject=subject or f"subject {ident}",
        discussion=discussion,
        origin=origin,
        severity=severity,
        raised_by=raised_by,
    )


def people(*ids: str) -> tuple[ParticipantSummary, ...]:
    """Answered reviewers with these ids (hawk and owl when none are given)."""
    names = ids or ("hawk", "owl")
    return tuple(ParticipantSummary(id=i, backend="replay", state="answered") for i in names)


def report(*findings: Finding, head: str = "0123abcd" * 5, **fields: object) -> CouncilReport:
    """A settled report of hawk and owl holding ``findings``; ``fields`` override."""
    values: dict[str, object] = {
        "run_id": "r1",
        "session": "s1",
        "status": "settled",
        "head": head,
        "participants": people(),
        "findings": findings,
    }
    values.update(fields)
    return CouncilReport.model_validate(values)


def messy_findings() -> tuple[Finding, ...]:
    """One finding per kind of place in :data:`MESSY_DIFF`; the comment says where it lands."""
    return (
        # 1 lands: an added line of the path with spaces and an accent
        finding(1, LineAnchor(path=CAFE, line=2), severity="critical", discussion="Why.\n\nMore."),
        # 2 lands: a range inside one hunk
        finding(2, LineAnchor(path=CAFE, start_line=1, line=3), severity="medium"),
        # 3 lands: the old side of the renamed file, by its OLD path
        finding(3, LineAnchor(path=RENAMED_OLD, side="old", line=4), severity="minor"),
        # 4 lands: a range on the old side of the deleted file
        finding(4, LineAnchor(path=DELETED, side="old", start_line=1, line=3), label="nitpick"),
        # 5 file-absent: the deleted file has no new side
        finding(5, LineAnchor(path=DELETED, line=1), severity="critical"),
        # 6 lands, but as a file: the binary file as a whole
        finding(6, FileAnchor(path=BINARY), label="question"),
        # 7 line-absent: a binary file shows no lines
        finding(7, LineAnchor(path=BINARY, line=1), label="question"),
        # 8 the change as a whole
        finding(8, ChangeAnchor(), label="thought", discussion="```python\nunclosed fence"),
        # 9 line-absent: far below the hunk
        finding(9, LineAnchor(path=CAFE, line=40), severity="medium"),
        # 10 lands: the new side of the renamed file, raised by two reviewers
        finding(
            10,
            LineAnchor(path=RENAMED_NEW, line=4),
            severity="critical",
            origin=OWL,
            raised_by=("owl", "hawk"),
        ),
        # 11 lands: filed by hand
        finding(11, LineAnchor(path=CAFE, line=6), origin=HAND, label="suggestion"),
    )


LANDED_LINES = (1, 2, 3, 4, 10, 11)
"""Ids of :func:`messy_findings` whose LINE anchors land on :data:`MESSY_DIFF`."""


def messy_report(**fields: object) -> CouncilReport:
    """The messy findings in a report, landed on the messy diff."""
    return land(report(*messy_findings(), **fields), messy_change())


def many_findings(count: int) -> tuple[Finding, ...]:
    """``count`` findings over every severity, label and anchor kind, hawk and owl alike."""
    severities: tuple[Sev, ...] = ("critical", "medium", "minor", None)
    out: list[Finding] = []
    for index in range(count):
        ident = index + 1
        kind = index % 5
        anchor: Anchor
        if kind == 0:
            anchor = ChangeAnchor()
        elif kind == 1:
            anchor = FileAnchor(path=f"pkg/mod {index % 97}.py")
        else:
            anchor = LineAnchor(path=CAFE, line=index % 500 + 2, start_line=index % 500 + 1)
        out.append(
            finding(
                ident,
                anchor,
                severity=severities[index % 4],
                subject=f"claim number {ident}",
                discussion="Because." if index % 2 else "",
                origin=HAWK if index % 3 else OWL,
            )
        )
    return tuple(out)


# -- control and bidirectional characters ------------------------------------------------

HOSTILE = "\x1b[31m\u202e\u2066\x00\x9b"
"""Escape (an SGR sequence), right-to-left override, left-to-right isolate, NUL, and
the C1 control-sequence introducer."""

ESCAPED = ("\\x1b", "\\u202e", "\\u2066", "\\x00", "\\x9b")
"""How :data:`HOSTILE`'s characters read once escaped."""

EXTRA = "\u200e\u200f\u061c\u2028\u2029\x7f\r\x85"
"""More invisible and bidirectional controls, written into the discussion as well."""

RAW = ("\x1b", "\u202e", "\u2066", "\x00", "\x9b", *EXTRA)
"""Characters no output may hold raw: the controls of :data:`HOSTILE` and :data:`EXTRA`."""

CONTROLS_PATH = "ev\x1bil\u202e\u2066\x9b.py"
"""A file of the change whose name holds escape, override, isolate and CSI (git allows
them; NUL it does not)."""

CONTROLS_DIFF = (
    'diff --git "a/ev\\033il\\342\\200\\256\\342\\201\\246\\302\\233.py" '
    '"b/ev\\033il\\342\\200\\256\\342\\201\\246\\302\\233.py"\n'
    "index 7d4290a..8e6ee4c 100644\n"
    '--- "a/ev\\033il\\342\\200\\256\\342\\201\\246\\302\\233.py"\n'
    '+++ "b/ev\\033il\\342\\200\\256\\342\\201\\246\\302\\233.py"\n'
    "@@ -1 +1,2 @@\n"
    "-x = 1\n"
    "+x = 2\n"
    "+password = 'hunter2'\n"
)
"""``git diff`` of :data:`CONTROLS_PATH`, its name quoted as git writes it."""

ADDRESSES = {
    ("comments", "*", "path"),
    ("output", "annotations", "*", "path"),
    ("discussions", "*", "position", "old_path"),
    ("discussions", "*", "position", "new_path"),
    ("*", "location", "path"),
    ("runs", "*", "results", "*", "properties", "path"),
}
"""Where a forge JSON file names a file for the forge to find (exact, not shown as our
text): the only strings that keep the characters, as JSON escapes."""


def _strings(value: object, at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string in a decoded JSON value with where it is (``*`` for a list item)."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield at, key
            yield from _strings(item, (*at, key))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, (*at, "*"))


def forge_strings(text: str) -> tuple[list[str], set[str]]:
    """The strings of a forge JSON file: those shown (every one but an address), and the
    addresses (:data:`ADDRESSES`)."""
    shown: list[str] = []
    addresses: set[str] = set()
    for at, value in _strings(json.loads(text)):
        where = any(
            len(at) == len(p) and all(q in ("*", a) for q, a in zip(p, at, strict=True))
            for p in ADDRESSES
        )
        (addresses.add(value) if where else shown.append(value))
    return shown, addresses
