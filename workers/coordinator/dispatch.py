"""Opening a prepared round's run and dispatching its chord; sending the judge.

The design's order: claim every participant and write the run ``open`` in one atomic step,
store the inputs, send ONE chord (reviewer tasks → ``consolidate``, errback ``finalize``).
Nothing reaches a worker before the run is open, and a chord that cannot be sent leaves no
run ``open``. :func:`chord_header` puts model participants in ``council.review_batch`` tasks
of at most ``COUNCIL_BATCH_SIZE`` per provider queue (one worker process then holds many
streams for one task's cost), every other one in its own ``council.review_participant``. No
result object outlives the dispatch (:func:`release_results`): the CLI polls the run in Redis
(:mod:`workers.coordinator.waiting`).

Source: docs/architecture.md "The shape", "The canvas".
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence

import structlog
from celery import Celery, Signature, chord
from celery.backends.redis import RedisBackend
from celery.result import AsyncResult, ResultBase, ResultSet

from council.model.backend_result import Stop
from council.model.participant import Participant
from workers.app.celery_config import queue_for
from workers.app.services import Runtime
from workers.coordinator.preparation import Round
from workers.settling.settle import JudgeDispatch, settle_run
from workers.stores.run_record import PROTOCOL

log = structlog.get_logger("council.coordinator")  # the name its events always had

BATCHED_BACKENDS = frozenset({"openai", "anthropic"})
"""Backends whose participants are sent in ``council.review_batch`` tasks (model
streams: mostly waiting, so one process holds many)."""


def open_and_dispatch(app: Celery, rt: Runtime, round_: Round) -> None:
    """Claim identities and open the run atomically, store inputs, send the chord.

    Raises :class:`~council.errors.IdentityRefused` before anything is sent. When the
    chord cannot be sent (the broker is unreachable, its transport cannot load), the run
    just opened is settled ``cancelled`` and the error is raised again.
    """
    record = round_.record
    rt.sessions.open_run(record, round_.roster.claims(), record.created_ms)
    _store_inputs(rt, round_, rt.sessions.open_ttl_s(record, record.created_ms))
    try:
        header = chord_header(
            app, record.run_id, round_.working, rt.settings.batch_size, record.session
        )
        # Marked before sending: a CLI that dies in between leaves a run whose tasks may
        # be on their way, which the deadline's sweep settles; never one cancelled under
        # its running reviewers.
        rt.runs.mark_dispatched(record.run_id)
        sent = send_chord(app, record.run_id, header, record.session)
    except Exception:
        # Nothing reached a worker: settle the opened run now, so it is not left "open".
        log.exception("dispatch_failed", run_id=record.run_id)
        rt.runs.cancel(record.run_id)
        settle_run(rt, record.run_id, forced="cancelled", lost=Stop(limit="cancelled"))
        raise
    # Drop the result handles now, while the backend is reachable: their finalizer
    # unsubscribes from the result backend (docs/celery.md §1.12, noise at exit).
    release_results(app, sent)
    del sent
    log.info(
        "run_dispatched",
        run_id=record.run_id,
        session=record.session,
        participants=len(round_.participants),
        slices=len(round_.units),
        tasks=len(header),
    )


def _store_inputs(rt: Runtime, round_: Round, ttl_s: int) -> None:
    """Store what the run's tasks read by key (docs/architecture.md "Messages": a message
    carries ids, never megabytes of diff): every participant (the judge too), the
    reviewers' prompts, the judge's persona for its prompt built later, the head tree,
    the base-tree programs and the files ``args`` name, the base's side of the analyzer
    configuration the change edits, the places of the likely secrets it adds, and the
    (masked) diff, each with the run's opening TTL ``ttl_s``. A slice unit is stored as a
    participant of its own, with its owner's program and ``args`` files under its id."""
    judge = round_.judge
    units = round_.units
    owners = {u.id: u.owner_id() for u in units}
    programs = {
        **round_.programs,
        **{u: round_.programs[o] for u, o in owners.items() if o in round_.programs},
    }
    arg_files = {
        **round_.arg_files,
        **{u: round_.arg_files[o] for u, o in owners.items() if o in round_.arg_files},
    }
    rt.runs.put_inputs(
        round_.record.run_id,
        (*round_.participants, *units, *((judge,) if judge else ())),
        round_.prompts,
        round_.tree,
        programs,
        change=round_.change.text,
        personas=(
            {judge.id: round_.judge_persona}
            if judge is not None and round_.judge_persona is not None
            else {}
        ),
        arg_files=arg_files,
        config=round_.config.files,
        secrets=round_.secrets,
        ttl_s=ttl_s,
    )


