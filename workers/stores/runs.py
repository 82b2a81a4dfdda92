"""The run store: one run's record, its inputs for workers, progress and outcomes.

``run:{id}`` is a hash: ``record`` (:class:`~workers.stores.run_record.RunRecord` JSON,
written ``open`` before any task is sent), ``status``, ``report``, ``settled_ms``, and
``redis``: the server's ``run_id`` when the run opened (a restart since is noticed).
``run:{id}:cancel`` holds the status a cancelled run settles as, ``run:{id}:judge-sent`` the
one claim to send its judge; ``runs`` and ``runs:undispatched`` hold the runs still kept and
those whose chord is not sent yet. :class:`RunStore` has one part per concept: inputs
(:mod:`workers.stores.run_inputs`), progress and outcomes (:mod:`workers.stores.run_progress`);
the record is :mod:`workers.stores.run_record`.

Source: docs/architecture.md "State in Redis", "Messages"; docs/celery.md §1.8.
"""

from __future__ import annotations

from collections.abc import Sequence

from council.model.backend_result import Stop
from council.model.report import CouncilReport, RunStatus
from workers.stores import RedisClient, server_id
from workers.stores.keys import Keys
from workers.stores.run_inputs import RunInputs, cancel_status
from workers.stores.run_progress import RunProgress
from workers.stores.run_record import RunRecord


class RunStore(RunInputs, RunProgress):
    """Read and write one run's keys."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self._r, self._keys = client, keys

    def mark_dispatched(self, run_id: str) -> None:
        """The run's chord is about to be sent: it is no longer a run its CLI might have
        abandoned between opening and dispatch (``runs:undispatched``)."""
        self._r.zrem(self._keys.runs_undispatched(), run_id)

    # -- reads ---------------------------------------------------------------------------
    def record(self, run_id: str) -> RunRecord | None:
        """The run record, or None when the run is unknown or expired."""
        raw = self._r.hget(self._keys.run(run_id), "record")
        return RunRecord.model_validate_json(raw) if raw is not None else None

    def status(self, run_id: str) -> RunStatus | None:
        """``open`` until settled; then settled | partial | cancelled | timeout."""
        raw = self._r.hget(self._keys.run(run_id), "status")
        if raw is None:
            return None
        status: RunStatus = raw.decode()
        return status

    def record_and_status(self, run_id: str) -> tuple[RunRecord | None, RunStatus | None]:
        """:meth:`record` and :meth:`status` in one command (``HMGET``)."""
        raw, status = self._r.hmget(self._keys.run(run_id), ["record", "status"])
        record = RunRecord.model_validate_json(raw) if raw is not None else None
        return record, (status.decode() if status is not None else None)

    def restarted(self, run_id: str) -> bool:
        """Whether the Redis server restarted since the run opened (its ``run_id`` is not
        the one the run hash noted): it may have forgotten its last second. False when
        either is unknown (a run opened before this was noted, fakeredis)."""
        raw = self._r.hget(self._keys.run(run_id), "redis")
        opened_on = raw.decode() if raw is not None else ""
        now_on = server_id(self._r) if opened_on else ""
        return bool(opened_on and now_on and opened_on != now_on)

    def report(self, run_id: str) -> CouncilReport | None:
        """The settled report, or None while the run is open."""
        raw = self._r.hget(self._keys.run(run_id), "report")
        return CouncilReport.model_validate_json(raw) if raw is not None else None

    def claim_judge(self, run_id: str) -> bool:
        """True for the one caller that may send the run's judge (SET NX), else False."""
        return bool(self._r.set(self._keys.run_judge_sent(run_id), b"1", nx=True, ex=7 * 24 * 3600))

    def cancelled(self, run_id: str) -> bool:
        """Whether the run was cancelled."""
        return bool(self._r.exists(self._keys.run_cancel(run_id)))

    def cancel(
        self, run_id: str, status: RunStatus = "cancelled", budget_ms: int | None = None
    ) -> None:
        """Mark the run cancelled; reviewers watching it stop as ``cancelled``.

        ``status`` (``cancelled``, or ``timeout`` for ``--timeout``) is what the run
        settles as, whoever settles it: the waiting CLI, or the consolidation that the
        stopped reviewers' tasks fire first. ``budget_ms`` is the ``--timeout`` that ran
        out (stored as ``timeout:MS``), so the stops say what cancelled them.
        """
        value = f"{status}:{budget_ms}" if budget_ms is not None else status
        self._r.set(self._keys.run_cancel(run_id), value.encode(), ex=7 * 24 * 3600)

    def cancelled_many(self, run_ids: Sequence[str]) -> list[bool]:
        """Whether each run is cancelled, in one pipelined round trip."""
        pipe = self._r.pipeline(transaction=False)
        for rid in run_ids:
            pipe.exists(self._keys.run_cancel(rid))
        return [bool(n) for n in pipe.execute()]

    def cancel_status(self, run_id: str) -> RunStatus | None:
        """The status a cancelled run settles as (None when it was not cancelled)."""
        return cancel_status(self._r.get(self._keys.run_cancel(run_id)))

    def cancel_stop(self, run_id: str) -> Stop | None:
        """The stop of a reviewer this run's cancellation stopped: ``cancelled`` with the
        ``--timeout`` in ms as its budget when that cancelled it (None: not cancelled)."""
        raw = self._r.get(self._keys.run_cancel(run_id))
        if raw is None:
            return None
        budget = raw.partition(b":")[2]
        return Stop(limit="cancelled", budget_ms=int(budget) if budget.isdigit() else None)

    def recent(self, limit: int = 20) -> list[RunRecord]:
        """The most recent runs still held, newest first (expired ones are pruned)."""
        ids = self._r.zrevrange(self._keys.runs_index(), 0, limit - 1)
        records: list[RunRecord] = []
        for raw_id in ids:
            rec = self.record(raw_id.decode())
            if rec is None:
                self._r.zrem(self._keys.runs_index(), raw_id)
            else:
                records.append(rec)
        return records

    def status_map(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Status of several runs at once (run id → status)."""
        pipe = self._r.pipeline(transaction=False)
        for rid in run_ids:
            pipe.hget(self._keys.run(rid), "status")
        return {
            rid: (v.decode() if v is not None else "expired")
            for rid, v in zip(run_ids, pipe.execute(), strict=True)
        }
