"""A model reviewer's conversation: turns, tools, retries, the wrap-up, usage.

A turn is one streamed request, retried whole on a retryable trouble
(:mod:`~reviewers.models.retry`); a turn that calls tools gets their replies and the next
follows, at most ``max_turns``, the last asked to answer without tools. Providers only say
how their wire looks (:mod:`~reviewers.models.provider`); the clocks (ms) are watched by
:mod:`~reviewers.models.stream_watch`. At the soft deadline ONE wrap-up turn asks for the
answer now; of it and the text before, the one with more findings is kept (a tie: the
wrap-up). An accepted ``ask_human`` pauses the conversation (``ReviewResult.paused``);
``request.resume`` goes on from it, clocks fresh. The rate limiter admits each request
under ``backend:model`` alone, held to the model's and the provider's limits.

Source: docs/harvest.md §1 and §7, docs/identity-and-clocks.md "Clocks", issue "Model reviewers".
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import httpx2

from council.asks.paused import Paused, too_many_asks
from council.errors import RosterError
from council.harvest import harvest
from council.model.backend_result import ReviewResult, Stop, StopLimit, Usage
from council.roster.backend_options import KEYLESS_OPTION, key_env, where_of
from council.roster.script_limits import limits_of
from council.roster.tool_catalog import specs_for
from reviewers.base import ReviewRequest
from reviewers.models.provider import Provider
from reviewers.models.retry import Backoff, Trouble, retry_reason
from reviewers.models.spending import BUDGET_WRAP_UP, Spending, Unaffordable
from reviewers.models.stream_loop import bridge, stream_loop
from reviewers.models.stream_watch import StreamedTurn, Watch, run_streamed
from reviewers.models.tools import READ_MAX_BYTES, ToolBox

DEFAULT_MAX_TURNS = 20
"""Requests one review may make in its tool loop when ``max_turns`` is not set."""

CONNECT_MAX_MS = 10_000
"""Longest wait for a TCP/TLS connection to the provider, in milliseconds."""

READ_SLACK_MS = 1000
"""Added to ``idle_ms`` for the socket's read timeout, so our idle clock fires first (ms)."""

ACQUIRE_SLICE_MS = 1000
"""Longest single wait on the rate limiter, in ms, so a cancellation is seen meanwhile."""

WRAP_UP = (
    "Time is nearly up. Stop investigating and answer now, in the answer contract, with "
    'what you already have: one JSON object {"findings": [...]} ({"findings": []} when '
    "you have nothing to report). Do not call any more tools."
)
"""The wrap-up turn's message, sent once at the soft deadline."""

KEYLESS_KEY = "council-keyless"
"""What is sent as the key to a provider the worker's registry holds without one (the
SDKs refuse an empty key, and would read the environment's for None)."""

LAST_TURN = (
    "This is your last turn: the tool budget is spent. Answer now, in the answer "
    "contract, with what you have found."
)
"""Added to the tool replies before the last turn the tool loop allows."""


@dataclass
class _Outcome:
    """One turn's end: a completed turn, a fired clock, or a failure."""

    text: str = ""
    turn: StreamedTurn | None = None
    limit: StopLimit | None = None
    failure: str | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)


