"""The public surface of ``council`` is chosen on purpose: every name exported exists and
is documented, and nothing private leaks into ``__all__``."""

from __future__ import annotations

import council


def test_all_exports_exist_and_are_documented() -> None:
    """Each name in council.__all__ is importable, public, and has a docstring."""
    for name in council.__all__:
        member = getattr(council, name)
        assert not name.startswith("_")
        assert (getattr(member, "__doc__", None) or "").strip(), name


def test_exports_are_sorted_and_unique() -> None:
    """__all__ is sorted and has no duplicates, so a change to it reads as a diff."""
    assert list(council.__all__) == sorted(set(council.__all__))
