"""What is skipped by default and why, and which files fit a hard cap
(:mod:`council.change.skipping`), and a coverage plan's unseen files
(:mod:`council.model.coverage`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from council.change.skipping import (
    SkipPolicy,
    binary_unknown,
    minified_by_lines,
    skip_kind,
    within_cap,
)
from council.model.coverage import Coverage, SkippedFile, heard_coverage


def test_well_known_kinds_are_named_with_their_rule() -> None:
    assert skip_kind("web/yarn.lock") == ("lock", "lock file")
    assert skip_kind("a/b.min.css") == ("minified", "minified (*.min.css)")
    assert skip_kind("x/vendor/y/z.go") == ("vendored", "vendored (**/vendor/**)")
    assert skip_kind("api/x_pb2.py") == ("generated", "generated (*_pb2.py)")
    assert skip_kind("src/vendors.py") is None
    assert skip_kind("src/app.py") is None


def test_the_base_attributes_mark_and_unmark() -> None:
    """``linguist-generated`` set marks any path; ``=false`` takes a pattern back."""
    assert skip_kind("src/app.py", {"linguist-generated": "set"}) == (
        "generated",
        "generated (.gitattributes linguist-generated)",
    )
    assert skip_kind("vendor/a.go", {"linguist-vendored": "unset"}) is None


def test_the_roster_sends_kinds_and_paths_anyway() -> None:
    policy = SkipPolicy(review_kinds=("lock",), review_anyway=("dist/**",))
    assert skip_kind("Cargo.lock", policy=policy) is None
    assert skip_kind("dist/app.min.js", policy=policy) is None
    assert skip_kind("web/app.min.js", policy=policy) is not None


def test_a_huge_line_marks_a_script_or_stylesheet_minified() -> None:
    assert (
        minified_by_lines("a.js", "+" + "x" * 6000 + "\n") == "minified (a line of 6001 characters)"
    )
    assert minified_by_lines("web/A.CSS", "+" + "x" * 6000) is not None
    assert minified_by_lines("a.js", "+short\n") is None
    assert (
        minified_by_lines("a.js", "+" + "x" * 6000, SkipPolicy(review_kinds=("minified",))) is None
    )


@settings(max_examples=200, deadline=None)
@given(
    stem=st.text(alphabet="abcdefghij_/.", min_size=1, max_size=12),  # no "s": never .js
    suffix=st.sampled_from(["py", "sh", "rb", "go", "json", "yml", "html", "svg", "txt", ""]),
    length=st.integers(min_value=0, max_value=20_000),
)
def test_a_long_line_never_skips_a_file_of_another_kind(
    stem: str, suffix: str, length: int
) -> None:
    """Whatever its length, a line skips no file but a script or stylesheet: the change
    cannot make its own code skipped by writing one long line."""
    path = f"{stem}.{suffix}" if suffix else stem
    assert minified_by_lines(path, "+" + "x" * length + "\n") is None


def test_binary_is_a_skip_only_for_a_known_binary_kind() -> None:
    """A PNG, a font, an archive, a shared object are binary kinds (any case); a script
    or source file git shows as binary is not."""
    for path in ("img/logo.png", "LOGO.PNG", "f/a.woff2", "dist/x.tar", "lib/a.so", "a.pyc"):
        assert binary_unknown(path) is None, path
    for path in ("deploy.sh", "app.py", "Makefile", "x.json", "a.pkl", "png"):
        assert binary_unknown(path) is not None, path


def test_source_fits_before_tests_and_docs() -> None:
    sizes = [("README.md", 10), ("tests/test_a.py", 10), ("src/a.py", 10)]
    assert within_cap(sizes, 20) == (["tests/test_a.py", "src/a.py"], ["README.md"])


@settings(deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=100), max_size=12), st.integers(0, 300))
def test_within_cap_keeps_under_the_cap_and_leaves_out_only_what_cannot_fit(
    weights: list[int], cap: int
) -> None:
    """Every file is kept or left out, once, in diff order; the kept ones sum to at most
    the cap; and no file left out would still fit in the room that remains."""
    sizes = [(f"f{i}.py", w) for i, w in enumerate(weights)]
    kept, left = within_cap(sizes, cap)
    assert sorted(kept + left, key=lambda p: int(p[1:-3])) == [p for p, _ in sizes]
    assert kept == [p for p, _ in sizes if p in kept]
    weight = dict(sizes)
    room = cap - sum(weight[p] for p in kept)
    assert room >= 0
    assert all(weight[p] > room for p in left)


def test_unseen_files_are_those_cut_and_those_no_required_reviewer_saw() -> None:
    cut = SkippedFile(path="big.sql", reason="file-cap", why="over the per-file cap")
    plan = Coverage(meant=("a.py",), unreviewed=(cut,))
    assert plan.unseen() == ("big.sql",)
    heard = heard_coverage(plan, [("m", "openai", False, False), ("s", "sarif", True, False)])
    assert [r.id for r in heard.reviewers] == ["m"]
    assert heard.unseen() == ("big.sql", "a.py")
    optional = heard_coverage(plan, [("m", "openai", False, True)])
    assert optional.unseen() == ("big.sql",)
    seen = heard_coverage(plan, [("m", "openai", False, False), ("n", "command", True, False)])
    assert seen.unseen() == ("big.sql",)
