"""Runs every shared evidence case (shared/cases/evidence/*.json) through the matcher.

One data-driven test, ids = file names; a new case file is picked up without code changes,
and a case this harness cannot interpret fails (it is never skipped). Per
shared/cases/README.md (evidence/): the case's rows are split by ``turn`` (``current``
rows are matched, ``earlier`` ones only counted), the answer is matched, and the
verdicts, ``regions_dropped``, ``earlier_turn_rows`` and ``prose`` must equal ``expect``
exactly. Every verdict must also survive the strict reader unchanged (what the matcher
writes, the reader reads).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from council.evidence import (
    ScriptRow,
    TurnSubmissions,
    evidence_json,
    match_evidence,
    read_verdicts,
)
from tests.cases.loader import CaseError, case_params, load_case

KNOWN_FIELDS = frozenset({"name", "why", "answer", "rows", "expect", "answer_repeat"})
"""The fields an evidence case may have (shared/cases/README.md, evidence/)."""

EXPECT_FIELDS = frozenset({"blocks", "regions_dropped", "earlier_turn_rows", "prose"})
"""The fields of an evidence case's ``expect``."""


def _turn(rows: object, name: str) -> TurnSubmissions:
    """The case's rows as one turn's submissions (``turn`` says current or earlier)."""
    if not isinstance(rows, list):
        raise CaseError(f"{name}: rows must be a list")
    current: list[ScriptRow] = []
    earlier: list[ScriptRow] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("turn") not in ("current", "earlier"):
            raise CaseError(f"{name}: rows[{index}] needs turn 'current' or 'earlier'")
        fields = {key: value for key, value in row.items() if key != "turn"}
        try:
            script_row = ScriptRow.model_validate(fields)
        except ValidationError as exc:
            raise CaseError(f"{name}: rows[{index}] is not a row: {exc}") from None
        (current if row["turn"] == "current" else earlier).append(script_row)
    return TurnSubmissions.of(current, earlier)


def _summary(found: dict[str, Any]) -> str:
    """What the matcher found, short enough for an assertion message."""
    return json.dumps(found, ensure_ascii=False)[:4000]


@pytest.mark.parametrize("path", case_params("evidence"))
def test_evidence_case(path: Path | str) -> None:
    """Each shared evidence case gives exactly its expected verdicts, counts and prose."""
    case = load_case(path)
    name = Path(path).name
    unknown = set(case) - KNOWN_FIELDS
    if unknown:
        raise CaseError(f"{name}: unknown case fields {sorted(unknown)}")
    answer, expect = case.get("answer"), case.get("expect")
    if not isinstance(answer, str):
        raise CaseError(f"{name}: answer must be text")
    if not isinstance(expect, dict) or set(expect) != EXPECT_FIELDS:
        raise CaseError(f"{name}: expect needs exactly {sorted(EXPECT_FIELDS)}")
    evidence = match_evidence(answer, _turn(case.get("rows"), name))
    found = evidence_json(evidence)
    context = f"{name} ({case.get('why', '')})\nactual: {_summary(found)}"
    assert found["blocks"] == expect["blocks"], f"verdicts differ: {context}"
    assert found["regions_dropped"] == expect["regions_dropped"], f"dropped: {context}"
    assert found["earlier_turn_rows"] == expect["earlier_turn_rows"], f"earlier: {context}"
    assert found["prose"] == expect["prose"], f"prose differs: {context}"
    reread = read_verdicts(found["blocks"])
    assert reread.refused == 0, f"the reader refused a verdict the matcher wrote: {context}"
    assert reread.verdicts == evidence.blocks, f"verdicts changed on reading: {context}"
