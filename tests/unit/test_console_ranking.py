"""The console shows the ranking (docs/ranking.md): the reviewers page lists each
reviewer identity's scorecard from the track records in Redis, and a run's page shows
each finding's likelihood beside it, saying which are less likely. On fakeredis through
Starlette's TestClient, and the view functions directly."""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from council.ranking.records import ID_ONLY, TrackRecord
from tests.console_runs import finding, waiting_run
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.console.app import create_app
from workers.console.scorecards import scorecard_rows
from workers.console.security import Access
from workers.console.views import run_view
from workers.stores.track.records import RedisRecords

TOKEN = "console-token-0123456789"


@pytest.fixture
def rt() -> Runtime:
    return build_runtime(Settings(), fakeredis.FakeRedis(server=fakeredis.FakeServer()))


@pytest.fixture
def client(rt: Runtime) -> Iterator[TestClient]:
    """A TestClient holding the console's cookie."""
    app = create_app(rt, Access(SecretStr(TOKEN)), poll_s=0.05, stream_s=0.3)
    with TestClient(app) as c:
        assert c.get(f"/?token={TOKEN}").status_code == 200
        yield c


def _records(rt: Runtime) -> None:
    RedisRecords(rt.client, rt.keys).add(
        [
            TrackRecord(
                participant="hawk",
                identity="k1",
                confirmed=8,
                dismissed=2,
                acted=2,
                findings=12,
                rounds=4,
                cost_usd=2.0,
                priced=True,
            ),
            TrackRecord(participant="owl", identity=ID_ONLY, confirmed=1, dismissed=5),
            TrackRecord(participant="<b>cat</b>", identity="k2", findings=3, rounds=1),
        ]
    )


def test_the_scorecards_are_the_records_best_precision_first(rt: Runtime) -> None:
    _records(rt)
    rows = scorecard_rows(rt)
    assert [r.participant for r in rows] == ["hawk", "<b>cat</b>", "owl"]
    hawk, cat, owl = rows
    # Beta(1 + 8 + 2/2, 1 + 2): mean 10/13, sd sqrt(10*3 / (13^2 * 14)) = 0.11
    assert (hawk.findings, hawk.confirmed, hawk.dismissed, hawk.acted) == (12, 8, 2, 2)
    assert (hawk.precision, hawk.per_round, hawk.cost_per_confirmed) == (
        "0.77 ± 0.11",
        "3.0",
        "$0.25",
    )
    assert (cat.precision, cat.per_round, cat.cost_per_confirmed) == (
        "0.50 ± 0.29",
        "3.0",
        "unpriced",
    )
    assert (owl.identity, owl.findings, owl.per_round) == (ID_ONLY, 6, "—")


def test_the_reviewers_page_shows_the_scorecards_escaped(rt: Runtime, client: TestClient) -> None:
    _records(rt)
    page = client.get("/reviewers")
    assert page.status_code == 200
    text = page.text
    assert '<tr data-reviewer="hawk" data-identity="k1">' in text
    assert '<td class="precision">0.77 ± 0.11</td>' in text
    assert '<td class="cost">$0.25</td>' in text
    assert "<b>cat</b>" not in text and "&lt;b&gt;cat&lt;/b&gt;" in text
    assert 'href="/reviewers"' in client.get("/").text


def test_the_reviewers_page_without_records_says_how_to_get_them(client: TestClient) -> None:
    text = client.get("/reviewers").text
    assert 'id="no-scorecards"' in text and "council outcomes import" in text


def test_the_reviewers_page_needs_the_token(rt: Runtime) -> None:
    app = create_app(rt, Access(SecretStr(TOKEN)))
    with TestClient(app) as anonymous:
        assert anonymous.get("/reviewers").status_code == 401


def test_a_run_shows_each_findings_likelihood(rt: Runtime, client: TestClient) -> None:
    """Ranked 0.81 and 0.12 with likely_at 0.5: both shown, the second marked less
    likely; a finding the report did not rank shows none."""
    subjects = ("likely <i>one</i>", "unlikely one", "unranked one")
    record, _ = waiting_run(rt, findings=[finding(s) for s in subjects], likelihoods=(0.81, 0.12))
    view = run_view(rt, record.run_id)
    assert view is not None
    shown = {f.subject: (f.likelihood, f.less_likely, f.why) for f in view.findings}
    assert shown == {
        "likely <i>one</i>": ("0.81", False, "raised by hawk (0.81)"),
        "unlikely one": ("0.12", True, "raised by hawk (0.12)"),
        "unranked one": ("", False, ""),
    }
    page = client.get(f"/runs/{record.run_id}").text
    assert '<span class="likelihood-value">0.81</span>: raised by hawk (0.81)' in page
    assert '<p class="likelihood less-likely">' in page and "(less likely)" in page
    assert page.count('<p class="likelihood') == 2
