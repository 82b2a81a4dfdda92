"""council console in a real headless Chromium (Debian's, driven by Playwright): a run
on a real redis-server waits on a person with a `choice` ask; the page shows the
options, updates live, takes the answer, and says the run settled. The reviewers page
shows the scorecards, and a run's page each finding's likelihood.

On failure a screenshot of the page is written to tests/artifacts/. Skipped (one line)
only when there is no chromium binary and CI is not set; in CI it must run (`.ci/run`
and `make test` install Debian's chromium)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis
from pydantic import SecretStr

from council.ranking.records import TrackRecord
from tests.console_runs import CHOICE, finding, waiting_run
from tests.services import ROOT, free_port
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.console.app import create_app
from workers.console.security import Access
from workers.stores.run_record import Progress
from workers.stores.track.records import RedisRecords

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.integration

TOKEN = "browser-token-0123456789abcdef"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_NAMES = ("chromium", "chromium-browser")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _chromium() -> str:
    """The chromium binary; skips (outside CI) or fails (in CI) without one."""
    found = next((shutil.which(n) for n in CHROMIUM_NAMES if shutil.which(n)), None)
    if found is None:
        if _in_ci():
            pytest.fail("no chromium binary in CI: .ci/run installs Debian's chromium")
        pytest.skip("no chromium binary (apt-get install chromium; make test installs it)")
    return found


@pytest.fixture
def rt(redis_url: str) -> Iterator[Runtime]:
    """A runtime on the emptied test redis-server."""
    client = redis.Redis.from_url(redis_url)
    yield build_runtime(Settings(redis_url=SecretStr(redis_url)), client)
    client.close()


@pytest.fixture
def console(rt: Runtime) -> Iterator[str]:
    """The console on uvicorn, in a thread, on a free loopback port; yields its URL."""
    import uvicorn

    port = free_port()
    app = create_app(rt, Access(SecretStr(TOKEN)), poll_s=0.2, stream_s=30)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="console", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the console did not start within 15 s")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def page(request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page of a headless Chromium (the system's binary, not Playwright's download);
    its screenshot goes to tests/artifacts/ when the test fails."""
    binary = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if _in_ci():
            raise
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=binary, headless=True)
        context = browser.new_context()
        opened = context.new_page()
        opened.set_default_timeout(15_000)
        yield opened
        call = getattr(request.node, "council_report_call", None)
        if call is not None and call.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / f"{request.node.name}.png"
            opened.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the page: {shot}")
        browser.close()


def test_a_person_answers_a_choice_and_the_run_settles(
    rt: Runtime, console: str, page: Page
) -> None:
    """The run page shows the choice's options and the escaped finding, follows the run
    live, takes the answer, and says the run settled; Redis agrees."""
    from playwright.sync_api import expect

    record, (ask,) = waiting_run(
        rt,
        asks=[("Keep or drop the cache of <b>users</b>?", CHOICE)],
        findings=[finding("<script>alert(1)</script>")],
    )
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)

    page.goto(f"{console}/runs/{record.run_id}?token={TOKEN}")
    page.wait_for_url(f"{console}/runs/{record.run_id}")  # reloaded without the token
    expect(page.locator("#live-state")).to_have_text("live")

    question = page.locator(f"#ask-{ask.id}")
    expect(question.locator(".question")).to_have_text("Keep or drop the cache of <b>users</b>?")
    assert question.get_attribute("data-component") == "choice"
    expect(question.get_by_label("keep")).to_be_visible()
    expect(question.get_by_label("drop")).to_be_visible()
    expect(page.locator(".finding .subject")).to_have_text("<script>alert(1)</script>")
    expect(page.locator("#run-status")).to_contain_text("Waiting on a person")

    rt.runs.set_progress(
        record.run_id, "owl", Progress(state="failed", attempt=2, detail="worker went away")
    )
    owl = page.locator('tr[data-participant="owl"]')
    expect(owl.locator(".state")).to_have_text("failed")  # live, without a reload
    expect(owl.locator(".detail")).to_have_text("worker went away")

    question.get_by_label("drop").check()
    question.locator("textarea[name=reason]").fill("the cache is rebuilt on start")
    question.get_by_role("button", name="Answer").click()

    page.wait_for_url(f"{console}/runs/{record.run_id}#ask-{ask.id}")
    expect(page.locator("#run-status")).to_contain_text(
        "every question was answered and the run settled as settled"
    )
    assert page.locator("#run-status").get_attribute("data-status") == "settled"
    expect(page.locator(f"#ask-{ask.id} .answer-value")).to_have_text("drop")
    assert rt.runs.status(record.run_id) == "settled"
    assert rt.sessions.waiting(record.session) == []
    report = rt.runs.report(record.run_id)
    assert report is not None and report.asks[0].answer is not None
    assert report.asks[0].answer.value == "drop" and report.asks[0].answer.by == "console"
    assert dialogs == [], "no script from a finding ran"
    assert not [p for p in problems if "Content Security Policy" in p], problems


def test_the_reviewers_scorecards_and_a_findings_likelihood(
    rt: Runtime, console: str, page: Page
) -> None:
    """The reviewers page, reached from the header, lists each identity's scorecard from
    the records in Redis; a run's page shows each finding's likelihood, the less likely
    marked so."""
    from playwright.sync_api import expect

    RedisRecords(rt.client, rt.keys).add(
        [
            TrackRecord(
                participant="hawk", identity="k1", confirmed=8, dismissed=2, findings=12, rounds=4
            ),
            TrackRecord(participant="owl", identity="k2", confirmed=1, dismissed=5, findings=6),
        ]
    )
    record, _ = waiting_run(
        rt, findings=[finding("likely"), finding("unlikely")], likelihoods=(0.81, 0.12)
    )
    page.goto(f"{console}/?token={TOKEN}")
    page.get_by_role("link", name="reviewers").click()
    page.wait_for_url(f"{console}/reviewers")
    rows = page.locator("#scorecards tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-reviewer", "hawk")  # best precision first
    expect(rows.nth(0).locator(".precision")).to_have_text("0.75 ± 0.12")
    expect(rows.nth(1).locator(".dismissed")).to_have_text("5")

    page.goto(f"{console}/runs/{record.run_id}")
    shown = page.locator(".finding .likelihood")
    expect(shown).to_have_count(2)
    expect(shown.nth(0).locator(".likelihood-value")).to_have_text("0.81")
    expect(shown.nth(1)).to_contain_text("(less likely)")
    expect(shown.nth(1)).to_have_class("likelihood less-likely")


def test_the_console_refuses_a_browser_without_the_token(console: str, page: Page) -> None:
    """Without the token the browser gets the 401 page, and no cookie."""
    response = page.goto(f"{console}/")
    assert response is not None and response.status == 401
    assert "needs its token" in page.content()
    assert page.context.cookies() == []


def test_the_artifacts_directory_is_ignored() -> None:
    """Screenshots of failures are never committed."""
    assert "tests/artifacts/" in Path(ROOT / ".gitignore").read_text().splitlines()