def send_chord(
    app: Celery, run_id: str, header: Sequence[Signature], session: str | None = None
) -> ResultBase:
    """Send the run's chord: ``header`` → ``council.consolidate``, errback
    ``council.finalize`` (both on the consolidate queue; ``session``, when given, named in
    their kwargs for their log lines). Returns the chord's result
    (the body's, its parent the header's group); raises what the broker raises.

    The header goes in as a generator: given a header it can list, the Redis result
    backend builds a ``GroupResult`` of its own over the header tasks and keeps their
    results subscribed for the life of the process, with no public API to hand them back
    (celery/celery#4823). Given a generator it builds none, so :func:`release_results`
    reaches every result object; the integration test
    ``test_nothing_of_the_chords_results_is_kept_after_dispatch`` fails should a Celery
    release change that.

    On the Redis backend every task of the canvas is sent with ``ignore_result``: nobody
    reads their results (the run's state in Redis is the record), the chord joins from
    its own keys (each header task's return is stashed there whatever the flag), and a
    stored result costs its task 10 Redis commands (``STARTED`` and ``SUCCESS``) and the
    CLI a subscription (docs/celery.md §1.1). Sets the option on the ``header``
    signatures given.
    """
    unread = {"ignore_result": True} if joins_from_chord_keys(app) else {}
    named = {"run_id": run_id, **({"session": session} if session is not None else {})}
    body = app.signature("council.consolidate", kwargs=named, **unread)
    errback = app.signature("council.finalize", kwargs=named, immutable=True, **unread)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        canvas = chord((task.set(**unread) for task in header), body)
        canvas.link_error(errback)
        return canvas.apply_async()


def joins_from_chord_keys(app: Celery) -> bool:
    """Whether ``app``'s result backend is Redis's, whose chord joins from the chord's
    own keys (the header tasks' stored results are never read), so a canvas may be sent
    with ``ignore_result``. False for the embedded ``cache+memory://``: its chord joins
    by reading each header task's stored result."""
    return isinstance(app.backend, RedisBackend)


def release_results(app: Celery, sent: ResultBase) -> None:
    """Stop ``app``'s result backend tracking the results of a sent canvas; keep none.

    The CLI never reads them, but each stays subscribed while it lives and unsubscribes in
    ``AsyncResult.__del__``, which at interpreter shutdown, Redis gone, tries to reconnect
    ("Exception ignored in: AsyncResult.__del__"). Called right after dispatch, while Redis
    answers: every result ``sent`` reaches (itself, its parents, each group's members) is
    removed through the backend's public ``remove_pending_result``; one that cannot be
    (Redis dropped in between) loses its backend, so its finalizer does nothing. A no-op on
    a backend without pending results (the embedded ``cache+memory://``).
    """
    backend = app.backend
    for handle in _reached(sent):
        try:
            backend.remove_pending_result(handle)
        except Exception:  # Redis went away just now: disarm its finalizer instead
            log.debug("result_release_failed", task_id=handle.id, exc_info=True)
            handle.backend = None


def _reached(sent: ResultBase) -> Iterator[AsyncResult]:
    """Every task result ``sent`` reaches through public attributes: ``sent`` itself,
    each ``parent`` up the chain, and the ``results`` of each group among them."""
    node: ResultBase | None = sent
    while node is not None:
        if isinstance(node, AsyncResult):
            yield node
        if isinstance(node, ResultSet):
            yield from (r for r in node.results or () if isinstance(r, AsyncResult))
        node = node.parent


def chord_header(
    app: Celery,
    run_id: str,
    participants: Sequence[Participant],
    batch_size: int,
    session: str | None = None,
) -> list[Signature]:
    """The reviewer tasks of a run's chord, built without sending anything.

    Participants of a :data:`BATCHED_BACKENDS` backend are grouped by their queue
    (``queue_for(backend)``), in roster order, into ``council.review_batch`` tasks of at
    most ``batch_size`` (>= 1) ids each; every other participant is one
    ``council.review_participant`` task on its queue. Single tasks come first, in roster
    order, then the batches. Every signature is immutable (the header takes no parent
    result) and carries the message protocol, and ``session`` when given (for the task's
    log lines: a worker then reads nothing to name it).
    """
    named = {"session": session} if session is not None else {}
    header: list[Signature] = []
    batched: dict[str, list[str]] = {}
    for p in participants:
        if p.backend in BATCHED_BACKENDS:
            batched.setdefault(queue_for(p.backend), []).append(p.id)
            continue
        header.append(
            app.signature(
                "council.review_participant",
                kwargs={"run_id": run_id, "participant": p.id, "protocol": PROTOCOL, **named},
                immutable=True,
                queue=queue_for(p.backend),
            )
        )
    for queue, ids in batched.items():
        for start in range(0, len(ids), batch_size):
            header.append(
                app.signature(
                    "council.review_batch",
                    kwargs={
                        "run_id": run_id,
                        "participants": ids[start : start + batch_size],
                        "protocol": PROTOCOL,
                        **named,
                    },
                    immutable=True,
                    queue=queue,
                )
            )
    return header


def judge_sender(app: Celery, backend: str) -> JudgeDispatch:
    """A function that sends a run's judge task through ``app``, to its backend's queue
    (``queue_for(backend)``); it takes the run id and returns nothing."""

    def send(run_id: str) -> None:
        app.send_task(
            "council.judge",
            kwargs={"run_id": run_id, "protocol": PROTOCOL},
            queue=queue_for(backend),
            ignore_result=True,  # nobody reads it: the run's state in Redis is the record
        )

    return send
