"""The JSON report: the whole :class:`CouncilReport` as canonical JSON, and reading it back.

The JSON report is what other tools and later commands read (``council show``, a CI step
that posts comments), so it is the model's own JSON with optional keys absent, never
``null`` (docs/harvest.md §9), in the model's field order, and it carries ``schema_version``.
A reader refuses a version it does not know instead of guessing at a shape that moved.

Source: docs/harvest.md §9 (canonical JSON); council.model.report (``SCHEMA_VERSION``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from council.errors import CouncilError
from council.model.findings import canonical
from council.model.report import SCHEMA_VERSION, CouncilReport
from council.rendering.escape import no_controls_json

_DEFAULT_FIX = "Pass a JSON report that council wrote (render_json)."


class UnreadableReport(CouncilError, ValueError):
    """A JSON report could not be read: not JSON, not an object, or not a report.

    ``reason`` says what was wrong, ``fix`` the way out. Exit code 2: the input is at
    fault.
    """

    def __init__(self, reason: str, fix: str = _DEFAULT_FIX) -> None:
        self.reason, self.fix = reason, fix
        super().__init__(f"cannot read the council report: {reason}. {fix}")


class UnknownSchemaVersion(UnreadableReport):
    """A JSON report declares a ``schema_version`` this council does not read.

    ``found`` is the declared value (None when the key is missing), ``supported`` the
    one version this code reads.
    """

    def __init__(self, found: object, supported: int) -> None:
        self.found, self.supported = found, supported
        super().__init__(
            f"it has schema_version {found!r}, and this council reads only version {supported}",
            "Read it with the council version that wrote it, or render it again from "
            "the run with this one.",
        )


def render_json(report: CouncilReport) -> str:
    """The report as canonical JSON text: 2-space indent, model order, newline at the end.

    Optional keys are absent when unset (findings, warnings and participants alike), so
    the text reads back into an equal report with :func:`read_json`. Non-ASCII text is
    kept as is (UTF-8), not escaped, except the control and bidirectional characters,
    written as ``\\u`` escapes (:func:`~council.rendering.escape.no_controls_json`): the
    data is the same, but a terminal (``council show --json``) or an editor showing the
    file acts on none. Source: docs/harvest.md §9; docs/architecture.md "Reports, the
    CLI and the gate".
    """
    return no_controls_json(json.dumps(canonical(report), indent=2, ensure_ascii=False)) + "\n"


def _other_kind(data: dict[str, Any]) -> str | None:
    """What a JSON object without ``schema_version`` looks like instead, if anything we
    know: a SARIF log, a Harvest JSON, a GitHub review body, or an answer."""
    if "runs" in data and ("version" in data or "$schema" in data):
        return "a SARIF log"
    if {"findings", "warnings", "truncated"} <= data.keys():
        return "a Harvest JSON (council harvest's output)"
    if "event" in data and ("comments" in data or "body" in data):
        return "a GitHub review body (github-review.json)"
    if "findings" in data and not {"run_id", "participants", "status"} & data.keys():
        return "a reviewer's answer"
    return None


def read_json(text: str | bytes) -> CouncilReport:
    """Read a JSON report written by :func:`render_json`.

    Raises :class:`UnknownSchemaVersion` when ``schema_version`` is missing or is not
    the version this code reads (checked before the shape, so a newer report is named
    as newer rather than as malformed), and :class:`UnreadableReport` for text that is
    not JSON or not a report.
    """
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise UnreadableReport(f"not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise UnreadableReport(f"expected a JSON object, found {type(data).__name__}")
    if "schema_version" not in data:
        kind = _other_kind(data)
        if kind is not None:
            raise UnreadableReport(
                f"this is {kind}, not a council JSON report (write one with "
                "council review --json FILE, or --format json)"
            )
    version = data.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise UnknownSchemaVersion(version, SCHEMA_VERSION)
    try:
        return CouncilReport.model_validate(data)
    except ValidationError as exc:
        raise UnreadableReport(_first_error(exc)) from exc


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "the report"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
