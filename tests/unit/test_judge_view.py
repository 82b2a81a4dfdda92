"""The judge's view under its budget against hostile anchors (council.slicing.pointed):
the most severe finding's code is shown first, each finding has a fair share, and a
range's numbers are never walked, however wide. Source: docs/architecture.md "Slices"."""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from council.change.diff import parse_diff
from council.model.findings import FileAnchor, Finding, LineAnchor
from council.model.participant import Participant
from council.roster.prompt import build_prompt
from council.slicing.judged import judge_prompt
from council.slicing.plan import usable
from council.slicing.pointed import pointed_at
from council.slicing.tokens import estimate, ratio


def _new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def _judge(budget: int) -> Participant:
    return Participant(id="arbiter", role="judge", backend="command", context_tokens=budget)


FILLER = [f"VALUE_{i} = {i}  # padding padding padding padding" for i in range(300)]
BUG = ["import os", "def run(cmd):", "    os.system(cmd)  # THE_REAL_BUG"]
PADDED = parse_diff(_new_file("aaa.py", FILLER) + _new_file("zzz.py", BUG))
REAL = Finding(
    anchor=LineAnchor(path="zzz.py", line=3),
    label="issue",
    subject="Shell injection in run",
    severity="critical",
    raised_by=("hawk",),
)


def _wide(line: int, start: int, severity: str = "minor") -> Finding:
    return Finding(
        anchor=LineAnchor(path="aaa.py", line=line, start_line=start),
        label="nitpick",
        subject="Padding values",
        severity=severity,  # type: ignore[arg-type]
        raised_by=("evil",),
    )


def test_a_minor_finding_over_a_whole_file_does_not_hide_a_critical_findings_code() -> None:
    """The hostile tester's t4: a minor finding on aaa.py lines 1-300, filed beside the
    critical one on zzz.py, took the whole room and the critical was judged from its
    words alone."""
    for filed in ([REAL], [REAL, _wide(300, 1)], [_wide(300, 1), REAL]):
        prompt, note = judge_prompt(_judge(6000), PADDED, filed)
        assert note is not None and note in prompt
        assert "THE_REAL_BUG" in prompt
        assert estimate(prompt, ratio(_judge(6000))) <= usable(_judge(6000), 6000)


def test_an_equally_severe_finding_on_a_hunk_as_big_as_the_room_leaves_the_other_its_share() -> (
    None
):
    filed = [_wide(300, 1, "critical"), REAL]
    prompt, note = judge_prompt(_judge(6000), PADDED, filed)
    assert note is not None
    assert "THE_REAL_BUG" in prompt
    assert "VALUE_299 " in prompt  # the line the wide finding is on, in its share


def test_a_range_of_three_hundred_million_lines_is_never_walked() -> None:
    """The hostile tester's r6: a reviewer's range of lines 1 to 300,000,000 over a change
    larger than the judge's budget made the judge (and settling) build a set of every
    number: MemoryError. Its view is now computed from the change's hunks alone."""
    for line in (300_000_000, 10**18):
        filed = [_wide(line, 1), REAL]
        tracemalloc.start()
        try:
            prompt, note = judge_prompt(_judge(6000), PADDED, filed)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert note is not None and "THE_REAL_BUG" in prompt
        assert "VALUE_0 " in prompt  # the hunk holding the range's first line
        assert peak < 50 * len(PADDED.text) + 4_000_000


def test_an_old_side_anchor_points_at_the_removed_code() -> None:
    gone = "".join(f"-old line {i} {'y' * 60}\n" for i in range(200))
    text = (
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\nindex 1111111..0000000\n"
        f"--- a/gone.py\n+++ /dev/null\n@@ -1,200 +0,0 @@\n{gone}"
    ) + _new_file("aaa.py", FILLER)
    change = parse_diff(text)
    filed = [
        _wide(300, 1),
        Finding(
            anchor=LineAnchor(path="gone.py", side="old", line=150),
            label="issue",
            subject="A check removed",
            severity="critical",
        ),
    ]
    prompt, note = judge_prompt(_judge(3000), change, filed)
    assert note is not None
    assert "old line 149 " in prompt


# A change of files of hunks; hunk h of a file covers new lines 20h+1 .. 20h+13, its
# added line n (0..11) being new line 20h+2+n.


def _file(path: str, hunks: int) -> str:
    out = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
    for h in range(hunks):
        at = 20 * h + 1
        out += f"@@ -{at},1 +{at},13 @@\n ctx\n"
        out += "".join(f"+{path} hunk {h} line {n} {'x' * 50}\n" for n in range(12))
    return out


PATHS = [f"m{i}.py" for i in range(5)]
HUGE = st.integers(min_value=1, max_value=10**30)
ANCHORS = st.one_of(
    st.builds(
        LineAnchor,
        path=st.sampled_from([*PATHS, "elsewhere.py"]),
        side=st.sampled_from(["new", "old"]),
        line=st.one_of(st.integers(1, 200), HUGE),
        start_line=st.one_of(st.none(), st.integers(1, 200), HUGE),
    ),
    st.builds(FileAnchor, path=st.sampled_from(PATHS)),
)
OTHERS = st.lists(
    st.builds(
        Finding,
        anchor=ANCHORS,
        label=st.just("issue"),
        subject=st.just("other"),
        severity=st.sampled_from([None, "minor", "medium"]),
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hunks=st.lists(st.integers(1, 8), min_size=len(PATHS), max_size=len(PATHS)),
    others=OTHERS,
    at=st.tuples(st.integers(0, len(PATHS) - 1), st.integers(0, 7), st.integers(0, 11)),
    first=st.integers(0, 10),
    budget=st.integers(1500, 9000),
)
def test_whatever_the_anchors_the_view_fits_and_a_gating_findings_hunk_is_shown(
    hunks: list[int],
    others: list[Finding],
    at: tuple[int, int, int],
    first: int,
    budget: int,
) -> None:
    change = parse_diff("".join(_file(p, n) for p, n in zip(PATHS, hunks, strict=True)))
    file, hunk, n = at[0], min(at[1], hunks[at[0]] - 1), at[2]
    gating = Finding(
        anchor=LineAnchor(path=PATHS[file], line=20 * hunk + 2 + n),
        label="issue",
        subject="the gating one",
        severity="critical",
    )
    filed = [*others[:first], gating, *others[first:]]
    judge = _judge(budget)
    bpt = ratio(judge)
    prompt, note = judge_prompt(judge, change, filed)
    if note is None:  # the whole change fits
        assert f"{PATHS[file]} hunk {hunk} line {n} " in prompt
        return
    # the room judge_prompt had beside the instructions, the findings and its note
    bare = build_prompt(judge, parse_diff(""), "", filed=filed, notes=[note])
    room = usable(judge, budget) - estimate(bare, bpt) - 1
    tracemalloc.start()
    try:
        pieces = pointed_at(change, filed, room, bpt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(p.cost for p in pieces) <= max(room, 0)
    assert peak < 50 * len(change.text) + 4_000_000
    if room >= 0:
        assert estimate(prompt, bpt) <= usable(judge, budget)
    hunk_alone = _file("h.py", 1)  # as costly as any one hunk of the change
    if room >= estimate(hunk_alone, bpt) + 64:
        assert f"{PATHS[file]} hunk {hunk} line {n} " in prompt
