"""The code hash that names an occurrence (council.model.occurrence): it follows code that
moves and survives whitespace changes; other code, or identical code elsewhere, is another
occurrence; every input has a defined value, the same on every run."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from council.model.findings import FileAnchor, LineAnchor, Member
from council.model.fingerprint import fingerprint
from council.model.occurrence import FileCode, code_hash, file_lines, normalized, stamp
from tests.forge_cases import finding

NAMES = st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=6, unique=True)
"""Distinct function names: one file is a sequence of such functions."""

STATEMENTS = st.lists(
    st.sampled_from(
        [
            "x = 1",
            "return subprocess.call(cmd, shell=True)",
            'log.info("ran %s", cmd)',
            "if ok:",
            "y = x + 1",
            "pass",
        ]
    ),
    min_size=1,
    max_size=5,
)


def function(name: str, body: list[str]) -> list[str]:
    """A top-level function: its header and its body, one level in."""
    return [f"def {name}(cmd):", *(f"    {line}" for line in body), ""]


@settings(max_examples=60, deadline=None)
@given(
    names=NAMES,
    bodies=st.lists(STATEMENTS, min_size=6, max_size=6),
    order=st.randoms(use_true_random=False),
    data=st.data(),
)
def test_moving_whole_blocks_keeps_every_hash(
    names: list[str], bodies: list[list[str]], order: random.Random, data: st.DataObject
) -> None:
    """Functions shuffled in their file (lines moved, with their block): each line of
    each function keeps its code hash."""
    blocks = {name: function(name, bodies[at]) for at, name in enumerate(names)}
    before = [line for name in names for line in blocks[name]]
    shuffled = list(names)
    order.shuffle(shuffled)
    after = [line for name in shuffled for line in blocks[name]]
    name = data.draw(st.sampled_from(names))
    offset = data.draw(st.integers(1, len(blocks[name]) - 1))
    at_before = sum(len(blocks[n]) for n in names[: names.index(name)]) + offset
    at_after = sum(len(blocks[n]) for n in shuffled[: shuffled.index(name)]) + offset
    assert code_hash(before, at_before, at_before) == code_hash(after, at_after, at_after)


@settings(max_examples=60, deadline=None)
@given(
    names=NAMES,
    bodies=st.lists(STATEMENTS, min_size=6, max_size=6),
    spaces=st.integers(1, 4),
    data=st.data(),
)
def test_whitespace_changes_keep_the_hash(
    names: list[str], bodies: list[list[str]], spaces: int, data: st.DataObject
) -> None:
    """Reindented (by another width, or tabs), spaced out inside and with trailing
    blanks, every line keeps its code hash."""
    plain = [line for at, name in enumerate(names) for line in function(name, bodies[at])]

    def loosen(line: str) -> str:
        depth = len(line) - len(line.lstrip())
        body = line.strip().replace("(", " ( ").replace("=", " = ").replace(",", " ,  ")
        return "\t" * (depth // 4) + " " * spaces * (depth % 4) + body + " \t"

    loose = [loosen(line) for line in plain]
    first = data.draw(st.integers(1, len(plain)))
    last = data.draw(st.integers(first, min(len(plain), first + 3)))
    assert code_hash(plain, first, last) == code_hash(loose, first, last)


def test_other_code_and_identical_code_elsewhere_are_other_occurrences() -> None:
    """Another line, the same line under another header, and the same line twice under
    one header (its index) each have a hash of their own."""
    lines = [
        "def run(cmd):",
        "    return subprocess.call(cmd, shell=True)",
        "",
        "def grep(pattern):",
        "    subprocess.call('grep ' + pattern, shell=True)",
        "    return subprocess.call(cmd, shell=True)",
        "    return subprocess.call(cmd, shell=True)",
    ]
    codes = [code_hash(lines, n, n) for n in (2, 5, 6, 7)]
    assert len(set(codes)) == 4
    assert [c.split(":")[1] for c in codes if c is not None] == ["1", "1", "1", "2"]


def test_a_line_re_added_verbatim_elsewhere_is_another_occurrence() -> None:
    """The decision the issue asks for: a flagged line deleted and added again, verbatim,
    in another function is another occurrence; moved with its function it is the same."""
    call = "    subprocess.call(CONSTANT, shell=True)"
    before = ["def backup():", call, "    return 0", "", "def report(name):", "    x = name"]
    elsewhere = ["def backup():", "    return 0", "", "def report(name):", call, "    x = name"]
    moved = ["def report(name):", "    x = name", "", "def backup():", call, "    return 0"]
    then = code_hash(before, 2, 2)
    assert code_hash(elsewhere, 5, 5) != then
    assert code_hash(moved, 5, 5) == then


def test_blank_lines_at_either_end_of_a_window_do_not_count() -> None:
    """An analyzer's range that reaches over a blank line names the same code."""
    lines = ["def run(cmd):", "    return subprocess.call(cmd, shell=True)", "", "", "x = 1"]
    assert code_hash(lines, 2, 4) == code_hash(lines, 2, 2)
    assert code_hash(lines, 1, 2) != code_hash(lines, 2, 2)
    assert code_hash(lines, 3, 4) is not None  # a window of blank lines still has a value


