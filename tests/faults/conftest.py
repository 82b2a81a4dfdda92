"""The fault suite's fixtures: one :class:`~tests.faults.lab.Lab` per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.lab import Lab


@pytest.fixture
def lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A lab with its redis-server started (AOF on); every process stopped at teardown,
    the workers' logs' tails printed when the test failed."""
    made = Lab(tmp_path)
    made.start_redis()
    yield made
    made.close()
    call = getattr(request.node, "council_report_call", None)
    if call is not None and call.failed:
        for name in made.workers:
            print(f"--- tail of worker {name}'s log ---")
            print("\n".join(made.log(name).splitlines()[-40:]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the test item, so the fixture sees a failed call."""
    report = yield
    setattr(item, f"council_report_{report.when}", report)
    return report
