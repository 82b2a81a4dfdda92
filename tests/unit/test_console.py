"""council console on fakeredis, through Starlette's TestClient: the token (refused,
accepted as a header or once as ?token= that sets the cookie), the security headers,
escaping of model output, the component registry and its prose fallback, CSRF, and
answering an ask as `council answer` does until the run settles."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest
from click.testing import CliRunner
from pydantic import SecretStr
from starlette.testclient import TestClient

from council.asks.ask import Ask
from council.asks.component import Component
from council.asks.pending import PendingAsk
from council.model.gate_policy import GatePolicy
from council.round.gate import gate_summary
from tests.console_runs import CHOICE, finding, waiting_run
from workers.app.services import Runtime, build_runtime
from workers.app.settings import Settings
from workers.cli import main
from workers.console.app import FORM_MAX_BYTES, create_app
from workers.console.registry import FALLBACK, REGISTRY, rendering
from workers.console.security import COOKIE, SECURITY_HEADERS, Access
from workers.console.views import evidence_lines
from workers.stores.run_record import Progress

TOKEN = "console-token-0123456789"
SCRIPT = "<script>alert(1)</script>"
TEMPLATES = Path(__file__).resolve().parents[2] / "workers" / "console" / "templates"


@pytest.fixture
def rt() -> Runtime:
    """A runtime on an in-process fakeredis."""
    return build_runtime(Settings(), fakeredis.FakeRedis(server=fakeredis.FakeServer()))


@pytest.fixture
def client(rt: Runtime) -> Iterator[TestClient]:
    """A TestClient without credentials (streams last 0.3 s)."""
    app = create_app(rt, Access(SecretStr(TOKEN)), poll_s=0.05, stream_s=0.3)
    with TestClient(app) as c:
        yield c


def _login(client: TestClient) -> None:
    entered = client.get(f"/?token={TOKEN}")
    assert entered.status_code == 200 and COOKIE in client.cookies


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the form carries its CSRF token"
    return found.group(1)


def test_without_the_token_every_route_is_refused(client: TestClient) -> None:
    """No token, a wrong one as a query, header or cookie: 401, the page or text."""
    for path in ("/", "/runs/x", "/runs/x/events", "/static/console.js", "/events"):
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/", headers={"accept": "text/html"}).text.startswith("<!doctype html>")
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={"authorization": f"Basic {TOKEN}"}).status_code == 401
    client.cookies.set(COOKIE, "1.forged.deadbeef")
    assert client.get("/").status_code == 401
    assert client.post("/asks/ask_x/answer", data={"value": "x"}).status_code == 401


def test_the_token_as_a_bearer_header_or_once_as_a_query(client: TestClient) -> None:
    """Bearer works alone; ?token= sets an HttpOnly SameSite=Strict cookie, not the
    token, and reloads the address without it; the cookie then suffices."""
    assert client.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    entered = client.get(f"/runs/r1?token={TOKEN}&x=1")
    assert entered.status_code == 200
    cookie = entered.headers["set-cookie"]
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "Path=/" in cookie
    assert TOKEN not in cookie and TOKEN not in entered.text
    assert 'content="0;url=/runs/r1?x=1"' in entered.text
    assert client.get("/").status_code == 200
    assert client.get("/static/console.js").status_code == 200


def test_the_reload_after_the_token_stays_on_the_console(client: TestClient) -> None:
    """A path like //evil.example or /%5Cevil.example (a backslash: a slash to a
    browser) never becomes an address on another host."""
    for path in ("/%2F%2Fevil.example/", "/%5Cevil.example/", "/%2F%5Cevil.example/"):
        entered = client.get(f"{path}?token={TOKEN}")
        found = re.search(r'content="0;url=([^"]*)"', entered.text)
        assert found and re.match(r"/[^/\\]", found.group(1)), (path, found)


def test_a_cookie_expires_and_a_new_token_logs_everyone_out() -> None:
    """The cookie is valid for its session only, and only under the token that made it."""
    access = Access(SecretStr(TOKEN), session_s=60)
    cookie = access.new_cookie(now_s=1000)
    assert access.cookie_ok(cookie, now_s=1059)
    assert not access.cookie_ok(cookie, now_s=1060)
    assert not Access(SecretStr(TOKEN + "x")).cookie_ok(cookie, now_s=1001)
    assert not access.csrf_ok(access.new_cookie(), access.csrf_for(cookie))


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    """CSP without inline script, X-Frame-Options DENY, nosniff: on 401, pages, files."""
    responses = [client.get("/")]
    _login(client)
    responses += [client.get("/"), client.get("/static/console.css"), client.get("/runs/nope")]
    for response in responses:
        for name, value in SECURITY_HEADERS.items():
            assert response.headers[name] == value
    csp = SECURITY_HEADERS["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert responses[-1].status_code == 404


def test_a_finding_from_a_model_is_escaped(rt: Runtime, client: TestClient) -> None:
    """A subject, a question, an option and a discussion holding markup are shown as
    text, in the page and in the live stream alike."""
    options = {"component_id": "choice", "props": {"options": [SCRIPT, "drop"]}}
    record, _ = waiting_run(rt, asks=[(f"Keep {SCRIPT}?", options)], findings=[finding(SCRIPT)])
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    assert SCRIPT not in page and "<b>here" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f'value="{SCRIPT}"' not in page
    index = client.get("/").text
    assert SCRIPT not in index and "Keep &lt;script&gt;" in index
    with client.stream("GET", f"/runs/{record.run_id}/events") as events:
        stream = "".join(events.iter_text())
    parts = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]
    assert {p["part"] for p in parts} == {"live", "asks"}
    assert all(SCRIPT not in p["html"] for p in parts)


def test_no_template_marks_anything_safe() -> None:
    """No template turns autoescape off or marks a value safe."""
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        assert "|safe" not in text.replace(" ", ""), template
        assert "autoescape" not in text and "Markup" not in text, template


@pytest.mark.parametrize("component_id", sorted(REGISTRY))
def test_each_registered_component_has_its_template(component_id: str) -> None:
    """Every registered id maps to a template file of its own."""
    assert (TEMPLATES / REGISTRY[component_id].template).is_file()


def _pending(component: dict[str, object] | None) -> PendingAsk:
    made = Component.model_validate(component) if component is not None else None
    return PendingAsk(id="ask_1", run="r", ask=Ask(question="Which?", component=made))


def test_the_registry_reads_props_and_falls_back_without_guessing() -> None:
    """Known ids read their props; an unknown id, or props that do not read, fall back
    to the prose question with a note (never a near match)."""
    choice = rendering(_pending(CHOICE), CHOICE["props"])  # type: ignore[arg-type]
    assert choice.template == "components/choice.html"
    assert [o.value for o in choice.values["options"]] == ["keep", "drop"]  # type: ignore[attr-defined]
    picker = {"findings": [{"id": 3, "subject": "leak"}], "multiple": True}
    shown = rendering(_pending({"component_id": "finding-picker", "props": picker}), picker)
    assert shown.template == "components/finding-picker.html" and shown.values["multiple"]
    assert rendering(_pending(None), None).template == "components/text.html"
    unknown = rendering(_pending({"component_id": "choise"}), {})
    assert unknown.template == FALLBACK and unknown.note and "choise" in unknown.note
    bad = {"options": {"a": 1}}
    unreadable = rendering(_pending({"component_id": "choice", "props": bad}), bad)
    assert unreadable.fallback and "a JSON object of 1 keys" in (unreadable.note or "")
    gone = rendering(_pending(CHOICE), None, "its props_ref names no artifact of this run")
    assert gone.fallback and "props_ref" in (gone.note or "")


def test_an_unknown_component_shows_the_question_in_prose(rt: Runtime, client: TestClient) -> None:
    """The page says the component is not registered, shows the question, takes text."""
    wheel = {"component_id": "color-wheel", "props": {"hue": 3}}
    record, (ask,) = waiting_run(rt, asks=[("Which colour, and why?", wheel)])
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    article = page[page.index(f'id="ask-{ask.id}"') :]
    assert "no component registered as &#39;color-wheel&#39;" in article
    assert "Which colour, and why?" in article
    assert 'type="radio"' not in article and 'name="value" required' in article


def test_props_by_reference_are_read_from_the_runs_artifacts(
    rt: Runtime, client: TestClient
) -> None:
    """A props_ref resolves in its own run's artifact store; another run's ref does not,
    and the ask falls back to prose."""
    mine, _ = waiting_run(rt, asks=[])
    ref = rt.artifacts.put(mine.run_id, {"options": ["alpha", "beta"]})
    theirs, _ = waiting_run(rt, run_id="run_console2", asks=[])
    _ask_by_ref(rt, mine.run_id, ref)
    _ask_by_ref(rt, theirs.run_id, ref)
    _login(client)
    page = client.get(f"/runs/{mine.run_id}").text
    assert 'value="alpha"' in page and 'value="beta"' in page
    elsewhere = client.get(f"/runs/{theirs.run_id}").text
    assert "names no artifact of this run" in elsewhere and 'value="alpha"' not in elsewhere


def _ask_by_ref(rt: Runtime, run_id: str, ref: str) -> None:
    """Make the waiting run ``run_id`` ask a choice whose props are behind ``ref``."""
    (parked,) = [w for w in rt.sessions.waiting("github:o/n#pr-7") if w.record.run_id == run_id]
    ask = PendingAsk(
        id=f"ask_ref_{run_id}",
        run=run_id,
        ask=Ask(question="Pick one", component=Component(component_id="choice", props_ref=ref)),
    )
    report = parked.report.model_copy(update={"asks": (ask,)})
    key = rt.keys.session_waiting(parked.record.session)
    rt.client.hset(key, run_id, parked.model_copy(update={"report": report}).model_dump_json())
    rt.client.hset(rt.keys.run(run_id), "report", report.model_dump_json())


def test_an_answer_without_the_sessions_csrf_token_is_refused(
    rt: Runtime, client: TestClient
) -> None:
    """With the cookie, a POST needs the CSRF token of that cookie; nothing is recorded."""
    record, (ask,) = waiting_run(rt)
    _login(client)
    csrf = _csrf(client.get(f"/runs/{record.run_id}").text)
    url = f"/asks/{ask.id}/answer"
    assert client.post(url, data={"value": "keep"}).status_code == 403
    other = Access(SecretStr(TOKEN))
    stolen = other.csrf_for(other.new_cookie())
    assert client.post(url, data={"value": "keep", "csrf": stolen}).status_code == 403
    assert rt.sessions.answers(record.session) == {}
    done = client.post(url, data={"value": "keep", "csrf": csrf}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith(f"/runs/{record.run_id}")


def test_a_bearer_request_answers_without_csrf(rt: Runtime, client: TestClient) -> None:
    """A program with the header answers (no browser adds it, so none can forge it)."""
    record, (ask,) = waiting_run(rt)
    done = client.post(
        f"/asks/{ask.id}/answer",
        data={"value": "drop", "reason": "stale"},
        headers={"authorization": f"Bearer {TOKEN}", "accept": "application/json"},
    )
    assert done.status_code == 200, done.text
    said = done.json()
    assert said["answer"].pop("answered_ms") > 0
    assert said == {
        "run": record.run_id,
        "ask": ask.id,
        "answer": {"value": "drop", "reason": "stale", "by": "console"},
        "left": 0,
        "settled": "settled",
    }


def test_answering_the_last_ask_settles_the_run(rt: Runtime, client: TestClient) -> None:
    """An answer that does not fit is refused (400, nothing recorded); the first of two
    answers leaves the run waiting; the last settles it, and the page says so."""
    text = {"component_id": "text", "props": {"placeholder": "why?"}}
    record, (choice, why) = waiting_run(rt, asks=[("Keep?", CHOICE), ("Why?", text)])
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    csrf = _csrf(page)
    refused = client.post(f"/asks/{choice.id}/answer", data={"value": "maybe", "csrf": csrf})
    assert refused.status_code == 400
    assert "takes one of its options (keep, drop), not &#39;maybe&#39;" in refused.text
    assert rt.sessions.answers(record.session) == {}
    first = client.post(f"/asks/{choice.id}/answer", data={"value": "keep", "csrf": csrf})
    assert first.status_code == 200 and rt.runs.status(record.run_id) == "waiting"
    assert "1 of 2 question(s) unanswered" in first.text
    last = client.post(f"/asks/{why.id}/answer", data={"value": "it is used", "csrf": csrf})
    assert last.status_code == 200
    assert rt.runs.status(record.run_id) == "settled"
    assert "every question was answered and the run settled as" in last.text
    assert rt.sessions.waiting(record.session) == []
    gone = client.post(f"/asks/{why.id}/answer", data={"value": "again", "csrf": csrf})
    assert gone.status_code == 404 and "no run waits on an ask" in gone.text


def test_the_gate_line_follows_the_runs_fail_on(rt: Runtime, client: TestClient) -> None:
    """A run reviewed with --fail-on minor holding one medium finding: once settled, the
    console's gate line says it tripped at minor, word for word the line the CLI prints
    for the same report (it used to be read at a fixed critical: "no finding")."""
    record, (ask,) = waiting_run(
        rt,
        findings=[finding("a medium one", severity="medium")],
        gate=GatePolicy(fail_on="minor", quorum=1, filter="added"),
    )
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    client.post(f"/asks/{ask.id}/answer", data={"value": "keep", "csrf": _csrf(page)})
    report = rt.runs.report(record.run_id)
    assert report is not None and report.status == "settled"
    assert report.gate.fail_on == "minor"
    line = gate_summary(report)
    assert line == "gate: 1 finding(s) at or above minor → exit 1"
    assert html.escape(line.removeprefix("gate: ")) in client.get(f"/runs/{record.run_id}").text


def test_a_rejected_finding_is_dismissed_with_the_reason(rt: Runtime, client: TestClient) -> None:
    """confirm-finding: "no" with a reason dismisses it, as `council answer ASK no`."""
    from council.asks.confirm import _component

    subject = finding(SCRIPT).model_copy(update={"id": 1})
    confirm = _component(subject).as_json()
    record, (ask,) = waiting_run(rt, asks=[("Is it real?", confirm, 1)], findings=[finding(SCRIPT)])
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    assert 'data-component="confirm-finding"' in page and SCRIPT not in page
    done = client.post(
        f"/asks/{ask.id}/answer",
        data={"value": "no", "reason": "y is never 0", "csrf": _csrf(page)},
    )
    assert "Does not gate: dismissed: y is never 0" in done.text
    report = rt.runs.report(record.run_id)
    assert report is not None and report.status == "settled"
    assert report.suppressed[1].reason == "y is never 0"


def test_forms_of_another_kind_or_size_are_refused(rt: Runtime, client: TestClient) -> None:
    """Only a urlencoded form, at most FORM_MAX_BYTES."""
    _, (ask,) = waiting_run(rt)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    url = f"/asks/{ask.id}/answer"
    assert client.post(url, json={"value": "keep"}, headers=bearer).status_code == 415
    big = {"value": "k" * (FORM_MAX_BYTES + 1)}
    assert client.post(url, data=big, headers=bearer).status_code == 413


def test_the_live_stream_sends_what_changed(rt: Runtime) -> None:
    """Each part once, then again only when it changed (a participant's state)."""
    record, _ = waiting_run(rt)
    app = create_app(rt, Access(SecretStr(TOKEN)), poll_s=0.05, stream_s=0.4)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    with (
        TestClient(app) as client,
        client.stream("GET", f"/runs/{record.run_id}/events", headers=bearer) as events,
    ):
        assert events.headers["content-type"].startswith("text/event-stream")
        seen: list[dict[str, str]] = []
        changed = False
        for line in events.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                if len(seen) == 2 and not changed:
                    rt.runs.set_progress(
                        record.run_id, "owl", Progress(state="failed", detail="went away")
                    )
                    changed = True
    assert [p["part"] for p in seen] == ["live", "asks", "live"]
    assert "went away" in seen[2]["html"]


def test_evidence_is_shown_in_words() -> None:
    """Verdicts read as ran/not run; another shape as its JSON; none as nothing."""
    blocks = {
        "blocks": [
            {
                "block": 1,
                "label": "ok",
                "tool_call_id": "c",
                "tool": "t",
                "dispatch": 1,
                "also_matches": 0,
                "exit_code": 0,
            },
            {"block": 2, "label": "unmatched", "reason": "no-submission-this-turn"},
        ]
    }
    assert evidence_lines(blocks) == ("block 1: ran (ok), exit 0", "block 2: not run this turn")
    assert evidence_lines({"x": 1}) == ('{"x":1}',)
    assert evidence_lines(None) == ()


def test_the_command_needs_its_token_and_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2 naming COUNCIL_CONSOLE_TOKEN when unset or short, COUNCIL_REDIS_URL when
    the token is there but Redis is not."""
    unset = CliRunner().invoke(main, ["console"])
    assert unset.exit_code == 2 and "COUNCIL_CONSOLE_TOKEN is not set" in unset.output
    monkeypatch.setenv("COUNCIL_CONSOLE_TOKEN", "short")
    short = CliRunner().invoke(main, ["console"])
    assert short.exit_code == 2 and "COUNCIL_CONSOLE_TOKEN is shorter" in short.output
    monkeypatch.setenv("COUNCIL_CONSOLE_TOKEN", TOKEN)
    no_redis = CliRunner().invoke(main, ["console"])
    assert no_redis.exit_code == 2 and "COUNCIL_REDIS_URL" in no_redis.output
    assert "console" in CliRunner().invoke(main, ["--help"]).output


def test_a_reviewers_question_is_answered_and_left_for_the_reviewer(
    rt: Runtime, client: TestClient
) -> None:
    """A reviewer's choice behind a props_ref: a value off the artifact's options is
    refused; the answer is recorded and the run keeps waiting (the next council review
    sends the reviewer again; the console does not settle it without the reviewer)."""
    record, _ = waiting_run(rt, asks=[])
    ref = rt.artifacts.put(record.run_id, {"options": ["alpha", "beta"]})
    (parked,) = [w for w in rt.sessions.waiting(record.session) if w.record.run_id == record.run_id]
    ask = PendingAsk(
        id="ask_reviewer",
        run=record.run_id,
        participant="hawk",
        ask=Ask(question="Pick one", component=Component(component_id="choice", props_ref=ref)),
    )
    report = parked.report.model_copy(update={"asks": (ask,), "resumes_as": None})
    key = rt.keys.session_waiting(record.session)
    rt.client.hset(
        key, record.run_id, parked.model_copy(update={"report": report}).model_dump_json()
    )
    bearer = {"authorization": f"Bearer {TOKEN}", "accept": "application/json"}
    off = client.post(f"/asks/{ask.id}/answer", data={"value": "gamma"}, headers=bearer)
    assert off.status_code == 400 and rt.sessions.answers(record.session) == {}
    done = client.post(f"/asks/{ask.id}/answer", data={"value": "beta"}, headers=bearer)
    assert done.status_code == 200, done.text
    assert done.json()["left"] == 0 and done.json()["settled"] is None
    assert rt.runs.status(record.run_id) == "waiting"
    assert rt.sessions.answers(record.session)["ask_reviewer"].value == "beta"


def test_an_answer_made_against_another_artifact_is_refused_as_stale(
    rt: Runtime, client: TestClient
) -> None:
    """The page sends back the artifact ref it rendered the question from: an answer
    against another ref (the question changed under the person) is refused as stale
    and nothing is recorded; against the pinned ref it is taken. A choice whose options
    artifact no longer resolves cannot be answered at all."""
    record, _ = waiting_run(rt, asks=[])
    ref = rt.artifacts.put(record.run_id, {"options": ["alpha", "beta"]})
    _ask_by_ref(rt, record.run_id, ref)
    _login(client)
    page = client.get(f"/runs/{record.run_id}").text
    assert f'name="against" value="{ref}"' in page
    url = f"/asks/ask_ref_{record.run_id}/answer"
    bearer = {"authorization": f"Bearer {TOKEN}", "accept": "application/json"}
    other = rt.artifacts.put(record.run_id, {"options": ["gamma"]})
    stale = client.post(url, data={"value": "alpha", "against": other}, headers=bearer)
    assert stale.status_code == 400 and stale.json()["message"].startswith("stale:")
    assert rt.sessions.answers(record.session) == {}
    taken = client.post(url, data={"value": "alpha", "against": ref}, headers=bearer)
    assert taken.status_code == 200, taken.text


def test_a_choice_whose_options_artifact_is_gone_cannot_be_answered() -> None:
    """Its options are unknown now: any value would pass unchecked, so none does."""
    from council.asks.pending import AnswerRefused, checked_answer

    ask = PendingAsk(
        id="ask_gone",
        run="run_x",
        ask=Ask(
            question="Pick one",
            component=Component(component_id="choice", props_ref="art_" + "a" * 22),
        ),
    )
    with pytest.raises(AnswerRefused, match="no longer resolves"):
        checked_answer(ask, "anything", None, 1, stored_props=None)
    assert (
        checked_answer(ask, "alpha", None, 1, stored_props={"options": ["alpha"]}).value == "alpha"
    )
    with pytest.raises(AnswerRefused, match=r"^stale: "):
        checked_answer(ask, "alpha", None, 1, {"options": ["alpha"]}, against="art_" + "b" * 22)
