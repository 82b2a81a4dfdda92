"""The fault lab: a real redis-server with AOF that can be killed and restarted on its port,
real ``celery worker`` processes, and ``council review`` as a child process.

Every fault test builds one :class:`Lab`, starts what it needs, injects its fault, and
asserts on the settled report: every recorded finding filed exactly once, the run settled,
the right status and reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis

from tests.gitrepo import project_history_repo
from tests.services import ROOT, ServiceError, free_port, review_argv, worker_argv


def finding(i: int, who: str = "") -> dict[str, Any]:
    """One journal entry, distinct per ``i`` (and per reviewer ``who``)."""
    return {
        "subject": f"Journal finding {who}{i}",
        "label": "issue",
        "severity": "minor",
        "location": {"kind": "file", "file": "tools/runner.py"},
    }


@dataclass
class Lab:
    """One test's services. ``tmp``: its directory; everything it started is stopped by
    :meth:`close`."""

    tmp: Path
    port: int = field(default_factory=free_port)
    redis_proc: subprocess.Popen[bytes] | None = None
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    children: list[subprocess.Popen[Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    sentinel_port: int = 0
    """The port of the lab's sentinel (:meth:`start_sentinel`), 0: none."""
    netns: str | None = None
    """The network namespace redis-server runs in (:meth:`isolate`), None: this one."""
    _repo: tuple[Path, str] | None = None
    _veth: str = ""
    _made: bool = False
    _aof_sizes: list[tuple[float, int]] = field(default_factory=list)
    _watching: threading.Event | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    # -- the network --------------------------------------------------------------------
    def isolate(self) -> None:
        """Move redis-server behind a link of its own: a network namespace joined to this
        one by a veth pair, so :meth:`cut` and :meth:`heal` can take the link down and up
        (TCP connections stay open; packets just stop). Call before :meth:`start_redis`.
        Raises ``OSError``/``CalledProcessError`` when namespaces cannot be made here."""
        tag = f"{os.getpid() % 10000}{self.port % 1000}"
        net = self.port % 250 + 1
        self.netns, self._veth = f"cf{tag}", f"cfh{tag}"
        peer = f"cfr{tag}"
        self._made = True
        for argv in (
            ["ip", "netns", "add", self.netns],
            ["ip", "link", "add", self._veth, "type", "veth", "peer", "name", peer],
            ["ip", "link", "set", peer, "netns", self.netns],
            ["ip", "addr", "add", f"10.231.{net}.1/30", "dev", self._veth],
            ["ip", "link", "set", self._veth, "up"],
            [
                "ip",
                "netns",
                "exec",
                self.netns,
                "ip",
                "addr",
                "add",
                f"10.231.{net}.2/30",
                "dev",
                peer,
            ],
            ["ip", "netns", "exec", self.netns, "ip", "link", "set", peer, "up"],
            ["ip", "netns", "exec", self.netns, "ip", "link", "set", "lo", "up"],
        ):
            subprocess.run(argv, check=True, capture_output=True)
        self.host = f"10.231.{net}.2"

    def cut(self) -> None:
        """Take the link to redis-server down (nothing is refused: packets are lost)."""
        subprocess.run(["ip", "link", "set", self._veth, "down"], check=True)

    def heal(self) -> None:
        subprocess.run(["ip", "link", "set", self._veth, "up"], check=True)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)

    # -- redis ------------------------------------------------------------------------
    def start_redis(self, timeout_s: float = 15.0) -> None:
        """Start (or restart) redis-server on this lab's port and directory, AOF on."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceError("redis-server is missing")
        data = self.tmp / "redis"
        data.mkdir(exist_ok=True)
        argv = [
            *(["ip", "netns", "exec", self.netns] if self.netns else []),
            binary,
            "--port",
            str(self.port),
            "--bind",
            self.host,
            "--dir",
            str(data),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
            "--protected-mode",
            "no",
        ]
        log = self.tmp / "redis.log"
        deadline = time.monotonic() + timeout_s
        client = self.client()
        try:
            # A start that exits at once (the namespace's link not up yet) is tried again.
            while True:
                with log.open("ab") as out:
                    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
                self.redis_proc = proc
                while proc.poll() is None:
                    try:
                        client.ping()
                        return
                    except redis.ConnectionError:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.05)
                if time.monotonic() > deadline:
                    proc.kill()
                    proc.wait(timeout=5)  # reaped: no process left running past the test
                    tail = log.read_text(errors="replace")[-600:]
                    raise ServiceError(f"redis-server did not start: {tail}")
                time.sleep(0.2)
        finally:
            client.close()

    def start_sentinel(self, master_name: str = "council") -> str:
        """Make this lab's redis-server the master of a Sentinel group: a replica (AOF on)
        and one sentinel (quorum 1, the master down after 1 s unanswered). Workers and
        reviews started afterwards get the Sentinel URL, which is returned."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceError("redis-server is missing")
        replica_port, sentinel_port = free_port(), free_port()
        data = self.tmp / "replica"
        data.mkdir(exist_ok=True)
        replica = [
            *("--port", str(replica_port), "--bind", self.host, "--dir", str(data)),
            *("--appendonly", "yes", "--save", "", "--protected-mode", "no"),
            *("--replicaof", self.host, str(self.port)),
        ]
        # Sentinel rewrites its configuration file: one of its own, in the lab.
        conf = self.tmp / "sentinel.conf"
        conf.write_text(
            f"port {sentinel_port}\nbind {self.host}\nprotected-mode no\ndir {self.tmp}\n"
            f"sentinel monitor {master_name} {self.host} {self.port} 1\n"
            f"sentinel down-after-milliseconds {master_name} 1000\n"
            f"sentinel failover-timeout {master_name} 5000\n"
        )
        for name, argv in (
            ("replica", [binary, *replica]),
            ("sentinel", [binary, str(conf), "--sentinel"]),
        ):
            with (self.tmp / f"{name}.log").open("ab") as out:
                self.children.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))
        self.sentinel_port = sentinel_port
        replica_client: Any = redis.Redis(host=self.host, port=replica_port, socket_timeout=5)
        self.wait_for(
            "the replica in sync",
            lambda: (
                _answers(replica_client)
                and replica_client.info("replication").get("master_link_status") == "up"
            ),
            timeout_s=30,
        )
        replica_client.close()
        self.wait_for(
            "the sentinel to see the replica", lambda: self._sentinel_sees(master_name), 30
        )
        url = f"sentinel://{self.host}:{sentinel_port}/0?master_name={master_name}"
        self.env["COUNCIL_REDIS_URL"] = url
        return url

    def sentinel_master(self, master_name: str = "council") -> int | None:
        """The port of the master the lab's sentinel names now (None: it cannot say)."""
        client: Any = redis.Redis(host=self.host, port=self.sentinel_port, socket_timeout=5)
        try:
            found = client.execute_command("SENTINEL", "get-master-addr-by-name", master_name)
            return int(found[1]) if found else None
        except redis.RedisError:
            return None
        finally:
            client.close()

    def sentinel_failover(self, master_name: str = "council") -> None:
        """``SENTINEL FAILOVER``: promote the replica, demote the live master."""
        client: Any = redis.Redis(host=self.host, port=self.sentinel_port, socket_timeout=5)
        try:
            client.execute_command("SENTINEL", "FAILOVER", master_name)
        finally:
            client.close()

    def _sentinel_sees(self, master_name: str) -> bool:
        client: Any = redis.Redis(host=self.host, port=self.sentinel_port, socket_timeout=5)
        try:
            return bool(client.execute_command("SENTINEL", "replicas", master_name))
        except redis.RedisError:
            return False
        finally:
            client.close()

    def stop_redis(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop redis-server with ``sig`` (SIGTERM: it writes its AOF and exits; SIGKILL:
        what was written to the AOF is what survives)."""
        assert self.redis_proc is not None
        self.redis_proc.send_signal(sig)
        self.redis_proc.wait(timeout=30)
        self.redis_proc = None

    def _aof_tail(self) -> Path:
        """The AOF file Redis appends to now (Redis 7: the last ``incr`` file of the
        multi-part AOF in ``appendonlydir/``, as its manifest names it)."""
        folder = self.tmp / "redis" / "appendonlydir"
        manifest = next(folder.glob("*.manifest")).read_text().splitlines()
        incr = [line.split()[1] for line in manifest if line.split()[-1] == "i"]
        return folder / incr[-1]

    def watch_aof(self, every_s: float = 0.05) -> None:
        """Note the AOF's size every ``every_s`` from now on (:meth:`crash_redis` cuts
        the file back to one of them)."""
        stop = threading.Event()
        self._watching = stop

        def watch() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError, StopIteration, IndexError):
                    self._aof_sizes.append((time.monotonic(), self._aof_tail().stat().st_size))
                stop.wait(every_s)

        threading.Thread(target=watch, name="aof-watch", daemon=True).start()

    def crash_redis(self, lost_s: float = 1.0) -> bytes:
        """A host crash under ``appendfsync everysec``: SIGKILL redis-server, cut its AOF
        back to the size it had ``lost_s`` earlier (:meth:`watch_aof` must run), and start
        it again on the same port. Returns what was cut (the commands Redis forgot). Sizes
        are noted between whole writes of Redis's AOF buffer, so the cut falls on a
        command's end."""
        assert self._watching is not None, "watch_aof first"
        self.stop_redis(signal.SIGKILL)
        killed = time.monotonic()
        self._watching.set()
        tail = self._aof_tail()
        size = tail.stat().st_size
        earlier = [n for at, n in self._aof_sizes if at <= killed - lost_s]
        keep = earlier[-1] if earlier else size
        with tail.open("r+b") as f:
            f.seek(keep)
            cut = f.read(size - keep)
            f.truncate(keep)
        self.start_redis()
        return cut

    # -- workers ----------------------------------------------------------------------
    def start_worker(self, name: str, threads: int = 8, **env: str) -> subprocess.Popen[bytes]:
        """A real ``celery worker`` on every council queue; returns once it answers ping."""
        full = {
            **os.environ,
            "COUNCIL_REDIS_URL": self.url,
            "COUNCIL_RESTORE_INTERVAL_S": "1",
            "COUNCIL_WORK_DIR": str(self.tmp / f"work-{name}"),
            **self.env,
            **env,
        }
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            worker_argv(name, threads),
            cwd=ROOT,
            env=full,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.workers[name] = proc
        self._wait_ready(name, proc)
        return proc

    def _wait_ready(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        from celery import Celery

        probe = Celery("probe", broker=self.url, backend=self.url)
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise AssertionError(f"worker {name} exited early:\n{self.log(name)[-3000:]}")
                replies = probe.control.ping(timeout=0.5) or []
                if any(next(iter(r)).startswith(f"{name}@") for r in replies):
                    return
            raise AssertionError(f"worker {name} not ready:\n{self.log(name)[-3000:]}")
        finally:
            probe.close()

    def worker_process(self, url: str) -> subprocess.Popen[str]:
        """A ``council worker -c 1`` on ``url``, its output piped as text, not waited on
        (what it says at start, or its exit, is the test's to read)."""
        env = {**os.environ, "COUNCIL_REDIS_URL": url, "COUNCIL_WORK_DIR": str(self.tmp / "work")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "worker", "-c", "1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.children.append(proc)
        return proc

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker's whole process group (the worker and its reviewer programs)
        — or only the worker when its children are to be left (see the orphan test)."""
        proc = self.workers[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    # -- the review -------------------------------------------------------------------
    def repo(self) -> tuple[Path, str]:
        """The repository reviewed (made once: a second review reviews it again)."""
        if self._repo is None:
            self._repo = project_history_repo(self.tmp / "repo")
        return self._repo

    def review(self, roster: Path, *extra: str, **env: str) -> subprocess.Popen[str]:
        """``council review`` as a child process; its report goes to ``tmp/report.json``."""
        repo, base = self.repo()
        proc = subprocess.Popen(
            review_argv(repo, base, roster, self.tmp / "report.json", "--fail-on", "never", *extra),
            cwd=ROOT,
            env={**os.environ, "COUNCIL_REDIS_URL": self.url, **self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.children.append(proc)
        return proc

    def settled(self, review: subprocess.Popen[str], timeout_s: float = 120) -> dict[str, Any]:
        """The report of ``review`` once it exits 0 and its run is ``settled`` (else the
        test fails, naming its stderr or its participants)."""
        _, stderr = review.communicate(timeout=timeout_s)
        assert review.returncode == 0, stderr
        report = self.report()
        assert report["status"] == "settled", report["participants"]
        return report

    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.tmp / "report.json").read_text())
        return data

    def replay_roster(
        self,
        reviewers: int,
        entries: int = 3,
        latency_ms: int = 6000,
        backstop_ms: int = 30000,
        latencies: dict[int, int] | None = None,
    ) -> tuple[Path, set[str]]:
        """A roster of ``reviewers`` replay reviewers, each recording ``entries`` distinct
        findings over ``latency_ms`` (reviewer i over ``latencies[i]`` when given) and
        answering with its first; returns the roster and every subject recorded."""
        subjects: set[str] = set()
        text = f"[council]\nbackstop_ms = {backstop_ms}\nidle_ms = {backstop_ms}\nanswer_ms = 0\n\n"
        for r in range(reviewers):
            who = f"r{r}-"
            rows = [finding(i, who) for i in range(entries)]
            subjects.update(row["subject"] for row in rows)
            (self.tmp / f"{who}journal.jsonl").write_text(
                "".join(json.dumps(row) + "\n" for row in rows)
            )
            (self.tmp / f"{who}answer.txt").write_text(json.dumps({"findings": rows[:1]}))
            text += (
                f'[[reviewers]]\nid = "r{r}"\nbackend = "replay"\n'
                f'answer = "{who}answer.txt"\njournal = "{who}journal.jsonl"\n'
                f"latency_ms = {(latencies or {}).get(r, latency_ms)}\n\n"
            )
        roster = self.tmp / "council.toml"
        roster.write_text(text)
        return roster, subjects

    def wait_for(self, what: str, check: Any, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.05)

    def journal_entries(self) -> int:
        """Entries recorded in Redis so far, every participant and attempt."""
        client = self.client()
        try:
            return sum(
                cast(int, client.llen(k)) for k in client.scan_iter(match="council:run:*:journal:*")
            )
        finally:
            client.close()

    def close(self) -> None:
        for proc in self.children:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        for proc in self.workers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self.redis_proc is not None:
            self.redis_proc.kill()
            self.redis_proc.wait(timeout=10)
        if self._made and self.netns is not None:
            subprocess.run(["ip", "link", "del", self._veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)


def _answers(client: redis.Redis) -> bool:
    """Whether ``client``'s Redis answers a PING."""
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def assert_filed_once(report: dict[str, Any], subjects: set[str]) -> None:
    """Every recorded subject is filed, exactly once."""
    filed = [f["subject"] for f in report["findings"]]
    assert sorted(filed) == sorted(subjects), filed
