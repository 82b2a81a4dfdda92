"""A round with a judge on a real redis-server and a real ``celery worker``: the judge
task runs after the reviewers are filed, its verdict applies (the two reviewers' one
finding, restated graver), and no task of the round leaves a Celery result in Redis (the
chord's, the judge's: nobody reads them)."""

from __future__ import annotations

import json

import pytest

from tests.faults.lab import Lab, finding

pytestmark = pytest.mark.integration


def test_a_distributed_judge_rules_and_leaves_no_celery_result(lab: Lab) -> None:
    roster, _ = lab.replay_roster(2, entries=1, latency_ms=0)
    graver = dict(finding(0, "r0-"), severity="critical", raisedBy=["r0", "r1"])
    (lab.tmp / "judge.json").write_text(json.dumps({"findings": [graver]}))
    roster.write_text(
        roster.read_text()
        + '[judge]\nid = "arbiter"\nbackend = "replay"\nanswer = "judge.json"\n'
    )
    lab.start_worker("w1")
    report = lab.settled(lab.review(roster), timeout_s=180)
    states = {p["id"]: p["state"] for p in report["participants"]}
    assert states == {"r0": "answered", "r1": "answered", "arbiter": "answered"}
    (only,) = report["findings"]  # the reviewers' tellings agree: one finding
    assert (only["severity"], only["raised_by"]) == ("critical", ["r0", "r1"])
    assert not report.get("suppressed")
    assert "council.judge" in lab.log("w1")
    assert lab.client().keys("celery-task-meta-*") == []