class ModelReviewer:
    """A reviewer backed by a model API; never raises for a reviewer fault.

    The result: ``answer`` is the last turn's text (all the text of the conversation
    when that is blank); a stop keeps everything the model said so far, every turn's
    text; a failure (a refused request, retries exhausted, a missing key, bad options)
    has no answer and says why in the provider's words, the key masked. ``usage`` sums
    every request, failed and retried ones included, in every case; ``journal_entries``
    counts ``record_finding`` entries the journal accepted; ``notes`` tell of retries,
    the wrap-up and an exhausted tool loop. The key is read from
    ``request.secrets[options["api_key_env"]]`` (default: the provider's variable); a
    ``keyless`` participant (set by the worker) sends :data:`KEYLESS_KEY` instead.

    ``backoff`` sets the retries (tests shorten it); ``rng`` the jitter's randomness.
    """

    def __init__(
        self, provider: Provider, backoff: Backoff | None = None, rng: random.Random | None = None
    ) -> None:
        self.provider = provider
        self.backoff = backoff if backoff is not None else Backoff()
        self.rng = rng if rng is not None else random.Random()

    def review(self, request: ReviewRequest) -> ReviewResult:
        """:meth:`areview` on the process's stream loop, the calling thread waiting for it."""
        return stream_loop().run(self.areview(request))

    async def areview(self, request: ReviewRequest) -> ReviewResult:
        """Run the conversation under the participant's clocks (ms) and return its answer.

        A coroutine: hundreds run at once on one loop
        (:mod:`~reviewers.models.stream_loop`); blocking work (tools, the journal, the
        rate limiter) goes to the loop's executor. Never raises for a reviewer fault.
        """
        participant = request.participant
        watch = Watch(participant.clocks, request.cancel)
        try:
            self.provider.check(participant, where_of(participant))
        except RosterError as error:
            return ReviewResult(failure=str(error), usage=Usage())
        env = key_env(participant) or self.provider.key_env
        keyless = participant.options.get(KEYLESS_OPTION) is True
        key = KEYLESS_KEY if keyless else request.secrets.get(env, "")
        if not key.strip():
            return ReviewResult(
                failure=(
                    f"no API key for the {self.provider.title} API: the worker was given no "
                    f"value for {env}; set {env} in the environment of the workers (in "
                    f"embedded mode, of the council command itself)"
                ),
                usage=Usage(),
            )
        if request.cancel.is_set():
            return ReviewResult(stop=Stop(limit="cancelled"), usage=Usage())
        run: _Run | None = None
        try:
            with bridge(request.cancel) as woken:
                watch.woken = woken
                run = _Run(self, request, watch, key)
                return await run.go()
        except Exception as error:  # a backend never raises for a reviewer fault
            reason = f"the {self.provider.backend} backend broke ({type(error).__name__}: {error})"
            return ReviewResult(
                failure=redact(reason, key),
                duration_ms=watch.elapsed_ms(),
                journal_entries=run.tools.entries if run is not None else 0,
                usage=run.usage if run is not None else Usage(),
            )