def test_windows_outside_the_file_have_none() -> None:
    """Line 0, a line past the end, or an empty file: no code to name."""
    lines = ["a = 1", "b = 2"]
    assert code_hash(lines, 0, 1) is None
    assert code_hash(lines, 2, 3) is None
    assert code_hash([], 1, 1) is None
    assert code_hash(lines, 2, 1) == code_hash(lines, 1, 2)


def test_five_hundred_identical_hits_are_five_hundred_occurrences() -> None:
    """The same rule on 500 identical lines of one file: 500 distinct hashes (indices
    1 to 500), the same on every run, read with one pass per key."""
    lines = ["import os", *["os.system(cmd)"] * 500]
    code = FileCode(lines)
    hashes = [code.code(n, n) for n in range(2, 502)]
    assert len(set(hashes)) == 500
    assert [h.split(":")[1] for h in hashes if h is not None] == [str(n) for n in range(1, 501)]
    assert hashes == [FileCode(lines).code(n, n) for n in range(2, 502)]


def test_whitespace_inside_a_string_is_meaning() -> None:
    """A hostile pull request turned an accepted ``rm -rf /tmp/cache`` into ``rm -rf /
    tmp/cache`` (it deletes /): whitespace inside a string literal is kept, so the two
    lines are two occurrences and the decision on the first does not cover the second;
    whitespace outside strings, and an escaped quote, still fold as before."""
    accepted = ['os.system("rm -rf /tmp/cache")']
    assert code_hash(accepted, 1, 1) != code_hash(['os.system("rm -rf / tmp/cache")'], 1, 1)
    assert code_hash(accepted, 1, 1) == code_hash(['os.system( "rm -rf /tmp/cache" )  '], 1, 1)
    assert normalized("f('a b', `c  d`)") == "f('a b',`c  d`)"
    assert normalized('s = "x \\" y" + z') == 's="x \\" y"+z'


def test_normalized_and_file_lines() -> None:
    """Whitespace of any kind goes outside strings; a final newline adds no line; CR is
    dropped."""
    assert normalized(" a =\tb \u00a0") == "a=b"
    assert file_lines("a\nb\n") == ["a", "b"]
    assert file_lines("") == []
    assert code_hash(["x = 1\r"], 1, 1) == code_hash(["x = 1"], 1, 1)


def test_stamp_names_the_code_of_each_telling() -> None:
    """Each new-side line anchor, its members' too, gets its code; an old-side anchor, a
    file anchor and a file the tree lacks are left without; a stale code is replaced."""
    tree = {"a.py": ["def run(cmd):", "    os.system(cmd)", "    return 0"]}
    line = LineAnchor(path="a.py", line=2, code="stale")
    member = Member(
        participant="m1", anchor=LineAnchor(path="a.py", line=3), label="issue", subject="s"
    )
    other = member.model_copy(update={"participant": "m2"})
    told = finding(1, line).model_copy(update={"members": (member, other)})
    old = finding(2, LineAnchor(path="a.py", line=2, side="old"))
    missing = finding(3, LineAnchor(path="gone.py", line=1))
    whole = finding(4, FileAnchor(path="a.py"))
    stamped = stamp([told, old, missing, whole], tree.get)
    first = stamped[0]
    assert isinstance(first.anchor, LineAnchor) and first.anchor.code == code_hash(
        tree["a.py"], 2, 2
    )
    assert first.members is not None
    assert [m.anchor.code for m in first.members if isinstance(m.anchor, LineAnchor)] == [
        code_hash(tree["a.py"], 3, 3)
    ] * 2
    assert stamped[1:] == [old, missing, whole]
    assert fingerprint(first) != fingerprint(told)
