"""The gate's policy is one value, carried by the run and by its report, and what an
older version wrote is still read (docs/architecture.md "Reports, the CLI and the gate")."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from council.model.gate_policy import GatePolicy
from council.model.report import CouncilReport
from council.rendering.jsonreport import render_json
from council.round.gate import exit_code, gate_summary
from tests.forge_cases import finding, report
from workers.stores.run_record import RunRecord


def test_a_run_written_before_the_policy_was_one_value_is_read_into_it() -> None:
    older = {"run_id": "r", "session": "s", "fail_on": "minor", "quorum": 2, "min_agreement": 2}
    record = RunRecord.model_validate(older)
    assert record.gate == GatePolicy(fail_on="minor", quorum=2, min_agreement=2, filter="added")


def test_an_older_run_without_the_fields_keeps_the_defaults_it_was_read_with() -> None:
    """Before, a missing quorum read as 1 and a missing filter as ``added``."""
    record = RunRecord.model_validate({"run_id": "r", "session": "s"})
    assert record.gate == GatePolicy(fail_on="critical", quorum=1, min_agreement=1, filter="added")


def test_an_older_report_is_read_and_the_json_still_names_min_agreement_and_filter() -> None:
    older = json.loads(render_json(report()))
    older.pop("gate")
    older.update(min_agreement=3, filter="file")
    read = CouncilReport.model_validate(older)
    assert read.gate == GatePolicy(min_agreement=3, filter="file")
    written = json.loads(render_json(read))
    assert (written["min_agreement"], written["filter"]) == (3, "file")
    assert written["gate"]["min_agreement"] == 3
    assert CouncilReport.model_validate(written) == read


def test_the_exit_code_and_the_gate_line_read_the_reports_own_policy() -> None:
    """One medium finding: it gates at minor and medium, not at critical."""
    medium = report(finding(1, severity="medium"))
    assert exit_code(medium) == 0
    assert exit_code(medium.gated(fail_on="medium")) == 1
    assert gate_summary(medium.gated(fail_on="minor")).endswith("→ exit 1")


def test_a_bad_policy_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="fail_on"):
        GatePolicy.model_validate({"fail_on": "blocker"})
    with pytest.raises(ValidationError, match="min_agreement"):
        report().gated(min_agreement=0)
    with pytest.raises(ValidationError, match="extra"):
        GatePolicy.model_validate({"fail-on": "minor"})
