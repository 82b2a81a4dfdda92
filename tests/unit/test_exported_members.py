"""The public surface of ``council`` is chosen on purpose: every name exported exists and
is documented, and nothing private leaks into ``__all__``."""

from __future__ import annotations

import subprocess
import sys

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


def test_importing_council_loads_no_model() -> None:
    """``import council`` (or one small domain module) loads neither pydantic nor the
    models: each exported name is imported on first use."""
    code = "import sys, council, council.model.gate_choices\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "pydantic" not in loaded and "council.model.findings" not in loaded


def test_council_harvest_stays_the_function() -> None:
    """The subpackage ``council.harvest`` imported does not shadow the exported function."""
    import council.harvest.answer

    assert callable(council.harvest)
    assert council.harvest is sys.modules["council.harvest"].harvest
