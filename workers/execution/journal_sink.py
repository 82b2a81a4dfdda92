"""The sinks of one attempt: its journal (:class:`RedisJournal`: findings recorded as the
reviewer goes, held through an outage, kept until Redis can no longer forget them) and its
script rows (:class:`RedisScripts`).

Source: docs/harvest.md §5 (the journal), docs/celery.md §1.13 (outages and refusals) and
§1.17 (what Redis forgets).
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Sequence

import redis
import structlog

from council.change.secret_masks import Masker
from council.evidence import ScriptRow
from council.model.participant import Participant
from workers.app.services import Runtime
from workers.execution.outage_retry import held_back, note_refusal, patiently

log = structlog.get_logger("council.review")

HEARD_EVERY_S = 1.0
"""Seconds between two reads of an attempt's journal length for the idle clock."""

HELD = (
    "Recorded by this worker, not yet in Redis (Redis is unreachable or refuses writes; "
    "the worker stores it as soon as Redis answers, before your review is settled)."
)
"""The reply to an entry held in memory during a Redis outage or refusal (see
:class:`RedisJournal`)."""


class RedisJournal:
    """The JournalSink of one attempt: appends go straight to Redis, the change's secret
    values masked first (``masker``, or :meth:`mask_with`).

    During a Redis outage an entry is held in this process, in order, and the reply says
    so (:data:`HELD`); the next append tries the held ones first, and :meth:`flush`
    stores them, waiting for Redis, before the attempt is folded. ``live`` is the status
    the run must still be in for an entry to be stored (``open`` for a reviewer,
    ``judging`` for the judge, see :meth:`JournalStore.store`).

    Every entry recorded (stored or held) is also kept here, with an id of its own
    (``{sink}-{n}``, stored with it), for the attempt's life (those the fold would read:
    within the reading caps): Redis may forget its last
    second (a host crash under ``appendfsync everysec``), and :meth:`reconcile` stores
    again, before the fold, what it no longer holds; an entry it kept is not stored twice.
    """

    def __init__(
        self,
        rt: Runtime,
        run_id: str,
        participant: str,
        attempt: int,
        live: str = "",
        masker: Masker | None = None,
    ) -> None:
        self._rt, self._run, self._p, self._attempt = rt, run_id, participant, attempt
        self._live = live
        self._masker = masker or Masker()
        self._sink, self._n = uuid.uuid4().hex[:12], 0
        self._kept: list[tuple[str, str]] = []
        self._held: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._heard, self._heard_at = 0, float("-inf")
        self._least = 0
        """The fewest entries the journal may hold now: each entry stored adds one, and
        Redis's count after a store is a floor (``council record`` appends there too)."""

    def heard(self) -> int:
        """Entries this attempt's journal holds in Redis, those a program's ``council
        record`` stored straight there included (the idle clock hears them), plus those
        held here; asked at most once per :data:`HEARD_EVERY_S` (the last count is
        answered meanwhile, and during an outage). Never raises."""
        now = time.monotonic()
        if now - self._heard_at >= HEARD_EVERY_S:
            self._heard_at = now
            try:
                key = self._rt.keys.journal(self._run, self._p, self._attempt)
                self._heard = int(self._rt.client.llen(key))
            except redis.RedisError:
                pass
        return self._heard + self.held

    def mask_with(self, masker: Masker) -> None:
        """Mask entries with ``masker`` from now on (the run's share is made after the
        sink: see :func:`build_request`)."""
        self._masker = masker

    @property
    def least(self) -> int:
        """The fewest entries the attempt's journal in Redis may hold: fewer means Redis
        lost entries it had said it kept (a failover to a replica that lagged)."""
        with self._lock:
            return self._least

    @property
    def held(self) -> int:
        """Entries held in this process, waiting for Redis."""
        with self._lock:
            return len(self._held)

    @property
    def recorded(self) -> int:
        """Entries recorded through this sink (stored or held) and kept for
        :meth:`reconcile` (within the reading caps)."""
        with self._lock:
            return len(self._kept)

    def append(self, raw: str) -> str:
        """Store one raw entry; return the reply sentence (never raises)."""
        raw = self._masker.text(raw)
        with self._lock:
            self._n += 1
            entry = (f"{self._sink}-{self._n}", raw)
            if self._held and not self._store_held():
                self._hold(entry)
                log.warning("journal_held", held=len(self._held))
                return HELD
            try:
                n = self._store(entry)
            except redis.RedisError as exc:
                if held_back(exc):
                    note_refusal(exc)
                    self._hold(entry)
                    log.warning("journal_held", held=len(self._held), error=str(exc))
                    return HELD
                reply = (
                    f"Not recorded ({type(exc).__name__}: the journal store failed); "
                    "keep it for your final answer."
                )
            else:
                size = len(entry[1].encode("utf-8", errors="replace"))
                reply = self._rt.journals.reply(n, size)
                if n >= 0:
                    self._keep(entry)
        log.info("journal_appended", stored=reply == "Recorded.")
        return reply

    def flush(self, until: float) -> None:
        """Store every held entry, in order, waiting for Redis until ``until`` (a
        ``time.monotonic()`` value); raises the outage error past it."""
        with self._lock:
            while self._held:
                patiently("journal_flush", self._store_first, until=until)
                self._held.pop(0)
                log.info("journal_stored_after_outage", left=len(self._held))

    def reconcile(self, until: float) -> int:
        """:func:`reconcile` for this sink alone."""
        return reconcile(self._rt, self._run, [self], until)

    def kept_ids(self) -> tuple[str, int, list[str]]:
        """``(participant, attempt, ids of the entries kept here)``."""
        with self._lock:
            return self._p, self._attempt, [i for i, _ in self._kept]

    def restore(self, gone: Sequence[str], until: float) -> int:
        """Store again, in their order, the kept entries whose ids are in ``gone``,
        waiting for Redis until ``until``; return how many could not be kept (refused:
        the run moved on). Logs ``journal_forgotten`` at warning."""
        if not gone:
            return 0
        forgotten = set(gone)
        with self._lock:
            lost = 0
            for entry in self._kept:
                if entry[0] in forgotten:
                    again = functools.partial(self._store, entry, fresh=False)
                    n = patiently("journal_restore", again, until=until)
                    lost += n < 0
        log.warning(
            "journal_forgotten", forgotten=len(forgotten), restored=len(forgotten) - lost, lost=lost
        )
        return lost

    def _hold(self, entry: tuple[str, str]) -> None:
        self._held.append(entry)
        self._keep(entry)

    def _keep(self, entry: tuple[str, str]) -> None:
        """Keep ``entry`` for :meth:`reconcile` if the fold would read it: the first
        ``journal_max_entries``, each within ``journal_max_entry_bytes`` (docs/harvest.md
        §5's reading caps), so an attempt keeps a few MiB at most."""
        settings = self._rt.settings
        small = len(entry[1].encode("utf-8", errors="replace")) <= settings.journal_max_entry_bytes
        if small and len(self._kept) < settings.journal_max_entries:
            self._kept.append(entry)

    def _store_first(self) -> int:
        return self._store(self._held[0])

    def _store(self, entry: tuple[str, str], *, fresh: bool = True) -> int:
        """Store ``entry`` (its id and text); the journal's length, or a refusal code.
        A ``fresh`` entry (recorded now, or held) counts once towards :attr:`least` even
        when Redis already held it (a retry whose first reply was lost); one stored
        again (:meth:`restore`) was counted when first recorded."""
        n = self._rt.journals.store(
            self._run, self._p, self._attempt, entry[1], live=self._live, entry_id=entry[0]
        )
        if n > 0:  # kept: the list is n long, and one longer than before at least
            self._least = max(self._least + 1, n) if fresh else max(self._least, n)
        return n

    def _store_held(self) -> bool:
        """Try once to store the held entries in order; False when Redis still fails."""
        while self._held:
            try:
                self._store(self._held[0])
            except redis.RedisError as exc:
                if not held_back(exc):
                    raise
                note_refusal(exc)
                return False
            self._held.pop(0)
        return True


