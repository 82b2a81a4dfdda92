"""Runs every shared harvest case (shared/cases/harvest/*.json) through the harvest.

One data-driven test, ids = file names; a new case file is picked up without code changes,
and a case this harness cannot interpret fails (it is never skipped). What is compared is
fixed by shared/cases/README.md: ``truncated``; the findings in order, in canonical form
without ``id`` and ``origin`` (``discussion_contains`` instead of ``discussion`` means the
discussion must contain each string); the warnings' ``code`` and ``at``, in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from council.harvest import also_recorded, fold_journal, harvest, read_journal
from council.model.findings import Harvest, Read, canonical
from tests.cases.loader import CaseError, case_params, load_case

KNOWN_FIELDS = frozenset(
    {"name", "why", "answer", "recorded", "recorded_raw", "read", "expect", "answer_repeat"}
)
"""The fields a harvest case may have (shared/cases/README.md, harvest/)."""


def _run(case: dict[str, Any], name: str) -> Harvest:
    """Harvest the case's answer, then fold its journal (decoded or raw) if it has one."""
    unknown = set(case) - KNOWN_FIELDS
    if unknown:
        raise CaseError(f"{name}: unknown case fields {sorted(unknown)}")
    if "recorded" in case and "recorded_raw" in case:
        raise CaseError(f"{name}: a case has at most one of recorded and recorded_raw")
    answer = case.get("answer")
    if not isinstance(answer, str):
        raise CaseError(f"{name}: answer must be text")
    read = Read.model_validate(case["read"]) if "read" in case else None
    result = harvest(answer, read)
    if "recorded" in case:
        if not isinstance(case["recorded"], list):
            raise CaseError(f"{name}: recorded must be a list")
        result = also_recorded(result, case["recorded"], read)
    if "recorded_raw" in case:
        raw = case["recorded_raw"]
        if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
            raise CaseError(f"{name}: recorded_raw must be a list of strings")
        result = fold_journal(result, read_journal(raw), read)
    return result


def _compared_finding(actual: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    """One finding: equal canonical keys; ``discussion_contains`` checked by substring."""
    actual = {k: v for k, v in actual.items() if k not in ("id", "origin")}
    if "discussion_contains" in expected:
        pieces = expected["discussion_contains"]
        if not isinstance(pieces, list) or "discussion" in expected:
            raise CaseError(f"{where}: discussion_contains must be a list, without discussion")
        discussion = actual.pop("discussion", "")
        for piece in pieces:
            assert piece in discussion, f"{where}: discussion lacks {piece!r}: {discussion!r}"
        expected = {k: v for k, v in expected.items() if k != "discussion_contains"}
    assert actual == expected, f"{where}: finding differs"


@pytest.mark.parametrize("path", case_params("harvest"))
def test_harvest_case(path: Path | str) -> None:
    """Each shared harvest case gives exactly its expected findings, warnings and truncation."""
    case = load_case(path)
    name = Path(path).name
    expect = case.get("expect")
    if not isinstance(expect, dict) or set(expect) != {"truncated", "findings", "warnings"}:
        raise CaseError(f"{name}: expect needs exactly truncated, findings and warnings")
    result = _run(case, name)
    found = canonical(result)
    context = f"{name} ({case.get('why', '')})\nactual: {json.dumps(found)[:4000]}"
    expected_warnings = [(w["code"], w["at"]) for w in expect["warnings"]]
    actual_warnings = [(w.code, w.at) for w in result.warnings]
    assert actual_warnings == expected_warnings, f"warnings differ: {context}"
    assert result.truncated is expect["truncated"], f"truncated differs: {context}"
    assert len(found["findings"]) == len(expect["findings"]), f"finding count: {context}"
    for index, (actual, expected) in enumerate(
        zip(found["findings"], expect["findings"], strict=True)
    ):
        _compared_finding(actual, expected, f"{context}\nfindings[{index}]")
    for warning in result.warnings:
        assert warning.message.strip(), f"{name}: a warning without a message"
