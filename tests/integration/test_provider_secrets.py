"""Issue 24: a submitted roster cannot take the workers' secrets.

A real redis-server and a real ``celery worker`` holding (fake) ``OPENAI_API_KEY`` and
``AWS_SECRET_ACCESS_KEY``; a client whose environment holds only the Redis URL; a listener
of the submitter's (a threaded ``http.server`` of this test). The three attempts of the
issue: a model reviewer sent to the listener with ``api_key_env = "AWS_SECRET_ACCESS_KEY"``,
one sent there with the default key variable, and a ``command`` reviewer with ``env =
["AWS_SECRET_ACCESS_KEY"]`` that prints it. Each is refused by the worker (its registry
is the defaults: OpenAI's endpoint with OPENAI_API_KEY, no program variable), nothing
reaches the listener, and neither secret is in the report, the CLI's output or the
worker's log; a fourth reviewer answers, so one refusal costs one reviewer.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import ROOT, commit, git, new_repo
from tests.services import review_argv

pytestmark = pytest.mark.integration

OPENAI_SECRET = "sk-openai-fake-4b1d9c0e7a5f"
AWS_SECRET = "aws-fake-secret-Qm9vYmFyYmF6cXV4"
WORKER_SECRETS = {"OPENAI_API_KEY": OPENAI_SECRET, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}

PRINTER = """#!/bin/sh
printf '{"findings": [{"subject": "leaked %s", "label": "issue", "severity": "minor", ' \\
  "$AWS_SECRET_ACCESS_KEY"
printf '"location": {"kind": "line", "file": "app.py", "start": 2}}]}'
"""
"""The command reviewer of the third attempt: prints the variable it asked for."""

HONEST = json.dumps(
    {
        "findings": [
            {
                "subject": "eval of user input",
                "label": "issue",
                "severity": "critical",
                "location": {"kind": "line", "file": "app.py", "start": 2},
            }
        ]
    }
)


class Listener:
    """A threaded HTTP server that records every request (path, headers, body)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                outer.seen.append(f"{self.command} {self.path}\n{self.headers}\n{body}")
                self.send_response(400)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    with Listener() as running:
        yield running


AWS_MODEL = (
    'backend = "openai"\nmodel = "m"\nbase_url = "{url}"\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n'
)
DEFAULT_MODEL = 'backend = "openai"\nmodel = "m"\nbase_url = "{url}"\n'
PRINTING = 'backend = "command"\nprogram = "./printer.sh"\nenv = ["AWS_SECRET_ACCESS_KEY"]\n'
REPLAYED = 'backend = "replay"\nanswer = "honest.json"\n'


def _roster(folder: Path, url: str, reviewers: dict[str, str]) -> Path:
    """A roster beside the printer and the honest answer: ``reviewers`` maps ids to
    their table's body (``{url}`` is the listener's)."""
    folder.mkdir(exist_ok=True)
    printer = folder / "printer.sh"
    printer.write_text(PRINTER)
    printer.chmod(0o755)
    (folder / "honest.json").write_text(HONEST)
    tables = "".join(
        f'[[reviewers]]\nid = "{rid}"\n{body.format(url=url)}\n' for rid, body in reviewers.items()
    )
    roster = folder / f"{'-'.join(reviewers)}.toml"
    roster.write_text("[council]\nbackstop_ms = 60000\nidle_ms = 20000\nanswer_ms = 0\n\n" + tables)
    return roster


def _submit(repo: Path, base: str, roster: Path, out: Path, redis_url: str, home: Path) -> str:
    """``council review`` from a client whose environment holds only the Redis URL (and
    PATH, HOME); its stdout and stderr."""
    done = subprocess.run(
        review_argv(repo, base, roster, out, "--fail-on", "never"),
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "HOME": str(home), "COUNCIL_REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.exists(), done.stderr
    return done.stdout + done.stderr


def test_a_submitted_roster_cannot_take_the_workers_secrets(
    redis_url: str, start_worker: Any, listener: Listener, tmp_path: Path
) -> None:
    """Two rounds (a roster listing a key variable in a program's env beside the model
    naming it is refused by the client itself, and a hostile client would not stop)."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\ny = eval(input())\n"}, "change")
    start_worker("w1", env=WORKER_SECRETS)
    folder, home = tmp_path / "roster", tmp_path / "home"
    models = _roster(folder, listener.url, {"aws": AWS_MODEL, "honest": REPLAYED})
    programs = _roster(
        folder, listener.url, {"default": DEFAULT_MODEL, "printer": PRINTING, "honest": REPLAYED}
    )
    outs = [tmp_path / "models.json", tmp_path / "programs.json"]
    said = _submit(repo, base, models, outs[0], redis_url, home)
    said += _submit(repo, base, programs, outs[1], redis_url, home)
    reports = [out.read_text() for out in outs]
    people = {
        (n, p["id"]): p for n, text in enumerate(reports) for p in json.loads(text)["participants"]
    }

    assert listener.seen == []
    assert people[0, "honest"]["state"] == people[1, "honest"]["state"] == "answered"
    refused = {
        "aws": people[0, "aws"],
        "default": people[1, "default"],
        "printer": people[1, "printer"],
    }
    for pid, person in refused.items():
        assert person["state"] == "failed", (pid, person)
        assert person["failure"].startswith("refused by this worker: "), (pid, person)
    assert "holds no provider for the openai endpoint" in refused["aws"]["failure"]
    assert "with the key in AWS_SECRET_ACCESS_KEY" in refused["aws"]["failure"]
    assert "An operator adds it" in refused["default"]["failure"]
    assert "does not pass AWS_SECRET_ACCESS_KEY" in refused["printer"]["failure"]

    worker_log = (tmp_path / "w1.log").read_text(errors="replace")
    assert worker_log.count('"review_refused"') == 3
    for secret in (OPENAI_SECRET, AWS_SECRET):
        for place, text in (
            ("reports", "".join(reports)),
            ("CLI output", said),
            ("worker log", worker_log),
        ):
            assert secret not in text, place
