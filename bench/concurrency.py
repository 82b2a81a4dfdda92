"""Concurrency: one worker process holding 500 model reviews in flight at once.

A fake OpenAI server runs in its OWN process (so it does not share the worker's CPU) and
answers every request with a stream lasting 2000 ms (21 SSE events, 100 ms apart). It is
one asyncio loop serving ``aiohttp.web`` (listen backlog 2048, no access log): the events
of ``tests.fakes.FakeOpenAI`` for the scenario, rendered once at start and sent as
HTTP/1.1 chunks, the first at once and event i at i * 100 ms after it (deadlines, not
sleeps in a row, so a stream never drifts past 2000 ms). A thread per connection (the
tests' fake) spread the arrival of 500 requests over ~200 ms by itself; this one takes
them in ~50 ms. Then:

* council: a real redis-server, ONE ``celery worker`` process (threads pool,
  ``--threads`` threads), and councils of ``--participants`` ``openai`` reviewers all
  pointed at the fake, dispatched and awaited as ``council review`` does, for each
  ``--batch-sizes`` value (``COUNCIL_BATCH_SIZE``: model reviewers per
  ``council.review_batch`` task; all of a task's reviews stream on the worker's one
  asyncio loop). Clocks are long (backstop 600 s, idle 300 s): nothing stops. The very
  first council is cold (imports, connections, SDK clients); the following ones are warm.
* baselines, measured in the same run against the same fake, each in a fresh process:
  ``asyncio + aiohttp`` (one ClientSession with an unlimited TCPConnector, a coroutine
  per stream, every ``data:`` line parsed: the floor of Python on this machine),
  ``asyncio + httpx2`` (one AsyncClient, a task per stream, every event parsed),
  ``asyncio + openai SDK`` (the reviewers' own stack without the council: one
  ``AsyncOpenAI`` on the SDK's aiohttp transport, its public ``post``, our SSE reader:
  the floor of any council on this SDK) and ``threads + openai SDK`` (a thread per
  stream, one shared httpx2.Client: the reviewers' stack before the stream loop). Every
  baseline imports its libraries and builds its client objects (and, for the threads,
  starts them) BEFORE its clock starts, as a warm worker has them already. The
  ``asyncio + openai SDK`` baseline runs again before every council (interleaved: the
  noise of a shared machine falls on both alike).

Per row: the most requests in flight at the server, the wall time from dispatch to
settled (baselines: from start to the last stream consumed), the overhead = wall - 2000
ms and as a % of 2000 ms (target ≤ 10 %), when the first and last request reached the
server, the CPU seconds the client process used, its peak RSS (VmHWM), its most
threads, and the fake server's CPU seconds meanwhile.

The last lines compare each batch size's warm median with the SDK baseline: what the
council itself adds to the same streams; and the worker's CPU per stream (the least of the
warm councils) with the SDK's (the least of its runs), against issue 27's goal of 1.2x.
The worker's CPU is the whole council's: its tasks, Redis, reading every answer and
filing the 500 findings (one per reviewer, all on one line: they agree); the SDK's only
parses the events.

Run: ``python bench/concurrency.py [--participants 500] [--councils 3] [--batch-sizes
64,500] [--threads 32] [--profile worker.txt]`` (``--profile``: py-spy, when installed,
records the worker's GIL holders during the last council, as collapsed stacks; it slows
the worker down).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.headline import headline  # noqa: E402
from tests.fakes import FakeOpenAI, Scenario  # noqa: E402
from tests.gitrepo import commit, git, new_repo  # noqa: E402
from tests.services import (  # noqa: E402
    ServiceError,
    provider_env,
    start_redis,
    stop_group,
    worker_argv,
)
from workers.app.celery_config import create_app  # noqa: E402
from workers.app.clock import now_ms  # noqa: E402
from workers.app.logging import configure_logging  # noqa: E402
from workers.app.services import Runtime, build_runtime  # noqa: E402
from workers.app.settings import Settings  # noqa: E402
from workers.coordinator.dispatch import open_and_dispatch  # noqa: E402
from workers.coordinator.preparation import ReviewOptions, Round, prepare  # noqa: E402
from workers.coordinator.waiting import Waiter  # noqa: E402

STREAM_MS = 2000
"""How long every scripted answer streams, in milliseconds."""

INTERVAL_MS = 100
"""The pause before every SSE event after the first, in milliseconds."""

TARGET_PCT = 10.0
"""The overhead target: wall - STREAM_MS at most this % of STREAM_MS."""

KEY = "sk-bench-0123456789abcdef"
"""The key the fake expects and the worker is given (a fake key, never printed)."""

MODEL = "fake-model"

ANSWER = json.dumps(
    {
        "findings": [
            {
                "subject": "debug print left in",
                "label": "nitpick",
                "severity": "minor",
                "location": {"kind": "line", "file": "app.py", "start": 2},
            }
        ]
    }
)


def scenario() -> Scenario:
    """The answer every request gets: ANSWER in pieces, STREAM_MS long in all."""
    events = STREAM_MS // INTERVAL_MS + 1  # role chunk + pieces + finish + usage + [DONE]
    pieces = events - 4
    size = math.ceil(len(ANSWER) / pieces)
    text = ANSWER.ljust(size * pieces)
    made = Scenario(text=text, chunk_chars=size, interval_ms=INTERVAL_MS)
    rendered, final = FakeOpenAI().render(made, {"stream_options": {"include_usage": True}})
    assert (len(rendered) + len(final) - 1) * INTERVAL_MS == STREAM_MS
    return made


# -- process measurements ---------------------------------------------------------------


def vm_hwm_kib(pid: int) -> int:
    """Peak resident set size of ``pid`` (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def vm_rss_kib(pid: int) -> int:
    """Current resident set size of ``pid`` (VmRSS), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def threads_of(pid: int) -> int:
    """How many threads ``pid`` has now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


@dataclass
class Row:
    """One measured round: a council or a baseline."""

    mode: str
    streams: int
    max_in_flight: int
    wall_ms: float
    first_ms: float
    last_ms: float
    cpu_s: float
    peak_rss_mib: float
    threads: int = 0
    fake_cpu_s: float = 0.0

    @property
    def overhead_ms(self) -> float:
        return self.wall_ms - STREAM_MS

    @property
    def overhead_pct(self) -> float:
        return 100 * self.overhead_ms / STREAM_MS


# -- the fake server, in its own process --------------------------------------------------


class _Counters:
    """What the fake's ``stats`` command reports (one asyncio loop: no lock needed)."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.bad_key = 0

    def reset(self) -> None:
        """Forget the requests; the maximum restarts from the streams still playing."""
        self.arrivals.clear()
        self.bad_key = 0
        self.max_in_flight = self.in_flight

    def stats(self) -> dict[str, Any]:
        return {
            "count": len(self.arrivals),
            "max_in_flight": self.max_in_flight,
            "in_flight": self.in_flight,
            "arrivals": self.arrivals,
            "bad_key": self.bad_key,
        }


async def _serve_async() -> None:
    """The fake on one asyncio loop: aiohttp.web for HTTP, stdin read by the same loop."""
    from aiohttp import web

    made = scenario()
    events, final = FakeOpenAI().render(made, {"stream_options": {"include_usage": True}})
    played = events + final  # the bytes tests.fakes.FakeOpenAI streams for this scenario
    interval = made.interval_ms / 1000
    counters = _Counters()
    unauthorized = json.dumps(
        {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
    )
    loop = asyncio.get_running_loop()

    async def completions(request: web.Request) -> web.StreamResponse:
        counters.arrivals.append(time.monotonic())
        counters.in_flight += 1
        counters.max_in_flight = max(counters.max_in_flight, counters.in_flight)
        try:
            await request.read()
            auth = request.headers.get("Authorization", "")
            if not (auth[:7].lower() == "bearer " and auth[7:] == KEY):
                counters.bad_key += 1
                return web.Response(status=401, text=unauthorized, content_type="application/json")
            response = web.StreamResponse(
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
            )
            response.enable_chunked_encoding()
            await response.prepare(request)
            start = loop.time()
            for index, event in enumerate(played):
                if index:  # event i at start + i * interval: no drift over the stream
                    await asyncio.sleep(max(0.0, start + index * interval - loop.time()))
                await response.write(event)
            await response.write_eof()
            return response
        finally:
            counters.in_flight -= 1

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    await site.start()
    port = runner.addresses[0][1]
    print(json.dumps({"base_url": f"http://127.0.0.1:{port}/v1", "pid": os.getpid()}), flush=True)

    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    try:
        while line := await stdin.readline():
            command = line.decode().strip()
            if command == "reset":
                counters.reset()
                print(json.dumps({"ok": True}), flush=True)
            elif command == "stats":
                print(json.dumps(counters.stats()), flush=True)
            elif command == "quit":
                break
    finally:
        await runner.cleanup()


def serve() -> None:
    """``--serve``: run the fake; stdin commands ``stats``/``reset``/``quit``, JSON on stdout."""
    asyncio.run(_serve_async())


class FakeProcess:
    """The fake server's process, driven over its stdin/stdout."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = json.loads(self._line())
        self.base_url: str = hello["base_url"]
        self.pid: int = hello["pid"]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the fake server's process ended")
        return line

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self._line())
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _settled_stats(fake: FakeProcess, expected: int, t0: float) -> tuple[int, float, float]:
    """Max in flight, and first/last arrival (ms after ``t0``) of the last round's requests."""
    stats = fake.ask("stats")
    if stats["count"] != expected or stats["bad_key"]:
        raise RuntimeError(
            f"the fake saw {stats['count']} requests ({stats['bad_key']} with a bad key), "
            f"expected {expected}"
        )
    arrivals = [at for at in stats["arrivals"] if at >= t0] or stats["arrivals"]
    return (
        int(stats["max_in_flight"]),
        (min(arrivals) - t0) * 1000,
        (max(arrivals) - t0) * 1000,
    )


