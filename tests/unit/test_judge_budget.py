"""The judge's prompt under its context budget (council.slicing.judged): a change over
it shows the hunks the filed findings point at first, then the rest of their files, never
past the budget, and says so in a note; one that fits, or a judge without a budget, gets
the whole change. Source: docs/architecture.md "Slices"."""

from __future__ import annotations

import re

from council.change.diff import parse_diff
from council.model.findings import FileAnchor, Finding, LineAnchor
from council.model.participant import Participant
from council.roster.prompt import build_prompt
from council.slicing.judged import judge_prompt
from council.slicing.plan import usable
from council.slicing.tokens import estimate, ratio

_GIT_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def _file(path: str, hunks: int, width: int = 60) -> str:
    """A modified file's diff: ``hunks`` hunks of 12 added lines, 20 lines apart (hunk h
    covers new lines 20h+1 .. 20h+13)."""
    out = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
    for h in range(hunks):
        at = 20 * h + 1
        out += f"@@ -{at},1 +{at},13 @@\n ctx\n"
        out += "".join(f"+{path} hunk {h} line {n} {'x' * width}\n" for n in range(12))
    return out


def _judge(budget: int | None) -> Participant:
    return Participant(
        id="owl", role="judge", backend="command", context_tokens=budget, options={"program": "x"}
    )


def _finding(path: str, line: int | None = None) -> Finding:
    anchor = LineAnchor(path=path, line=line) if line else FileAnchor(path=path)
    return Finding(anchor=anchor, label="issue", subject=f"wrong in {path}")


CHANGE = parse_diff("".join(_file(f"pkg{i % 4}/mod{i}.py", 6) for i in range(40)))


def test_a_change_over_the_judges_budget_shows_what_the_findings_point_at() -> None:
    filed = [_finding("pkg1/mod5.py", 45), _finding("pkg3/mod7.py")]
    judge = _judge(8000)
    prompt, note = judge_prompt(judge, CHANGE, filed)
    assert note is not None and note in prompt
    assert "40 files" in note and "of 40 files" in note and "8000 tokens" in note
    assert estimate(prompt, ratio(judge)) <= usable(judge, 8000)
    shown = set(_GIT_FILE.findall(prompt))
    assert shown and shown <= {"pkg1/mod5.py", "pkg3/mod7.py"}
    assert "pkg1/mod5.py hunk 2 line 0" in prompt  # new line 45 is in hunk 2 (41..53)
    for f in filed:
        assert f.subject in prompt


def test_the_anchored_hunk_is_shown_before_the_rest_of_its_file() -> None:
    """Room for about one hunk: it is the one the line anchor falls in, not the first."""
    judge = _judge(2600)
    bare = build_prompt(judge, parse_diff(""), "", filed=[_finding("pkg1/mod5.py", 105)])
    assert estimate(bare, ratio(judge)) < usable(judge, 2600)
    prompt, note = judge_prompt(judge, CHANGE, [_finding("pkg1/mod5.py", 105)])
    assert note is not None
    assert "pkg1/mod5.py hunk 5 line 0" in prompt
    assert "pkg1/mod5.py hunk 0 line 0" not in prompt
    assert estimate(prompt, ratio(judge)) <= usable(judge, 2600)


def test_a_change_that_fits_or_a_judge_without_a_budget_is_shown_whole() -> None:
    small = parse_diff(_file("a.py", 1))
    filed = [_finding("a.py", 3)]
    for judge, change in ((_judge(100_000), small), (_judge(None), CHANGE)):
        prompt, note = judge_prompt(judge, change, filed)
        assert note is None
        assert prompt == build_prompt(judge, change, change.text, filed=filed)


def test_findings_anchored_nowhere_in_the_change_show_no_diff_and_say_so() -> None:
    prompt, note = judge_prompt(_judge(8000), CHANGE, [_finding("elsewhere.py", 3)])
    assert note is not None and "0 of 40 files" in note
    assert _GIT_FILE.findall(prompt) == []