def reconcile(rt: Runtime, run_id: str, sinks: Sequence[RedisJournal], until: float) -> int:
    """Store again what the attempts' journals no longer hold of the entries ``sinks``
    (attempts of the run ``run_id``) recorded (Redis restarted and forgot its last
    second), in their order, and make each attempts counter count its attempt again;
    waiting for Redis until ``until``. ONE round trip for all the sinks that kept an
    entry (none when none did), more only for what was forgotten. Returns how many could
    not be kept (refused: the run moved on). Call after each sink's
    :meth:`RedisJournal.flush`, before the fold."""
    asks = [(sink, sink.kept_ids()) for sink in sinks]
    asks = [(sink, ask) for sink, ask in asks if ask[2]]
    if not asks:
        return 0
    gone = patiently(
        "journal_check",
        lambda: rt.journals.missing(run_id, [ask for _, ask in asks]),
        until=until,
    )
    return sum(sink.restore(ids, until) for (sink, _), ids in zip(asks, gone, strict=True))


class RedisScripts:
    """The ScriptSink of one attempt: each row goes straight to Redis, the change's
    secret values masked in its text first (``masker``): a script run on the real tree
    (a command reviewer's ``council run-script``) may print a file holding one."""

    def __init__(
        self, rt: Runtime, run_id: str, participant: str, attempt: int, masker: Masker | None = None
    ) -> None:
        self._rt, self._run, self._p, self._attempt = rt, run_id, participant, attempt
        self._masker = masker or Masker()

    def append(self, row: ScriptRow) -> str:
        """Store one row (its text masked); ``"Recorded."`` or why not (never raises)."""
        if row.text is not None and self._masker.values:
            row = row.model_copy(update={"text": self._masker.text(row.text)})
        reply = self._rt.scripts.append(self._run, self._p, self._attempt, row)
        log.info("script_row_stored", stored=reply == "Recorded.", outcome=row.outcome)
        return reply


def journal_for(rt: Runtime, run_id: str, participant: Participant, attempt: int) -> RedisJournal:
    """The journal sink of one attempt of ``participant``: its entries are stored while
    the run is still in the state that needs them (``judging`` for the judge, else
    ``open``)."""
    live = "judging" if participant.role == "judge" else "open"
    return RedisJournal(rt, run_id, participant.id, attempt, live)