# -- baselines: the same streams without the council --------------------------------------


BODY: dict[str, Any] = {
    "model": MODEL,
    "messages": [{"role": "user", "content": "review"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}
"""The request body every baseline stream sends."""


async def _timed_gather(streams: list[Coroutine[Any, Any, int]]) -> dict[str, float]:
    """Await ``streams`` (each returns its parsed events) together, timed: t0, wall ms,
    CPU s, threads. Called on the loop that already holds the built client."""
    t0 = time.monotonic()
    c0 = cpu_s(os.getpid())
    counts = await asyncio.gather(*streams)
    wall = time.monotonic() - t0
    used = cpu_s(os.getpid()) - c0
    assert all(c == counts[0] > 0 for c in counts), "a stream was cut short"
    return {"t0": t0, "wall_ms": wall * 1000, "cpu_s": used, "threads": threads_of(os.getpid())}


def baseline_httpx(base_url: str, n: int) -> dict[str, float]:
    """``n`` streams consumed at once by asyncio + httpx2, every event parsed."""
    import httpx2

    async def one(client: httpx2.AsyncClient) -> int:
        chunks = 0
        async with client.stream(
            "POST",
            f"{base_url}/chat/completions",
            json=BODY,
            headers={"Authorization": f"Bearer {KEY}"},
        ) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line[6:])
                    chunks += 1
        return chunks

    async def all_of() -> dict[str, float]:
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=64)
        async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
            return await _timed_gather([one(client) for _ in range(n)])

    return asyncio.run(all_of())


