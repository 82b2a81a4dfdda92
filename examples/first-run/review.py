#!/usr/bin/env python3
"""The README's first run: a council reviews a small sample change, with no key.

It builds a throwaway git repository from the sample beside this file (the files of
``before/`` on ``main``, then ``change.patch`` applied on ``feature``, with fixed authors
and dates, so every run reviews the same commits) and runs::

    council review --repo REPO --base main --head feature --roster council.toml

with the council of ``council.toml``: ruff and bandit on the change, and three model
reviewers whose answers were recorded (``answers/``). The Markdown report goes to stdout,
progress to stderr, and this script exits with the review's exit code (1: the gate
tripped on a critical finding, as it would fail a CI job). The repository and the
session state live in a temporary folder, removed afterwards: nothing is left in your
home nor in ``~/.cache/council``.

Options: ``--models`` uses ``council-models.toml`` (the same council with live models:
``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` must be set); ``--keep`` keeps the sample
repository and prints where it is; anything after ``--`` goes to ``council review``
(``-- --format sarif --output out``). Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sample import sample_repository

HERE = Path(__file__).resolve().parent


def council_program() -> list[str]:
    """The ``council`` beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "council"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("council")
    if found is None:
        sys.exit(
            "first-run: council is not installed for this Python: run "
            "`.venv/bin/pip install -e '.[analyzers]'` in the clone, then "
            "`.venv/bin/python examples/first-run/review.py`"
        )
    return [found]


def main(argv: list[str]) -> int:
    """Build the sample, review it, return the review's exit code."""
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    if "-h" in own or "--help" in own:
        print(__doc__)
        return 0
    unknown = [a for a in own if a not in ("--models", "--keep")]
    if unknown:
        print(f"first-run: unknown option {unknown[0]!r} (--help lists them)", file=sys.stderr)
        return 2  # a usage error, as council's own (1 is the gate's)
    roster = HERE / ("council-models.toml" if "--models" in own else "council.toml")
    work = Path(tempfile.mkdtemp(prefix="council-first-run-"))
    try:
        repo = work / "shop"
        sample_repository(repo)
        command = [
            *council_program(),
            "review",
            "--repo",
            str(repo),
            "--base",
            "main",
            "--head",
            "feature",
            "--roster",
            str(roster),
            "--session",
            "first-run",
            "--state",
            str(work / "state.json"),
            *extra,
        ]
        shown = " ".join(["council", *command[1:]])
        print(f"first-run: {shown}", file=sys.stderr, flush=True)
        return subprocess.run(command).returncode
    finally:
        if "--keep" in own:
            print(f"first-run: the sample repository is kept in {work / 'shop'}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
