"""The fault suite's fixtures: one :class:`~tests.faults.lab.Lab` per test."""

from __future__ import annotations

import subprocess
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


@pytest.fixture
def isolated_lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A lab whose redis-server sits behind a link of its own (a network namespace and a
    veth pair) that the test can cut and heal; skipped where namespaces cannot be made."""
    made = Lab(tmp_path)
    try:
        made.isolate()
    except (OSError, subprocess.CalledProcessError) as exc:
        made.close()
        pytest.skip(f"no network namespace here (`ip netns` needs root and iproute2): {exc}")
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
