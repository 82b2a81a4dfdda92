"""Hosts' wall clocks disagree: leases, the watchdog's deadline and the abandon clock are
measured on Redis's clock or as durations on each host's monotonic clock, so a CLI 600 s
behind, a worker 600 s ahead and one 30 s ahead still settle a healthy run ``settled``,
every finding filed once, no reviewer sent twice.

One process's wall clock is moved by a ``sitecustomize`` that offsets ``time.time`` and
``time.time_ns`` (what council's clock reads). Debian's libfaketime was tried first: with
its monotonic clock faked too, Python's timed waits on a condition sleep for years (the
worker hangs); with ``FAKETIME_DONT_FAKE_MONOTONIC=1``, ``time.sleep`` fails with EINVAL.
"""

from __future__ import annotations

import pytest

from tests.faults.lab import Lab, assert_filed_once

pytestmark = pytest.mark.integration

SKEW = """\
import os
import time

_offset = float(os.environ.get("COUNCIL_TEST_CLOCK_SKEW_S", "0"))
_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + _offset
time.time_ns = lambda: _time_ns() + int(_offset * 1e9)
"""
"""The ``sitecustomize`` that moves a process's wall clock (its monotonic clock is left
alone, as a host's skewed wall clock leaves it)."""


def skewed(lab: Lab, offset_s: int) -> dict[str, str]:
    """The environment that moves one Python process's wall clock by ``offset_s``."""
    where = lab.tmp / "skew"
    where.mkdir(exist_ok=True)
    (where / "sitecustomize.py").write_text(SKEW)
    return {"PYTHONPATH": str(where), "COUNCIL_TEST_CLOCK_SKEW_S": str(offset_s)}


def test_skewed_clocks_settle_a_healthy_run(lab: Lab) -> None:
    roster, subjects = lab.replay_roster(3, entries=3, latency_ms=15000, backstop_ms=60000)
    workers = [
        lab.start_worker("ahead", **skewed(lab, 600)),
        lab.start_worker("nearly", **skewed(lab, 30)),
    ]
    review = lab.review(roster, **skewed(lab, -600))
    _, stderr = review.communicate(timeout=180)
    assert review.returncode == 0, stderr
    assert all(w.poll() is None for w in workers)
    report = lab.report()
    assert report["status"] == "settled", report["participants"]
    assert {p["state"] for p in report["participants"]} == {"answered"}
    assert_filed_once(report, subjects)
    for name in ("ahead", "nearly"):
        log = lab.log(name)
        assert "participant_redispatched" not in log, name
        assert "sweep_watchdog_fired" not in log, name
