"""What one review returns: the answer, or a stop or a failure, and the tokens it used.

These are the domain's values: the backends (:mod:`reviewers`) produce them, the
outcome (:mod:`council.round.outcome`), the report and the run store read them. A backend never
raises for a reviewer fault: a program that cannot start is a :class:`ReviewResult` with
``failure`` set; a reviewer our clocks stopped is a result with ``stop`` set and whatever
answer had arrived.

Source: docs/harvest.md §7 (stops and failures), docs/architecture.md "Layers".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

if TYPE_CHECKING:
    from council.asks.paused import Paused

StopLimit = Literal[
    "wall-clock", "idle", "soft-deadline", "cancelled", "worker-lost", "disk", "budget"
]
"""What stopped a reviewer: one of our clocks, a cancellation, a lost worker, a program's
storage cap (``disk``), or the round's cost budget (``budget``: its next request did not
fit ``max_cost_usd``)."""


class Stop(BaseModel):
    """Why our clocks (or a cancellation, a cap, or the cost budget) stopped a reviewer,
    and the budget it ran out of.

    ``budget_ms`` is the limit that fired, in milliseconds (None for ``worker-lost`` and
    ``budget``, which have none; for ``cancelled`` it is the run's ``--timeout`` when that
    is what cancelled it, None for a cancellation by hand: Ctrl-C, SIGTERM). ``disk``: a
    reviewer program filled its storage; ``budget_bytes`` is that cap, in bytes. A stop is never a
    failure.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    limit: StopLimit
    budget_ms: int | None = None
    budget_bytes: int | None = None

    def describe(self) -> str:
        """A phrase for people: 'the idle clock (idle_ms = 60000 ms)'.

        The number is the budget that ran out, not the time the review took (a review
        whose next retry would pass the wall stops before the wall).
        """
        names = {
            "wall-clock": ("the backstop clock", "backstop_ms"),
            "idle": ("the idle clock", "idle_ms"),
            "soft-deadline": ("the soft deadline", "answer_ms before the wall"),
            "cancelled": ("a cancellation", ""),
            "worker-lost": ("the loss of its worker", ""),
            "disk": ("the storage cap", "COUNCIL_PROGRAM_STORAGE_BYTES"),
            "budget": ("the round's cost budget", "max_cost_usd"),
        }
        name, setting = names[self.limit]
        if self.budget_bytes is not None:
            return f"{name} ({setting} = {self.budget_bytes} bytes)"
        if self.budget_ms is not None and self.limit == "cancelled":
            return f"the run's --timeout ({self.budget_ms} ms)"
        if self.budget_ms is not None and self.limit == "soft-deadline":
            return f"{name} ({self.budget_ms} ms, {setting})"
        if self.budget_ms is not None:
            return f"{name} ({setting} = {self.budget_ms} ms)"
        return f"{name} ({setting})" if setting else name


class Usage(BaseModel):
    """Tokens a model reviewer used, summed over every request of the review.

    Counts come from the provider's own usage fields: ``input`` (prompt tokens, cached
    ones included), ``output`` (completion tokens, reasoning included), ``cached`` (the
    part of ``input`` served from the provider's cache), ``cache_write`` (the part of
    ``input`` written to it, billed apart: Anthropic's ``cache_creation_input_tokens``),
    ``reasoning`` (the part of ``output`` spent thinking). ``requests`` counts HTTP
    requests made, failed and retried ones included, so a cost computed from it is never
    an undercount. ``cache_write`` is left out of the dump when 0, so outcomes and
    reports without one read as before, by readers that predate it too.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: int = 0
    output: int = 0
    cached: int = 0
    reasoning: int = 0
    requests: int = 0
    cache_write: int = 0

    @model_serializer(mode="wrap")
    def _without_zero_writes(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.cache_write:
            dumped.pop("cache_write", None)
        return dumped

    def __sub__(self, other: Usage) -> Usage:
        """What ``self`` used beyond ``other`` (each count at least 0)."""
        return Usage(
            input=max(0, self.input - other.input),
            output=max(0, self.output - other.output),
            cached=max(0, self.cached - other.cached),
            reasoning=max(0, self.reasoning - other.reasoning),
            requests=max(0, self.requests - other.requests),
            cache_write=max(0, self.cache_write - other.cache_write),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cached=self.cached + other.cached,
            reasoning=self.reasoning + other.reasoning,
            requests=self.requests + other.requests,
            cache_write=self.cache_write + other.cache_write,
        )


@dataclass(frozen=True)
class ReviewResult:
    """What one backend call produced.

    ``answer`` is the raw text (possibly partial when stopped); ``journal_entries``
    counts journal entries the backend forwarded to the sink. Exactly one of: a normal
    answer, a ``stop`` (partial answer kept), or a ``failure`` (the reason, verbatim).
    ``notes`` are sentences for people about what the backend did to the answer or the
    journal that is neither a stop nor a failure ("stdout was cut at 20971520 bytes",
    "exited with status 1 after printing its answer"). ``duration_ms`` is wall time in ms.
    """

    answer: str = ""
    stop: Stop | None = None
    failure: str | None = None
    duration_ms: int = 0
    journal_entries: int = 0
    notes: tuple[str, ...] = ()
    usage: Usage | None = None
    """Token usage of a model reviewer (None for programs and replays)."""
    first_token_ms: int | None = None
    """Milliseconds from sending a model reviewer's request to the first token streamed
    back, for the first request that streamed any (None for programs and replays, and
    for a review that heard nothing). For the worker's metrics."""
    broke_off: str | None = None
    """Why the answer cannot be taken as whole although it was read, as a code:
    ``exit-status`` for a program that exited non-zero (or was killed) after printing it,
    ``unanalyzed`` for an analyzer whose SARIF log says it could not analyze some changed
    files (or did not succeed), ``journal-lost`` for a journal Redis lost entries of after
    saying it kept them (a failover to a replica that had not received them).
    Such a reviewer is heard in part (:func:`council.round.outcome.read_in_part_code`)."""
    retries: tuple[str, ...] = ()
    """Why each retried request of a model reviewer was retried, in order: ``http-429``,
    ``http-503``, ``transport``, ``incomplete-stream`` (:func:`reviewers.models.retry.
    retry_reason`). For the worker's metrics."""
    usage_before: Usage | None = None
    """The part of ``usage`` a reviewer that went on after a person's answer had spent
    before its pause (already counted by the worker's metrics when it paused); None for
    a review that did not resume."""
    paused: Paused | None = None
    """A model reviewer that asked a person through ``ask_human``: its conversation up
    to the question (:class:`~council.asks.paused.Paused`). The review is neither
    answered, stopped nor failed: its participant settles ``asking`` and the run waits
    on the question (docs/evidence-and-asks.md §2)."""


_ESCAPED = re.compile("[\udc80-\udcff]")
"""The lone surrogates ``surrogateescape`` decodes each invalid byte to."""


def decode_answer(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """A reviewer's raw answer as text, and a note when it was not valid UTF-8.

    Invalid bytes become U+FFFD (the answer is still read: one bad byte must not cost
    the whole answer), and the note says how many bytes were replaced, so a mangled
    answer is never taken silently for what the reviewer sent.
    """
    try:
        return raw.decode("utf-8"), ()
    except UnicodeDecodeError:
        pass
    escaped = raw.decode("utf-8", errors="surrogateescape")
    bad = len(_ESCAPED.findall(escaped))
    text = _ESCAPED.sub("\ufffd", escaped)
    return text, (
        f"its answer was not valid UTF-8: {bad} byte(s) were replaced with U+FFFD before "
        "it was read",
    )
