"""Slicing a change under a context budget (council.slicing): every line of every hunk is
shown in exactly one slice or named as skipped, no slice is over the budget, the lists
of other slices are never diff, a budget too small for the instructions is refused."""

from __future__ import annotations

import re
import tracemalloc
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.diff import Change, parse_diff
from council.errors import ContextTooSmall, RosterError
from council.model.participant import Participant
from council.roster import parse_roster
from council.slicing.plan import plan_prompts, usable
from council.slicing.tokens import context_budget, estimate, family, ratio

_GIT_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)
_CHANGE_FENCE = re.compile(r"^(`{3,})diff\n(.*)^\1$", re.MULTILINE | re.DOTALL)


def _file(path: str, hunks: list[list[str]]) -> str:
    """A modified file's diff: each hunk is a list of added lines, 5 lines apart."""
    out = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
    at = 1
    for lines in hunks:
        out += f"@@ -{at},1 +{at},{len(lines) + 1} @@ def f():\n ctx\n"
        out += "".join(f"+{line}\n" for line in lines)
        at += 10
    return out


def _cmd(budget: int, pid: str = "alpha") -> Participant:
    return Participant(id=pid, backend="command", context_tokens=budget, options={"program": "x"})


def _diff_of(prompt: str) -> str:
    """The fenced diff of a prompt (what is shown as diff)."""
    found = _CHANGE_FENCE.search(prompt)
    assert found is not None
    return found.group(2)


def _added_lines(diff: str) -> Counter[str]:
    return Counter(
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    )