def baseline_aiohttp(base_url: str, n: int) -> dict[str, float]:
    """``n`` streams consumed at once by asyncio + aiohttp, every event parsed."""
    import aiohttp

    url = f"{base_url}/chat/completions"
    headers = {"Authorization": f"Bearer {KEY}"}

    async def one(session: aiohttp.ClientSession) -> int:
        chunks = 0
        async with session.post(url, json=BODY, headers=headers) as response:
            response.raise_for_status()
            async for raw in response.content:  # one line at a time
                line = raw.rstrip(b"\r\n")
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    json.loads(line[6:])
                    chunks += 1
        return chunks

    async def all_of() -> dict[str, float]:
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=60)
        ) as session:
            return await _timed_gather([one(session) for _ in range(n)])

    return asyncio.run(all_of())


def baseline_sdk(base_url: str, n: int) -> dict[str, float]:
    """``n`` streams consumed at once by a thread each through the openai SDK."""
    import httpx2
    import openai

    http = httpx2.Client(
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=64), timeout=60
    )
    texts: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(n + 1)

    def one() -> None:
        client = openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0, http_client=http)
        start.wait()
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "review"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        pieces: list[str] = []
        with stream:
            for chunk in stream:
                for choice in chunk.choices:
                    pieces.append(choice.delta.content or "")
        with lock:
            texts.append("".join(pieces))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    c0 = cpu_s(os.getpid())
    start.wait()
    t0 = time.monotonic()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - t0
    assert len(texts) == n and all(t.strip() == ANSWER for t in texts), "a stream went wrong"
    return {"t0": t0, "wall_ms": wall * 1000, "cpu_s": cpu_s(os.getpid()) - c0, "threads": n + 1}