class _Run:
    """The mutable state of one review: conversation, tools, usage, notes."""

    def __init__(self, owner: ModelReviewer, request: ReviewRequest, watch: Watch, key: str):
        self.owner, self.request, self.watch, self.key = owner, request, watch, key
        participant = request.participant
        provider = owner.provider
        specs = specs_for(participant.tools or ())
        names = [spec.name for spec in specs]
        self.tools = ToolBox(
            names,
            request.workdir,
            request.journal,
            watch.activity.touch,
            request.events,
            read_max_bytes=request.tool_read_max_bytes or READ_MAX_BYTES,
            scripts=request.scripts,
            limits=limits_of(participant.options),
            bwrap=request.sandbox.bwrap if request.sandbox is not None else "bwrap",
            artifacts=request.artifacts,
            ask_refusal=too_many_asks(request.resume),
        )
        self.session = provider.open(participant, key, request.prompt, specs, request.shared)
        self.max_turns = int(participant.options.get("max_turns", DEFAULT_MAX_TURNS))
        # One key, the most specific: the limiter holds it to every limit that covers it
        # (the model's and the provider's). Acquiring both would count a request twice.
        self.keys = (f"{provider.backend}:{participant.model}",)
        self.key_env = key_env(participant) or provider.key_env
        self.texts: list[str] = []
        self.notes: list[str] = []
        self.usage = Usage()
        self.first_token_ms: int | None = None
        self.retries: list[str] = []
        # The list's own method, not a lambda over self: a cycle through the run would
        # leave every review's state (its request, tools, session) to the garbage
        # collector, 50 objects a stream (``bench/concurrency.py``). Notes are never rebound.
        self.spending = Spending(request.budget, participant, self.notes.append)

    def _resume(self) -> int:
        """Go on from a pause: load its messages, reply to its turn's calls (the ask's
        reply is the person's answer), take its counts; the next turn's number."""
        resume = self.request.resume
        assert resume is not None
        paused = resume.paused
        self.session.load(paused.messages)
        self.session.add_tool_results(paused.answered_replies(resume.answer))
        self.texts = list(paused.texts)
        self.usage = paused.usage
        self.tools.entries = paused.journal_entries
        self.notes[:] = [
            *paused.notes,
            f"paused on a question to a person after turn {paused.turns}, and went on "
            "with their answer as the reply",
        ]
        number = paused.turns + 1
        if number == self.max_turns:
            self.session.add_user(LAST_TURN)
        return number

    def _pause(self, number: int, replies: Sequence[tuple[str, str]]) -> ReviewResult:
        """The result of a review paused on its accepted ``ask_human`` call: the
        conversation so far, the turn's replies (the ask's left to the answer)."""
        asked = self.tools.asked
        assert asked is not None
        call_id, ask = asked
        paused = Paused(
            ask=ask,
            call_id=call_id,
            messages=self.session.dump(),
            replies=[(cid, None if cid == call_id else text) for cid, text in replies],
            turns=number,
            texts=list(self.texts),
            usage=self.usage,
            notes=list(self.notes),
            journal_entries=self.tools.entries,
            asked=resumed.paused.asked + 1 if (resumed := self.request.resume) else 1,
        )
        return replace(self._result(""), paused=paused)

    async def go(self) -> ReviewResult:
        """The tool loop, then the answer (or the wrap-up, a stop, a failure, a pause)."""
        first = self._resume() if self.request.resume is not None else 1
        for number in range(first, self.max_turns + 1):
            if self.watch.soft_due():
                return await self._wrap_up("")
            if await self.spending.wrap_up_due():
                return await self._wrap_up("", budget=True)
            outcome = await self._turn(
                answer_now=number == self.max_turns and bool(self.tools.names)
            )
            if outcome.limit == "soft-deadline":
                return await self._wrap_up(outcome.text)
            if outcome.limit is not None:
                return self._result(self._said(outcome.text), self.watch.stop(outcome.limit))
            if outcome.failure is not None or outcome.turn is None:
                return self._result("", failure=outcome.failure)
            self.texts.append(outcome.text)
            if not outcome.calls:
                return self._result(self._final(outcome.text))
            if number == self.max_turns:
                self.notes.append(
                    f"the tool loop ended at max_turns ({self.max_turns}) with "
                    f"{len(outcome.calls)} tool call(s) not run"
                )
                return self._result(self._final(outcome.text))
            self.session.add_turn(outcome.turn)
            replies = [
                (cid, await asyncio.to_thread(self.tools.call, name, args, cid))
                for cid, name, args in outcome.calls
            ]
            if self.tools.asked is not None:
                return self._pause(number, replies)
            self.session.add_tool_results(replies)
            if number + 1 == self.max_turns:
                self.session.add_user(LAST_TURN)
        return self._result(self._said(""))  # unreachable: max_turns >= 1

    async def _wrap_up(self, partial: str, budget: bool = False) -> ReviewResult:
        """The one wrap-up turn at the soft deadline (or with the round's cost budget
        nearly spent), and the richer of the two texts."""
        clocks = self.request.participant.clocks
        fragment = self._said(partial)
        if partial.strip():
            self.session.add_text(partial)
        self.session.add_user(BUDGET_WRAP_UP if budget else WRAP_UP)
        self.notes.append(
            "asked to wrap up: the round has spent most of its cost budget (max_cost_usd)"
            if budget
            else f"asked to wrap up at the soft deadline ({clocks.soft_deadline_ms} ms, "
            f"answer_ms {clocks.answer_ms} before the wall)"
        )
        outcome = await self._turn(answer_now=True, soft=False)
        if outcome.failure is not None:
            self.notes.append(f"the wrap-up turn failed: {outcome.failure}")
            return self._result(fragment, self.watch.stop("budget" if budget else "soft-deadline"))
        if outcome.calls:
            self.notes.append("the wrap-up turn called tools anyway; they were not run")
        stop = self.watch.stop(outcome.limit) if outcome.limit is not None else None
        before = len(harvest(fragment).findings)
        after = len(harvest(outcome.text).findings)
        if before > after:
            self.notes.append(
                f"the text from before the wrap-up was kept as the answer: it holds "
                f"{before} findings, the wrap-up {after}"
            )
            return self._result(fragment, stop)
        if not outcome.text.strip():  # nothing came back: keep what was said before
            return self._result(fragment, stop)
        return self._result(outcome.text, stop)

    async def _turn(self, *, answer_now: bool, soft: bool = True) -> _Outcome:
        """One turn, retried on retryable troubles; what it produced."""
        partial = ""
        attempt = 0
        while True:
            attempt += 1
            limit = self.watch.fired(soft=soft, idle=False)
            if limit is not None:  # fired while tools ran: send nothing more
                return _Outcome(text=partial, limit=limit)
            turn = StreamedTurn(self.watch.activity)
            estimate = self.session.estimate_tokens()
            try:
                await self.spending.reserve(estimate)
            except Unaffordable as refused:  # not sent: what is left cannot pay for it
                return _Outcome(text=partial, limit=refused.limit, failure=refused.failure)
            admitted, limit = await self._admit(estimate, soft)
            if limit is not None:
                await self.spending.release()
                return _Outcome(text=partial, limit=limit)
            work = functools.partial(
                self.session.stream, timeout=self._timeout(), answer_now=answer_now
            )
            sent = time.monotonic()
            limit = await run_streamed(self.watch, turn, work, soft=soft)
            if self.first_token_ms is None and turn.activity.first is not None:
                self.first_token_ms = max(0, round((turn.activity.first - sent) * 1000))
            used = turn.usage
            self.usage += used
            await self._correct(admitted, estimate, used.input + used.output)
            await self.spending.settle(turn)
            partial = turn.text_so_far() or partial
            if limit is not None:
                return _Outcome(text=partial, limit=limit)
            if turn.error is None and turn.finished:
                calls = [
                    (c.id, c.name, "".join(c.arguments)) for _, c in sorted(turn.calls.items())
                ]
                return _Outcome(text=turn.text_so_far(), turn=turn, calls=calls)
            if turn.error is not None:
                trouble = self.session.trouble(turn.error)
            else:
                trouble = Trouble("the stream ended before its final event", retryable=True)
            if not trouble.retryable:
                return _Outcome(text=partial, failure=trouble.message + self._hint(trouble))
            if attempt >= self.owner.backoff.attempts:
                return _Outcome(
                    text=partial,
                    failure=f"gave up after {attempt} attempts; the last: {trouble.message}",
                )
            wait_ms = self.owner.backoff.delay_ms(attempt, trouble.retry_after_ms, self.owner.rng)
            if wait_ms >= self.watch.remaining_ms() and self._heard_nothing(partial):
                # Never reached the model: a failure that says why, not a clock's stop.
                backstop_ms = self.request.participant.clocks.backstop_ms
                return _Outcome(
                    text=partial,
                    failure=(
                        f"{trouble.message}{self._hint(trouble)}; gave up after {attempt} "
                        f"attempt(s): the wait before another ({wait_ms} ms) would pass "
                        f"the wall (backstop_ms = {backstop_ms} ms)"
                    ),
                )
            if wait_ms >= self.watch.remaining_ms():
                self.notes.append(
                    f"{trouble.message}; the wait before a retry ({wait_ms} ms) would pass "
                    f"the wall, so the review stopped there"
                )
                return _Outcome(text=partial, limit="wall-clock")
            self.notes.append(f"{trouble.message}; retried after {wait_ms} ms")
            reason = retry_reason(trouble) if turn.error is not None else "incomplete-stream"
            self.retries.append(reason)
            self.request.events(
                "model_retry",
                request_attempt=attempt,
                max_attempts=self.owner.backoff.attempts,
                status=trouble.status,
                reason=reason,
                delay_ms=wait_ms,
                error=redact(trouble.message, self.key),
            )
            limit = await self.watch.sleep(wait_ms, soft=soft)
            if limit is not None:
                return _Outcome(text=partial, limit=limit)

    def _heard_nothing(self, partial: str) -> bool:
        """Whether nothing came from the model in this review yet: no text of this turn
        or an earlier one, and no journal entry recorded through its tools."""
        return not partial and not self.texts and self.tools.entries == 0

    async def _admit(self, estimate: int, soft: bool) -> tuple[list[str], StopLimit | None]:
        """Wait for the rate limiter; the keys admitted, or the clock that fired."""
        limiter = self.request.rate_limiter
        admitted: list[str] = []
        if limiter is None:
            return admitted, None
        wall = self.watch.started + self.request.participant.clocks.backstop_ms / 1000
        for key in self.keys:
            while True:
                limit = self.watch.fired(soft=soft, idle=False)
                if limit is not None:
                    await self._correct(admitted, estimate, 0)
                    return [], limit
                deadline = min(wall, time.monotonic() + ACQUIRE_SLICE_MS / 1000)
                try:
                    if not await asyncio.to_thread(limiter.acquire, key, estimate, deadline):
                        continue
                except Exception as error:  # a broken limiter must not cost the review
                    self._limiter_broke(error)
                    break
                admitted.append(key)
                break
        return admitted, None

    async def _correct(self, admitted: Sequence[str], estimate: int, actual: int) -> None:
        limiter = self.request.rate_limiter
        if limiter is not None:
            for key in admitted:
                try:
                    await asyncio.to_thread(limiter.correct, key, estimate, actual)
                except Exception as error:  # a broken limiter must not cost the review
                    self._limiter_broke(error)

    def _limiter_broke(self, error: Exception) -> None:
        note = f"the rate limiter failed ({type(error).__name__}); requests went without it"
        if note not in self.notes:
            self.notes.append(note)
            self.request.events("rate_limiter_failed", error_type=type(error).__name__)

    def _hint(self, trouble: Trouble) -> str:
        """What to check after a refused request, by its HTTP status ("" when nothing)."""
        if trouble.status in (401, 403) and self.key == KEYLESS_KEY:
            return "; the worker's registry holds this provider without a key (key_env)"
        if trouble.status in (401, 403):
            return f"; check the key in {self.key_env} (the participant's api_key_env)"
        if trouble.status == 404:
            return (
                "; check base_url (OpenAI-compatible servers usually serve under /v1) "
                "and the model name"
            )
        return ""

    def _timeout(self) -> httpx2.Timeout:
        """Socket timeouts (s) for the next request: the clocks bound every wait."""
        clocks = self.request.participant.clocks
        remaining = max(self.watch.remaining_ms(), 1) / 1000
        idle = (clocks.idle_ms + READ_SLACK_MS) / 1000
        connect = min(CONNECT_MAX_MS / 1000, remaining)
        return httpx2.Timeout(connect=connect, read=idle, write=idle, pool=remaining)

    def _said(self, partial: str) -> str:
        """Everything the model said so far (every turn's text, then ``partial``)."""
        return "\n\n".join(t for t in [*self.texts, partial] if t.strip())

    def _final(self, text: str) -> str:
        """The answer of a finished conversation: the last turn's text, else all text."""
        return text if text.strip() else self._said("")

    def _result(
        self, answer: str, stop: Stop | None = None, failure: str | None = None
    ) -> ReviewResult:
        return ReviewResult(
            answer=answer,
            stop=stop,
            failure=None if failure is None else redact(failure, self.key),
            duration_ms=self.watch.elapsed_ms(),
            journal_entries=self.tools.entries,
            notes=tuple(redact(note, self.key) for note in self.notes),
            usage=self.usage,
            first_token_ms=self.first_token_ms,
            retries=tuple(self.retries),
            usage_before=(
                self.request.resume.paused.usage if self.request.resume is not None else None
            ),
        )


_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_*\-]{4,}")


def redact(text: str, key: str) -> str:
    """``text`` without the key: the key itself and key-like tokens (``sk-…``) masked.

    Why: a provider's 401 message may quote the key it was given (or a masked form of
    it), and failures and notes reach logs and reports.
    """
    if key:
        text = text.replace(key, "[redacted]")
    return _KEYLIKE.sub("sk-[redacted]", text)
