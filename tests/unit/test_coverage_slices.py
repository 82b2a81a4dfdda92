"""Coverage of a reviewer sent in slices (council/model/coverage.py): it saw the paths of
the slices heard in full; a slice not heard leaves its paths failed, and a file no other
reviewer saw makes the round partial."""

from __future__ import annotations

from council.model.coverage import Coverage, heard_coverage

PLAN = Coverage(
    meant=("a/x.py", "a/y.py", "b/z.py"),
    units={"hawk@1": ("a/x.py", "a/y.py"), "hawk@2": ("b/z.py",)},
)


def test_a_reviewer_whose_every_slice_was_heard_saw_every_file() -> None:
    done = heard_coverage(
        PLAN, [("hawk", "openai", True, False)], {"hawk": [("hawk@1", True), ("hawk@2", True)]}
    )
    (line,) = done.reviewers
    assert (line.seen, line.failed, line.slices, line.slices_failed) == (PLAN.meant, (), 2, 0)
    assert done.unseen() == ()


def test_a_slice_not_heard_leaves_its_files_failed_and_unseen() -> None:
    done = heard_coverage(
        PLAN, [("hawk", "openai", False, False)], {"hawk": [("hawk@1", True), ("hawk@2", False)]}
    )
    (line,) = done.reviewers
    assert (line.seen, line.failed) == (("a/x.py", "a/y.py"), ("b/z.py",))
    assert (line.slices, line.slices_failed) == (2, 1)
    assert done.unseen() == ("b/z.py",)


def test_another_reviewer_that_saw_the_whole_change_covers_a_failed_slice() -> None:
    done = heard_coverage(
        PLAN,
        [("hawk", "openai", False, False), ("owl", "openai", True, False)],
        {"hawk": [("hawk@1", True), ("hawk@2", False)]},
    )
    assert done.unseen() == ()
    assert [r.id for r in done.reviewers] == ["hawk", "owl"]