def baseline_sdk_async(base_url: str, n: int) -> dict[str, float]:
    """``n`` streams consumed at once on one loop through the openai SDK's async client,
    as the reviewers use it: one ``AsyncOpenAI`` over the SDK's aiohttp transport
    (``DefaultAioHttpClient``), the request sent by its public ``post``, the body read raw
    and every event parsed into a dict. One request first warms the SDK's lazy imports and caches,
    as a warm worker has them (it is not timed and not counted by the parent)."""
    import httpx2
    import openai

    from reviewers.models.sse import EventReader

    async def one(client: openai.AsyncOpenAI) -> int:
        chunks = 0
        stream = await client.post(
            "/chat/completions",
            cast_to=object,
            body=BODY,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        async with stream:
            reader = EventReader()
            async for piece in stream.response.aiter_bytes():
                for event in reader.feed(piece):
                    if not event.data.startswith("[DONE]"):
                        json.loads(event.data)
                        chunks += 1
        return chunks

    async def all_of() -> dict[str, float]:
        http = openai.DefaultAioHttpClient(
            limits=httpx2.Limits(max_connections=100_000, max_keepalive_connections=64),
            timeout=60,
        )
        async with openai.AsyncOpenAI(
            api_key=KEY, base_url=base_url, max_retries=0, http_client=http
        ) as client:
            await one(client)
            result = await _timed_gather([one(client) for _ in range(n)])
        result["warm"] = 1
        return result

    return asyncio.run(all_of())


def run_baseline(kind: str, fake: FakeProcess, n: int) -> Row:
    """One baseline in a fresh process (its own peak RSS), against the fake."""
    fake.ask("reset")
    fake_c0 = cpu_s(fake.pid)
    done = subprocess.run(
        [sys.executable, __file__, "--baseline", kind, "--url", fake.base_url, "-n", str(n)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"baseline {kind} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    max_in_flight, first, last = _settled_stats(fake, n + int(result.get("warm", 0)), result["t0"])
    names = {
        "httpx": "baseline asyncio+httpx2",
        "aiohttp": "baseline asyncio+aiohttp",
        "sdk-async": "baseline asyncio+openai SDK",
        "sdk": "baseline threads+openai SDK",
    }
    return Row(
        mode=names[kind],
        streams=n,
        max_in_flight=max_in_flight,
        wall_ms=result["wall_ms"],
        first_ms=first,
        last_ms=last,
        cpu_s=result["cpu_s"],
        peak_rss_mib=result["peak_kib"] / 1024,
        threads=int(result.get("threads", 0)),
        fake_cpu_s=cpu_s(fake.pid) - fake_c0,
    )


def baseline_main(kind: str, url: str, n: int) -> None:
    """``--baseline KIND``: run one baseline here and print its JSON result."""
    raise_fd_limit()
    runs = {
        "httpx": baseline_httpx,
        "aiohttp": baseline_aiohttp,
        "sdk-async": baseline_sdk_async,
        "sdk": baseline_sdk,
    }
    result = runs[kind](url, n)
    result["peak_kib"] = vm_hwm_kib(os.getpid())
    print(json.dumps(result), flush=True)


# -- the council --------------------------------------------------------------------------


def raise_fd_limit() -> None:
    """Open files up to the hard limit: 500 streams are 500 sockets per process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _setup(tmp: Path, base_url: str, participants: int) -> ReviewOptions:
    repo = new_repo(tmp / "repo", {"app.py": "x = 1\n"})
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x = 1\nprint(x)\n"}, "change")
    tables = "".join(
        f'[[reviewers]]\nid = "m{i}"\nbackend = "openai"\nmodel = "{MODEL}"\n'
        f'base_url = "{base_url}"\n\n'
        for i in range(participants)
    )
    roster = tmp / "council.toml"
    roster.write_text(
        "[council]\nbackstop_ms = 600000\nidle_ms = 300000\nanswer_ms = 0\n\n" + tables
    )
    return ReviewOptions(repo=repo, base=base, roster=roster, session="bench")


@contextmanager
def _services(
    tmp: Path, threads: int, base_url: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server and ONE celery worker (threads pool) whose provider registry holds
    the fake at ``base_url``; yields (url, worker)."""
    try:
        server, url = start_redis(None, "--maxclients", "10000")
    except ServiceError as exc:
        sys.exit(str(exc))
    worker: subprocess.Popen[bytes] | None = None
    try:
        env = {
            **os.environ,
            "COUNCIL_REDIS_URL": url,
            "COUNCIL_WORK_DIR": str(tmp / "work"),
            "OPENAI_API_KEY": KEY,
            **provider_env(tmp, base_url, "OPENAI_API_KEY"),
        }
        worker = subprocess.Popen(
            worker_argv("bench", threads, "WARNING"),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp / "worker.log", "wb"),  # noqa: SIM115 (closed with the process)
            start_new_session=True,
        )
        yield url, worker
    finally:
        if worker is not None:
            stop_group(worker, grace_s=30)
        server.terminate()
        server.wait(timeout=10)


def _one_council(rt: Runtime, app: Any, prepared: Round, number: int) -> tuple[float, float]:
    """Dispatch one council and wait for it; (t0 monotonic, wall ms). Raises unless all
    participants answered."""
    created = now_ms()
    round_ = prepared.rerun(f"conc{os.getpid()}x{number}x{created}", created, created + 900_000)
    record = round_.record
    t0 = time.monotonic()
    open_and_dispatch(app, rt, round_)
    report = Waiter(rt, record, lambda _s: None, lambda: False).wait()
    wall_ms = (time.monotonic() - t0) * 1000
    bad = [(p.id, p.state, p.failure, p.stop) for p in report.participants if p.state != "answered"]
    if report.status != "settled" or bad:
        raise RuntimeError(f"council {number} did not settle whole: {report.status} {bad[:5]}")
    return t0, wall_ms


def _peak_threads(pid: int, stop: threading.Event, seen: list[int]) -> None:
    while not stop.wait(0.05):
        try:
            seen.append(threads_of(pid))
        except OSError:
            return


def run_councils(
    tmp: Path,
    fake: FakeProcess,
    participants: int,
    councils: int,
    threads: int,
    batch_sizes: list[int],
    profile: Path | None = None,
    before_each: Callable[[], Row] | None = None,
) -> tuple[list[Row], float]:
    """The council rows, and the worker's idle RSS (MiB): ``councils`` councils for each
    of ``batch_sizes`` (``COUNCIL_BATCH_SIZE``: model participants per task), the very
    first one cold, the others warm.

    ``profile``: py-spy records the worker (GIL holders only, raw collapsed stacks) into
    this file during the last council. ``before_each``: a baseline run before every
    council (interleaved: the machine's noise falls on both alike), its rows listed too."""
    options = _setup(tmp, fake.base_url, participants)
    rows: list[Row] = []
    with _services(tmp, threads, fake.base_url) as (url, worker):
        settings = Settings(redis_url=SecretStr(url))
        app = create_app(settings)
        for _ in range(600):
            if worker.poll() is not None:
                raise RuntimeError((tmp / "worker.log").read_text(errors="replace")[-3000:])
            if app.control.ping(timeout=0.2):
                break
        base_rt = build_runtime(settings)
        prepared = prepare(settings, options, mode="distributed")
        idle_rss = vm_rss_kib(worker.pid) / 1024
        plan = [(size, n) for size in batch_sizes for n in range(councils)]
        for number, (size, nth) in enumerate(plan):
            rt = replace(base_rt, settings=settings.model_copy(update={"batch_size": size}))
            if before_each is not None:
                rows.append(before_each())
            fake.ask("reset")
            seen: list[int] = []
            stop = threading.Event()
            sampler = threading.Thread(target=_peak_threads, args=(worker.pid, stop, seen))
            sampler.start()
            spy = None
            if profile is not None and number == len(plan) - 1:
                spy_args = ["record", "--gil", "--format", "raw", "--rate", "200"]
                spy = subprocess.Popen(
                    ["py-spy", *spy_args, "-p", str(worker.pid), "-o", str(profile)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)  # py-spy attaches
            c0, fake_c0 = cpu_s(worker.pid), cpu_s(fake.pid)
            try:
                t0, wall_ms = _one_council(rt, app, prepared, number)
            finally:
                stop.set()
                sampler.join()
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(timeout=60)
            used = cpu_s(worker.pid) - c0
            max_in_flight, first, last = _settled_stats(fake, participants, t0)
            rows.append(
                Row(
                    mode=f"council, batch {size}, " + ("cold" if number == 0 else f"warm #{nth}"),
                    streams=participants,
                    max_in_flight=max_in_flight,
                    wall_ms=wall_ms,
                    first_ms=first,
                    last_ms=last,
                    cpu_s=used,
                    peak_rss_mib=vm_hwm_kib(worker.pid) / 1024,
                    threads=max(seen, default=0),
                    fake_cpu_s=cpu_s(fake.pid) - fake_c0,
                )
            )
        # open_and_dispatch released every chord's results; close the result consumer
        # while redis-server is still up.
        consumer = getattr(app.backend, "result_consumer", None)
        if consumer is not None:
            consumer.stop()
        app.close()
        gc.collect()
    return rows, idle_rss


def print_table(rows: list[Row], idle_rss: float, participants: int, threads: int) -> None:
    """The result table."""
    print(
        f"concurrency: {participants} openai streams of {STREAM_MS} ms each against a fake "
        f"server in its own process; council = 1 celery worker (threads pool, -c {threads}); "
        f"{os.cpu_count()} CPUs"
    )
    head = (
        f"{'mode':<30}{'in flight':>10}{'wall ms':>9}{'overhead':>10}{'%':>7}{'met':>5}"
        f"{'1st req':>9}{'last req':>9}{'CPU s':>7}{'peak RSS':>10}{'threads':>8}{'fake CPU':>9}"
    )
    print(head)
    for row in rows:
        met = ("yes" if row.overhead_pct <= TARGET_PCT else "NO") if "council" in row.mode else ""
        print(
            f"{row.mode:<30}{row.max_in_flight:>10}{row.wall_ms:>9.0f}{row.overhead_ms:>10.0f}"
            f"{row.overhead_pct:>6.1f}%{met:>5}{row.first_ms:>9.0f}{row.last_ms:>9.0f}"
            f"{row.cpu_s:>7.1f}{row.peak_rss_mib:>8.0f}Mi{row.threads:>8}{row.fake_cpu_s:>9.1f}"
        )
    print(
        f"overhead = wall - {STREAM_MS} ms (target <= {TARGET_PCT:.0f}% for the council); "
        f"1st/last req = ms after dispatch that the first/last request reached the server; "
        f"CPU s = the client process's CPU; peak RSS = its VmHWM (council: the worker, "
        f"idle {idle_rss:.0f} MiB before the first council); fake CPU = the fake server "
        f"process's CPU s meanwhile"
    )


SDK = "baseline asyncio+openai SDK"

CPU_GOAL = 1.2
"""Issue 27's goal: the council's CPU per stream at most this times the SDK path's."""


def print_floor(rows: list[Row]) -> None:
    """The council's own share: its warm walls against the SDK baseline's wall (the
    fastest of its runs), and its CPU per stream against the SDK's (the least of each:
    the runs the machine's noise hurt least)."""
    sdk = [r for r in rows if r.mode == SDK]
    floor = min(sdk, key=lambda r: r.wall_ms)
    sdk_cpu = min(r.cpu_s for r in sdk) / floor.streams * 1000
    sizes = sorted({r.mode.split(",")[1] for r in rows if r.mode.startswith("council")})
    for size in sizes:
        warm = [r for r in rows if f",{size}, warm" in r.mode]
        if not warm:
            continue
        median = statistics.median(r.wall_ms for r in warm)
        print(
            f"council,{size}: warm median {median - STREAM_MS:.0f} ms over {STREAM_MS} ms; "
            f"{median - floor.wall_ms:+.0f} ms over the same streams through the SDK alone "
            f"({floor.overhead_ms:.0f} ms, the floor of any council on this SDK and machine)"
        )
        cpu = min(r.cpu_s for r in warm) / warm[0].streams * 1000
        ratio = cpu / sdk_cpu
        print(
            f"council,{size}: CPU per stream {cpu:.2f} ms (least of {len(warm)} warm) against "
            f"the SDK's {sdk_cpu:.2f} ms (least of {len(sdk)}, interleaved): {ratio:.2f}x "
            f"(goal <= {CPU_GOAL}x: {'met' if ratio <= CPU_GOAL else 'not met'})"
        )
        headline(
            "concurrency",
            f"worker CPU per stream, {warm[0].streams} streams,{size}",
            f"{cpu:.2f} ms",
            f"{sdk_cpu:.2f} ms (asyncio + openai SDK, interleaved)",
            round(ratio, 2),
            f"<= {CPU_GOAL}x",
            ratio <= CPU_GOAL,
        )


def main() -> None:
    """Measure and print the concurrency table (or serve/run one baseline when asked)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=500)
    parser.add_argument(
        "--councils", type=int, default=3, help="councils per batch size (the very first is cold)"
    )
    parser.add_argument(
        "--batch-sizes",
        default=f"{Settings().batch_size},500",
        help="COUNCIL_BATCH_SIZE values to run, comma-separated (default: the setting's, 500)",
    )
    parser.add_argument(
        "--threads", type=int, default=32, help="the worker's threads (a batch task holds one)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="py-spy (when installed) records the worker during the last council to this file",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 100 participants, 2 councils, one size"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--baseline", choices=("httpx", "aiohttp", "sdk-async", "sdk"), help=argparse.SUPPRESS
    )
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("-n", type=int, default=500, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.participants, args.councils, args.batch_sizes = 100, 2, str(Settings().batch_size)
    raise_fd_limit()
    if args.serve:
        serve()
        return
    if args.baseline:
        baseline_main(args.baseline, args.url, args.n)
        return
    configure_logging(level="WARNING")
    fake = FakeProcess()
    try:
        kinds = ("aiohttp", "httpx", "sdk")
        rows = [run_baseline(kind, fake, args.participants) for kind in kinds]
        with tempfile.TemporaryDirectory() as raw:
            profile = args.profile if args.profile and shutil.which("py-spy") else None
            if args.profile and profile is None:
                print("py-spy is not installed: no profile", file=sys.stderr)
            sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]
            councils, idle_rss = run_councils(
                Path(raw),
                fake,
                args.participants,
                args.councils,
                args.threads,
                sizes,
                profile,
                before_each=lambda: run_baseline("sdk-async", fake, args.participants),
            )
        rows += councils
    finally:
        fake.close()
    print_table(rows, idle_rss, args.participants, args.threads)
    print_floor(rows)


if __name__ == "__main__":
    main()
