"""The ``council`` command line (:mod:`workers.cli.group`), imported when first used.

``from workers.cli import main`` gives the click group. The package itself imports
nothing, so ``python -m workers.cli`` reaches :func:`workers.entry.main` (which makes
Ctrl-C during start-up quiet) before click or any command's module is loaded.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workers.cli.group import main as main


def __getattr__(name: str) -> object:
    """``main``, the click group, from :mod:`workers.cli.group` on first use."""
    if name == "main":
        return importlib.import_module("workers.cli.group").main
    raise AttributeError(f"module 'workers.cli' has no attribute {name!r}")


__all__ = ["main"]
