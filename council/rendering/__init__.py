"""Reports of a settled council: pure functions of a :class:`CouncilReport` returning text.

``render_markdown`` is for people (a PR comment, ``$GITHUB_STEP_SUMMARY``);
``render_json`` / ``read_json`` are the machine form that round-trips.
"""

from __future__ import annotations

from council.model.report import CouncilReport, ParticipantSummary
from council.rendering.jsonreport import read_json, render_json
from council.rendering.markdown import render_markdown

__all__ = [
    "CouncilReport",
    "ParticipantSummary",
    "read_json",
    "render_json",
    "render_markdown",
]
