"""The options several commands share, and the output files ``--format`` names.

Light to import (click and the standard library only), so a command's ``--help`` does
not load what its run needs: ``--repo``, ``--roster`` and ``--state`` (``council
review`` and ``council check``), ``--format``, ``--json`` and ``--output`` (``council
review`` and ``council consolidate``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

REPO_OPTION = click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="The git repository holding the change.",
)
"""``--repo``, for ``council review`` and ``council check``."""
ROSTER_OPTION = click.option(
    "--roster",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Roster TOML to use instead of council.toml in the BASE ref's tree.",
)
"""``--roster``, for ``council review`` and ``council check``."""
STATE_OPTION = click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Embedded mode: the file sessions are kept in (default: the cache directory).",
)
"""``--state``, for ``council review`` and ``council check``."""

FILE_NAMES: dict[str, str] = {
    "markdown": "council.md",
    "json": "council.json",
    "sarif": "council.sarif",
    "github-review": "github-review.json",
    "github-checks": "github-checks.json",
    "gitlab-codequality": "gl-code-quality-report.json",
    "gitlab-discussions": "gitlab-discussions.json",
}
"""Each ``--format`` and the file it is written to in ``--output DIR``."""

FORMATS: tuple[str, ...] = tuple(FILE_NAMES)
"""Every accepted ``--format``, in the order files are written."""


FORMAT_OPTION = click.option(
    "--format",
    "formats",
    type=click.Choice(FORMATS),
    multiple=True,
    help="Report format, repeatable (default markdown). Every format but markdown needs --output.",
)
"""``--format``, as ``council review`` and ``council consolidate`` both take it."""


def json_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--json PATH`` (to the parameter ``json_out``) with the command's own help."""
    return click.option(
        "--json", "json_out", type=click.Path(path_type=Path, dir_okay=False), help=help_text
    )


def output_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--output DIR`` with the command's own help."""
    return click.option(
        "--output", type=click.Path(path_type=Path, file_okay=False), help=help_text
    )