paths = st.from_regex(r"[a-c]{1,2}(/[a-c]{1,2}){0,2}/[a-z]{1,6}\.py", fullmatch=True)
hunk = st.lists(st.from_regex(r"[a-z0-9 =()]{0,120}", fullmatch=True), min_size=1, max_size=40)
files = st.dictionaries(paths, st.lists(hunk, min_size=1, max_size=8), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(files=files, budget=st.integers(min_value=4500, max_value=30_000))
def test_every_added_line_is_shown_once_or_skipped_and_every_slice_fits(
    files: dict[str, list[list[str]]], budget: int
) -> None:
    """Property: each added line of the change appears in exactly one slice's fenced diff
    (tagged lines make them unique), every file is shown by some slice (by git's own
    header), and each slice's prompt is within the budget less the answer and margin."""
    tagged = {
        path: [
            [f"{path}:{h}:{n}:{line}" for n, line in enumerate(lines)] for h, lines in enumerate(hs)
        ]
        for path, hs in files.items()
    }
    change = parse_diff("".join(_file(path, hs) for path, hs in tagged.items()))
    p = _cmd(budget)
    plan = plan_prompts([p], change, {}, [])
    diffs = [_diff_of(prompt.text) for prompt in plan.prompts.values()]
    shown = Counter[str]()
    for diff in diffs:
        shown.update(_added_lines(diff))
    wanted = Counter(line for hs in tagged.values() for lines in hs for line in lines)
    assert not plan.notes  # no single line here is over any budget
    assert shown == wanted
    assert {path for d in diffs for path in _GIT_FILE.findall(d)} == set(files)
    for prompt in plan.prompts.values():
        assert estimate(prompt.text, ratio(p)) <= usable(p, budget)
    assert len(plan.prompts) == plan.slices.get("alpha", 1)


def test_a_file_over_the_budget_is_split_by_hunks_with_gits_headers() -> None:
    """One file of 60 hunks over the budget: several slices, each showing it under its own
    ``diff --git`` / ``+++ b/`` header and whole hunks, all hunks covered once."""
    hunks = [[f"line {h}.{n} " + "x" * 60 for n in range(12)] for h in range(60)]
    change = parse_diff(_file("src/big.py", hunks))
    plan = plan_prompts([_cmd(6000)], change, {}, [])
    assert plan.slices["alpha"] >= 3
    seen: Counter[str] = Counter()
    for prompt in plan.prompts.values():
        diff = _diff_of(prompt.text)
        assert diff.startswith(
            "diff --git a/src/big.py b/src/big.py\n--- a/src/big.py\n+++ b/src/big.py\n@@ "
        )
        seen.update(
            re.findall(r"^@@ -\d+,1 \+\d+,13 @@", diff, re.MULTILINE) and _added_lines(diff)
        )
        assert "part " in prompt.text  # told it is shown in part
    assert seen == Counter(f"line {h}.{n} " + "x" * 60 for h in range(60) for n in range(12))


def test_one_enormous_line_is_skipped_with_a_reason_never_sent_past_the_budget() -> None:
    """A minified bundle: one 20 MB added line beside ordinary ones. No prompt holds it,
    the round's notes name it with its size, the other lines of its hunk are shown, and
    planning holds at most a few copies of the change in memory."""
    huge = "a" * 20_000_000
    text = (
        "diff --git a/dist/app.min.js b/dist/app.min.js\n--- a/dist/app.min.js\n"
        "+++ b/dist/app.min.js\n@@ -1,1 +1,3 @@\n-old\n+before\n+" + huge + "\n+after\n"
    )
    change = parse_diff(text)
    p = _cmd(8000)
    tracemalloc.start()
    plan = plan_prompts([p], change, {}, [])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5 * len(text)
    assert all(len(prompt.text) < 40_000 for prompt in plan.prompts.values())
    (note,) = plan.notes
    assert '"dist/app.min.js"' in note and "20000000 characters" in note
    diffs = "".join(_diff_of(prompt.text) for prompt in plan.prompts.values())
    assert "+before\n" in diffs and "+after\n" in diffs and "-old\n" in diffs


def test_the_lists_of_other_slices_are_never_diff() -> None:
    """A path that looks like a diff header is listed JSON-quoted after "- ", so no line of
    a slice's section starts like git's headers."""
    files = {
        f"d{d}/m{i}.py": [[f"v{i} = {n}" + " " * 80 for n in range(30)]]
        for d in range(4)
        for i in range(8)
    }
    change = parse_diff("".join(_file(path, hs) for path, hs in files.items()))
    plan = plan_prompts([_cmd(5000)], change, {}, [])
    assert plan.slices["alpha"] > 2
    for prompt in plan.prompts.values():
        section = prompt.text.split("## This slice", 1)[1].split("## The change", 1)[0]
        assert "The other slices hold:" in section
        assert not re.search(r"^(diff --git|\+\+\+ |--- |@@ )", section, re.MULTILINE)
        assert '- "d' in section


def test_files_of_one_directory_travel_together() -> None:
    """Directories that fit a slice are never split across two."""
    files = {
        f"dir{d}/m{i}.py": [[f"v{i} = {n}" + " " * 40 for n in range(20)]]
        for d in range(6)
        for i in range(4)
    }
    change = parse_diff("".join(_file(path, hs) for path, hs in files.items()))
    plan = plan_prompts([_cmd(7000)], change, {}, [])
    assert plan.slices["alpha"] > 1
    where: dict[str, set[str]] = {}
    for pid, shown in plan.shown.items():
        for path in shown:
            where.setdefault(path.split("/")[0], set()).add(pid)
    assert all(len(units) == 1 for units in where.values()), where


def test_many_tiny_files_plan_in_bounded_time() -> None:
    """5,000 one-line files (the 100,000 are bench/large.py's): every file in exactly one
    slice; the plan's time is what the bench measures, here only that it ends."""
    text = "".join(
        f"diff --git a/t{i % 50}/f{i}.txt b/t{i % 50}/f{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/t{i % 50}/f{i}.txt\n@@ -0,0 +1 @@\n+{i}\n"
        for i in range(5000)
    )
    change = parse_diff(text)
    plan = plan_prompts([_cmd(20_000)], change, {}, [])
    shown = Counter(path for paths in plan.shown.values() for path in paths)
    assert shown == Counter(dict.fromkeys(change.paths, 1))
    assert plan.slices["alpha"] > 1


def test_a_budget_smaller_than_the_instructions_is_refused_naming_what_it_needs() -> None:
    change = parse_diff(_file("a.py", [["x = 1"] * 400]))
    with pytest.raises(ContextTooSmall) as refused:
        plan_prompts([_cmd(1500, "tiny")], change, {}, [])
    assert refused.value.participant == "tiny" and refused.value.budget == 1500
    assert refused.value.needs > 1500
    assert "context_tokens = " in str(refused.value) and "tiny" in str(refused.value)
    # the budget it names is enough
    plan_prompts([_cmd(refused.value.needs, "tiny")], change, {}, [])


def test_a_change_that_fits_is_sent_whole_under_the_participants_own_id() -> None:
    change = parse_diff(_file("a.py", [["x = 1"]]))
    plan = plan_prompts([_cmd(50_000)], change, {}, [])
    assert list(plan.prompts) == ["alpha"] and not plan.slices
    assert "## This slice" not in plan.prompts["alpha"].text


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4o", 128_000),
        ("claude-sonnet-4-5", 200_000),
        ("o3", 200_000),
        ("llama3:8b", 128_000),
    ],
)
def test_model_budgets_default_by_family(model: str, window: int) -> None:
    p = Participant(id="m", backend="openai", model=model)
    assert context_budget(p) == window
    assert family(model).context_tokens == window


def test_programs_have_no_budget_unless_set_and_analyzers_never() -> None:
    assert context_budget(Participant(id="c", backend="command", options={"program": "x"})) is None
    assert context_budget(_cmd(9000)) == 9000
    sarif = Participant(id="s", backend="sarif", options={"program": "x"})
    assert context_budget(sarif) is None


def test_the_estimate_counts_utf8_bytes() -> None:
    assert estimate("abc" * 10, 3.0) == 10
    assert estimate("é" * 3, 3.0) == 2  # 6 bytes
    assert Change().files == ()


@pytest.mark.parametrize("backend", ["sarif", "replay"])
def test_the_roster_refuses_a_budget_on_what_is_not_sent_the_change(backend: str) -> None:
    extra = 'program = "x"' if backend == "sarif" else 'answer = "a.json"'
    text = f'[[reviewers]]\nid = "a"\nbackend = "{backend}"\n{extra}\ncontext_tokens = 9000\n'
    with pytest.raises(RosterError) as refused:
        parse_roster(text, "council.toml")
    assert refused.value.path == "reviewers[0].context_tokens"


def test_the_roster_reads_context_tokens() -> None:
    text = '[[reviewers]]\nid = "m"\nbackend = "openai"\nmodel = "gpt-4o"\ncontext_tokens = 32000\n'
    assert parse_roster(text, "council.toml").reviewers[0].context_tokens == 32_000
