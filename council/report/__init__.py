"""Reports of a settled council: pure functions of a :class:`CouncilReport` returning text.

``render_markdown`` is for people (a PR comment, ``$GITHUB_STEP_SUMMARY``);
``render_json`` / ``read_json`` are the machine form that round-trips.
"""

from __future__ import annotations

from council.report.jsonreport import read_json, render_json
from council.report.markdown import render_markdown
from council.report.model import CouncilReport, ParticipantSummary

__all__ = [
    "CouncilReport",
    "ParticipantSummary",
    "read_json",
    "render_json",
    "render_markdown",
]
