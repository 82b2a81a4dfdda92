"""The desk directory is the program's: the worker reads and writes it as hostile.

A command reviewer's sandbox binds ``scripts/`` read-write, so the program (which reads
the untrusted change) may plant links, FIFOs and huge files there. Unit tests of
:mod:`reviewers.sandbox.desk_files`, then the attack played by a real sandboxed program.
Source: docs/evidence-and-asks.md §1 (the desk).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from council.evidence import ScriptRow
from council.model.participant import Clocks, Participant
from reviewers.base import ReviewRequest
from reviewers.programs.command import CommandReviewer
from reviewers.sandbox.bubblewrap import SandboxPolicy
from reviewers.sandbox.desk_files import (
    DESK_MAX_BYTES,
    REQUEST_MAX_BYTES,
    Unreadable,
    read_request,
    sweep,
    write_reply,
)
from reviewers.sandbox.script_desk import DESK_NAMES
from tests.sandboxing import bwrap_or_skip


def test_a_request_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host-only.json"
    secret.write_text('{"language": "sh", "program": "id"}')
    link = tmp_path / "r.request.json"
    link.symlink_to(secret)
    with pytest.raises(Unreadable, match="symbolic link"):
        read_request(link)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "f.request.json"
    os.mkfifo(fifo)
    with pytest.raises(Unreadable, match="not a regular file"):
        read_request(fifo)


def test_a_huge_sparse_request_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.request.json"
    with big.open("wb") as out:
        out.truncate(512 * 1024 * 1024)
    with pytest.raises(Unreadable, match="over the cap"):
        read_request(big)
    small = tmp_path / "ok.request.json"
    small.write_text('{"a": 1}')
    assert read_request(small) == {"a": 1}


def test_a_reply_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """Links at the reply's name and at the old fixed staging name: the victim file is
    untouched, and the reply is a regular file holding the reply."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    desk = tmp_path / "scripts"
    desk.mkdir()
    (desk / ".w.reply.json.part").symlink_to(victim)
    (desk / "w.reply.json").symlink_to(victim)
    write_reply(desk / "w.reply.json", {"outcome": "ok"})
    assert victim.read_text() == "precious"
    reply = desk / "w.reply.json"
    assert not reply.is_symlink() and json.loads(reply.read_text()) == {"outcome": "ok"}


def test_the_sweep_keeps_only_small_known_files_within_the_budget(tmp_path: Path) -> None:
    desk = tmp_path / "scripts"
    desk.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (desk / "a.request.json").write_text("{}")
    (desk / ".a.request.json.part").write_text("{")
    (desk / "link.request.json").symlink_to(outside)
    (desk / "junk.bin").write_bytes(b"x" * 10)
    nested = desk / "nest"
    nested.mkdir()
    (nested / "deep.bin").write_bytes(b"y" * 10)
    (nested / "away").symlink_to(tmp_path)
    with (desk / "huge.request.json").open("wb") as out:
        out.truncate(REQUEST_MAX_BYTES + 1)
    assert sweep(desk, DESK_NAMES) == 4
    assert sorted(p.name for p in desk.iterdir()) == [".a.request.json.part", "a.request.json"]
    assert outside.read_text() == "keep me" and tmp_path.is_dir()
    for i in range(3):
        (desk / f"{i}.asked.json").write_bytes(b"z" * (DESK_MAX_BYTES // 2))
    sweep(desk, DESK_NAMES)
    assert sum(p.stat().st_size for p in desk.iterdir()) <= DESK_MAX_BYTES


class _Rows:
    def __init__(self) -> None:
        self.rows: list[ScriptRow] = []

    def append(self, row: ScriptRow) -> str:
        self.rows.append(row)
        return "Recorded."


class _Journal:
    def append(self, raw: str) -> str:
        return "Recorded."


def test_a_sandboxed_program_cannot_use_the_desk_to_reach_the_workers_files(
    tmp_path: Path,
) -> None:
    """The attack as a hostile program plays it, in real bubblewrap: a request that is a
    link to a host-only file is not run (its row says why), a link planted at the
    reply's staging name does not overwrite the host file, and the review goes on."""
    bwrap_or_skip()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    host_only = tmp_path / "host-only.json"
    host_only.write_text(json.dumps({"language": "sh", "program": "echo from-the-host"}))
    tree = tmp_path / "tree"
    tree.mkdir()
    program = tmp_path / "reviewer.sh"
    program.write_text(
        "#!/bin/sh\n"
        'D="$(dirname "$COUNCIL_JOURNAL")/scripts"\n'
        f'ln -s {host_only} "$D/r.request.json"\n'
        f'ln -s {victim} "$D/.w.reply.json.part"\n'
        'printf \'{"language": "sh", "program": "echo hi"}\' > "$D/w.request.json"\n'
        "sleep 1\n"
        "echo '{\"findings\": []}'\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    rows = _Rows()
    who = Participant(
        id="smells",
        backend="command",
        clocks=Clocks(backstop_ms=60_000, idle_ms=30_000),
        options={"program": str(program)},
    )
    request = ReviewRequest(
        participant=who,
        prompt="review",
        journal=_Journal(),
        workdir=tree,
        sandbox=SandboxPolicy(),
        scripts=rows,
    )
    result = CommandReviewer().review(request)
    assert result.failure is None, result
    assert victim.read_text() == "precious"
    texts = {r.text for r in rows.rows}
    assert "echo from-the-host" not in texts
    assert any(r.outcome == "ok" and r.text == "echo hi" for r in rows.rows), rows.rows


def test_an_oversized_request_is_answered_not_swept_away(tmp_path: Path) -> None:
    """The desk's sweep leaves request files to the desk, which refuses one over the cap
    with a reply: removed unread, it would leave `council run-script` waiting an hour."""
    desk = tmp_path / "scripts"
    desk.mkdir()
    with (desk / "big.request.json").open("wb") as out:
        out.truncate(REQUEST_MAX_BYTES + 1)
    (desk / "junk.bin").write_bytes(b"x")
    assert sweep(desk, DESK_NAMES, requests=(".request.json", ".ask.json")) == 1
    assert (desk / "big.request.json").exists()
