"""Where a reviewer program named without a directory (``program = "ruff"``) is looked for.

First in the ``bin/`` beside the interpreter council runs under, then on ``PATH``. Why:
``pip install 'council[analyzers]'`` puts ruff and bandit into the virtualenv's ``bin/``
next to ``council`` itself, and a user who calls ``.venv/bin/council`` without activating
the virtualenv has that folder nowhere on PATH: the example roster's analyzers must still
be found, or a fresh install fails two of its three reviewers. Relative PATH entries are
dropped: they would be resolved in the working directory, which is the change's tree.

Source: docs/architecture.md "Layers" (reviewers).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def interpreter_bin() -> str:
    """The directory of the running interpreter (a virtualenv's ``bin/``)."""
    return str(Path(sys.executable).parent)


def search_path(path: str | None) -> str:
    """The search path for programs: :func:`interpreter_bin`, then the absolute entries
    of ``path`` (``os.defpath`` when None), without repeats."""
    entries = [interpreter_bin(), *(path if path is not None else os.defpath).split(os.pathsep)]
    kept: list[str] = []
    for entry in entries:
        if entry and os.path.isabs(entry) and entry not in kept:
            kept.append(entry)
    return os.pathsep.join(kept)


def find_program(name: str, path: str | None) -> str | None:
    """The executable ``name`` resolves to on :func:`search_path`, or None."""
    return shutil.which(name, path=search_path(path))
