"""The one small interface every reviewer backend implements.

A backend turns (participant, prompt, clocks) into an answer plus what it journalled as
it went, and a stop or a failure. It never raises for a reviewer fault: a program that
cannot start is a :class:`ReviewResult` with ``failure`` set; a reviewer our clocks
stopped is a result with ``stop`` set and whatever answer had arrived (docs/harvest.md §7).

Source: docs/architecture.md "Layers" (reviewers), docs/harvest.md §7.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from council.evidence import ScriptRow
from council.model.backend_result import ReviewResult, Usage
from council.model.participant import Participant
from reviewers.sandbox.bubblewrap import SandboxPolicy

if TYPE_CHECKING:
    from council.asks.paused import Resumption


class JournalSink(Protocol):
    """Where a reviewer's recorded findings go, as they are recorded.

    ``append`` stores one raw entry (a JSON text, stored as given) and returns the
    one-sentence reply of docs/harvest.md §1 ("Recorded." or "Not recorded (REASON); keep it
    for your final answer."). It never raises.
    """

    def append(self, raw: str) -> str: ...


class ScriptSink(Protocol):
    """Where a reviewer's script runs are recorded, one row per call, as they end.

    ``append`` stores one :class:`~council.evidence.ScriptRow` of the current attempt and
    returns ``"Recorded."`` or a sentence saying why it was not (the store is full, or
    failed). It never raises. Source: docs/evidence-and-asks.md §1.
    """

    def append(self, row: ScriptRow) -> str: ...


class _IgnoredScripts:
    """A :class:`ScriptSink` that keeps nothing (tests, tools without a store)."""

    def append(self, row: ScriptRow) -> str:
        return "Recorded."


ignore_scripts: ScriptSink = _IgnoredScripts()
"""The default :class:`ScriptSink`: rows are dropped."""


class ArtifactDesk(Protocol):
    """The run's artifact store as a reviewer's tools reach it (``store_artifact``, and
    the scope an ``ask_human`` component's ``props_ref`` must resolve in).

    ``put`` stores a JSON value in the run's scope and returns its new ref (``art_…``);
    it raises ValueError whose message says why it was refused (over a cap, the run
    gone), in words safe to show the model. ``resolves`` says whether a ref names an
    artifact of this run (never raises). Source: docs/evidence-and-asks.md §2.
    """

    def put(self, value: JsonValue) -> str: ...

    def resolves(self, ref: str) -> bool: ...


class RateLimiter(Protocol):
    """Admission to a provider shared by every worker (requests and tokens per minute).

    ``acquire`` blocks until one request estimated at ``tokens`` may be sent, or until
    ``deadline`` (a ``time.monotonic()`` value) passes, and returns whether it was
    admitted. ``correct`` corrects the token count once the real usage is known. ``key``
    is ``"<backend>:<model>"``; the limiter holds it to every limit covering it (the
    model's and the provider's), so a caller acquires once per request.
    """

    def acquire(self, key: str, tokens: int, deadline: float) -> bool: ...

    def correct(self, key: str, estimated: int, actual: int) -> None: ...


class CostBudget(Protocol):
    """The round's cost budget (``max_cost_usd``) as one participant's requests reach it,
    shared by every worker. Source: docs/guide.md "A cost budget".

    ``reserve`` holds a request's estimate (input tokens at the input price, the output
    cap at the output price) and returns its reservation id, or None when it does not fit
    what is left: the request must not be sent. ``settle`` releases a reservation and
    counts what the request used, once (a second call changes nothing). ``wrap_up_due``
    says whether the round has spent enough of it that reviewers should wrap up. Raises
    what the store raises; a caller that cannot reserve sends nothing (fail closed).
    """

    def reserve(self, input_tokens: int, output_tokens: int) -> str | None: ...

    def settle(self, reservation: str, usage: Usage) -> None: ...

    def wrap_up_due(self) -> bool: ...


class EventLog(Protocol):
    """Where a backend reports what it did, for the worker's logs (``tool_call`` …).

    Called with an event name and plain fields (numbers, short text; never a secret,
    never a field named like the task's ids: ``attempt`` is the review's, not a
    request's); the worker renders them as structured log lines with the task's bound
    context, at ``warning`` for :data:`TROUBLE_EVENTS`, else at ``info``.
    """

    def __call__(self, event: str, **fields: object) -> None: ...


TROUBLE_EVENTS: frozenset[str] = frozenset({"model_retry", "rate_limiter_failed"})
"""Backend events an operator must see: a request to a provider retried (``model_retry``,
with ``request_attempt``, ``status``, ``reason`` and ``delay_ms``), the shared rate limiter
failing. A worker logs them at ``warning``; the rest (a tool call, an ask) at ``info``."""


def ignore_events(event: str, **fields: object) -> None:
    """An :class:`EventLog` that drops everything (the default)."""


def nothing_heard() -> int:
    """A ``ReviewRequest.heard`` for a journal no other process writes to (the default)."""
    return 0


@dataclass(frozen=True)
class ReviewRequest:
    """Everything a backend needs for one review; a None or empty field is "not given".

    * ``workdir``: the pinned head tree (``witness``: its commit); ``program`` and
      ``arg_files`` (index in ``options["args"]`` → file) come materialized from the BASE
      tree, so a change cannot swap the script an interpreter runs.
    * ``env``: council's ``COUNCIL_*`` variables for a child, whose environment is otherwise an
      allowlist (:func:`~reviewers.sandbox.bubblewrap.program_env`); ``sandbox`` None runs it
      unconfined without a note (trusted programs in tests; a worker always sets it).
    * ``secrets``: the values the ``api_key_env`` options name, read at the edge; never logged.
      ``changed_lines``: new-side path → the numbers of its added lines; ``pull_lines``
      the same of the whole pull request, in a round reviewing only the commits since the
      last (``--since-last``; an analyzer's result on them keeps its own lines).
    * ``heard()``: the attempt's journal entries, other processes' included (``council
      record``); cached, and a change is activity for the idle clock.
    * None: ``tool_read_max_bytes`` is :data:`reviewers.models.tools.READ_MAX_BYTES`,
      ``artifacts`` refuses a ``props_ref`` (``no-store``), ``resume`` is a fresh review,
      ``budget``: the round has no cost budget.
    * ``shared``: how many leading characters of ``prompt`` every reviewer of the round
      is sent (:class:`council.roster.prompt.Prompt`): where a model backend puts a prompt
      cache breakpoint; 0 places none.
    """

    participant: Participant
    prompt: str
    journal: JournalSink
    workdir: Path | None = None
    program: Path | None = None
    arg_files: Mapping[int, Path] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: SandboxPolicy | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    changed_paths: tuple[str, ...] = ()
    changed_lines: Mapping[str, frozenset[int]] = field(default_factory=dict)
    pull_lines: Mapping[str, frozenset[int]] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    rate_limiter: RateLimiter | None = None
    witness: str | None = None
    events: EventLog = ignore_events
    tool_read_max_bytes: int | None = None
    scripts: ScriptSink = ignore_scripts
    heard: Callable[[], int] = nothing_heard
    artifacts: ArtifactDesk | None = None
    resume: Resumption | None = None
    shared: int = 0
    budget: CostBudget | None = None


class Reviewer(Protocol):
    """A reviewer backend: one method, like an HTTP transport.

    The model backends (``openai``, ``anthropic``) also offer ``async def
    areview(request) -> ReviewResult``: the same review as a coroutine, which a worker's
    batch runs by the hundred on one event loop (:mod:`reviewers.models.stream_loop`);
    their ``review`` runs ``areview`` on that loop and waits.
    """

    def review(self, request: ReviewRequest) -> ReviewResult: ...
