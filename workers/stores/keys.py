"""Every Redis key the council writes, built in one place from the configured prefix.

Run keys (``run:{run_id}…``) get their TTL as they are written (until the run's deadline
plus the retention; a run settled past its deadline: the retention from then); session
keys (``session:{session}:…``) live until the session is idle for its retention;
rate-limit keys (``ratelimit:{name}:…``) one window after their last admission.
Source: docs/architecture.md "State in Redis", docs/style.md habit 9.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from council.model.participant import PROGRAM_BACKENDS

_NEVER_PAUSE = frozenset({"replay", "sarif"})
"""Backends whose participants never pause on a person's question."""


@dataclass(frozen=True)
class Keys:
    """Key builder for one prefix (default ``council:``)."""

    prefix: str = "council:"

    # -- track records (never expire: docs/ranking.md "Track records") -----------------
    def records(self) -> str:
        """Hash: ``participant␟identity␟count`` → amount, every reviewer's track record."""
        return f"{self.prefix}records"

    def records_loaded(self) -> str:
        """Hash (embedded only): the records as the state file held them when loaded, so
        a save adds to the file only what this process added."""
        return f"{self.prefix}records:loaded"

    # -- runs ---------------------------------------------------------------------------
    def run(self, run_id: str) -> str:
        """Hash: ``record`` (run meta JSON), ``status``, ``report``, ``settled_ms``; and per
        participant ``p:{id}`` → its checked participant JSON, ``p:{id}#prompt`` → the
        prompt it is sent, ``p:{id}#shared`` → how many leading characters of it every
        reviewer shares, ``p:{id}#persona`` → its charter (the judge's), ``p:{id}#args`` →
        the base-tree files its ``args`` name (JSON, base64 values): a task reads the
        record, the status and its own fields in one HMGET (stored once, tasks carry ids)."""
        return f"{self.prefix}run:{run_id}"

    def run_state(self, run_id: str) -> str:
        """Hash: participant id → progress JSON (state, started/updated ms)."""
        return f"{self.prefix}run:{run_id}:state"

    def run_wake(self, run_id: str) -> str:
        """List of at most one element: pushed whenever the run's progress, an outcome or
        its state changes; the waiting CLI blocks on it (BLPOP) instead of polling."""
        return f"{self.prefix}run:{run_id}:wake"

    def run_recorded(self, run_id: str) -> str:
        """Hash: participant id → journal entries recorded so far (progress only)."""
        return f"{self.prefix}run:{run_id}:recorded"

    def run_roster(self, run_id: str) -> str:
        """String: JSON list of the checked participants of the run."""
        return f"{self.prefix}run:{run_id}:roster"

    def run_change(self, run_id: str) -> str:
        """String: the diff text the run reviewed (findings' anchors are checked on it)."""
        return f"{self.prefix}run:{run_id}:change"

    def run_since(self, run_id: str) -> str:
        """String: the diff from the session's last reviewed head to this run's head (the
        interdiff); the last round's findings are checked on it for outdated code. Absent
        when the session has no reviewed head this clone holds."""
        return f"{self.prefix}run:{run_id}:since"

    def run_baseline(self, run_id: str) -> str:
        """String: the committed baseline (``.council-baseline.json`` of the BASE ref, or
        ``--baseline``) the run's findings are suppressed by; absent when there is none."""
        return f"{self.prefix}run:{run_id}:baseline"

    def run_carry(self, run_id: str) -> str:
        """String flag: the run reviews only the commits after the session's last reviewed
        head (``--since-last``), so the earlier findings still open that it does not touch
        are carried into its report; absent otherwise."""
        return f"{self.prefix}run:{run_id}:carry"

    def run_pull(self, run_id: str) -> str:
        """String: with ``--since-last``, the diff the pull request shows (base..head),
        which ``--filter`` judges findings against (the round's own change is only the
        new commits); absent otherwise."""
        return f"{self.prefix}run:{run_id}:pull"

    def run_paths(self, run_id: str) -> str:
        """String: the head tree's file paths, NUL-separated (``--filter`` tells a
        model's invented path from a real unchanged file by them); absent when the tree
        was too large to list."""
        return f"{self.prefix}run:{run_id}:paths"

    def session_waiting(self, session: str) -> str:
        """Hash: run id → the run waiting on a person (its record, its report with the
        questions): what ``council review`` or ``council resume`` finishes once answered."""
        return f"{self.prefix}session:{session}:waiting"

    def session_answers(self, session: str) -> str:
        """Hash: ask id → the person's answer (JSON), kept until its run is finished."""
        return f"{self.prefix}session:{session}:answers"

    def run_tree(self, run_id: str) -> str:
        """String: the head commit's tree, ``git archive`` tar.gz bytes."""
        return f"{self.prefix}run:{run_id}:tree"

    def run_program(self, run_id: str, participant: str) -> str:
        """String: a command reviewer's program as read from the BASE tree."""
        return f"{self.prefix}run:{run_id}:program:{participant}"

    def run_config(self, run_id: str) -> str:
        """Hash: the BASE's side of the analyzer configuration files the change edits,
        laid over the tree of program reviewers with ``config_from = "base"`` (field
        ``"<kind>:<path>"`` → bytes, see :mod:`workers.coordinator.config_overlay`)."""
        return f"{self.prefix}run:{run_id}:config"

    def run_secrets(self, run_id: str) -> str:
        """String: JSON list of the places of the likely secrets the change adds (never
        their values; see :mod:`council.change.secret_masks`), for workers to mask them."""
        return f"{self.prefix}run:{run_id}:secrets"

    def run_attempts(self, run_id: str, participant: str) -> str:
        """Counter: attempts started for one participant (INCR at task start)."""
        return f"{self.prefix}run:{run_id}:attempts:{participant}"

    def journal(self, run_id: str, participant: str, attempt: int) -> str:
        """List: raw journal entries of one attempt, RPUSH only."""
        return f"{self.journal_prefix(run_id, participant)}{attempt}"

    def journal_ids(self, run_id: str, participant: str, attempt: int) -> str:
        """Set: the ids of the entries of one attempt's journal that carried one (a
        worker's, see :meth:`JournalStore.store
        <workers.stores.journal.JournalStore.store>`), written with each entry, so an
        entry stored again after a Redis restart is kept once."""
        return f"{self.prefix}run:{run_id}:journal-ids:{participant}:{attempt}"

    def run_durable(self, run_id: str) -> str:
        """String: the waiting CLI's own write before it waits for its filing to be
        durable (``COUNCIL_DURABILITY``: :mod:`workers.app.durability`); expires in an hour."""
        return f"{self.prefix}run:{run_id}:durable"

    def journal_prefix(self, run_id: str, participant: str) -> str:
        """What every attempt's journal key of one participant starts with (the attempt
        number follows): a script that reads every attempt builds the keys from it."""
        return f"{self.prefix}run:{run_id}:journal:{participant}:"

    def scripts(self, run_id: str, participant: str, attempt: int) -> str:
        """List: the script rows of one attempt (one JSON
        :class:`~council.evidence.ScriptRow` per ``run_script`` / ``council run-script``
        call), RPUSH only, so a dying worker loses no row it already wrote."""
        return f"{self.scripts_prefix(run_id, participant)}{attempt}"

    def scripts_prefix(self, run_id: str, participant: str) -> str:
        """What every attempt's script-rows key of one participant starts with."""
        return f"{self.prefix}run:{run_id}:scripts:{participant}:"

    def run_outcome(self, run_id: str, participant: str) -> str:
        """String: the participant's settled outcome JSON (first terminal one wins)."""
        return f"{self.prefix}run:{run_id}:outcome:{participant}"

    def run_answer(self, run_id: str, participant: str) -> str:
        """String: the verbatim answer, archived for audit."""
        return f"{self.prefix}run:{run_id}:answer:{participant}"

    def run_pause(self, run_id: str, participant: str) -> str:
        """Hash: a model reviewer paused on a person's question (``ask_human``):
        ``pause`` → its conversation so far (:class:`~council.asks.paused.Paused` JSON),
        ``answer`` → the person's answer (written when the run resumes). Expires with the
        run's other keys, so an unanswered question goes with its run."""
        return f"{self.prefix}run:{run_id}:pause:{participant}"

    def run_artifacts(self, run_id: str) -> str:
        """Hash: the run's artifacts (the large halves of its asks' props): ``{ref}`` →
        the stored bytes, ``{ref}:kind`` → ``bytes`` or ``json``, ``total`` → the bytes
        of all of them. One hash per run, so a ref resolves only in its own run's scope
        and expires with the run's other keys."""
        return f"{self.prefix}run:{run_id}:artifacts"

    def run_budget(self, run_id: str) -> str:
        """Hash: the round's cost ledger in nano-dollars (:mod:`workers.stores.budget`):
        ``spent``, ``held``, ``held:{reservation}`` → its estimate, ``spent:{participant}``."""
        return f"{self.prefix}run:{run_id}:budget"

    def run_cancel(self, run_id: str) -> str:
        """String flag: set when the run is cancelled; reviewers stop as ``cancelled``."""
        return f"{self.prefix}run:{run_id}:cancel"

    def run_judge_sent(self, run_id: str) -> str:
        """String flag: the judge task was sent (SET NX, so it is sent once)."""
        return f"{self.prefix}run:{run_id}:judge-sent"

    def runs_index(self) -> str:
        """Sorted set: run id scored by creation time (ms), for ``council runs``; trimmed
        by age (the run retention) and count at every opening."""
        return f"{self.prefix}runs"

    def runs_open(self) -> str:
        """Sorted set: run id of every run not yet final, scored by the ms past which a
        sweep settles it as the watchdog would (its deadline; once ``judging``, the
        judge's). Removed when the run's final transition is committed."""
        return f"{self.prefix}runs:open"

    def runs_undispatched(self) -> str:
        """Sorted set: run id of every run opened and not yet dispatched, scored by its
        opening (ms); a run left here too long was abandoned by its CLI."""
        return f"{self.prefix}runs:undispatched"

    def leases(self) -> str:
        """Sorted set: ``{run}|{participant}|{attempt}`` of every running attempt, scored
        by the ms its lease lapses; its worker pushes it forward every beat."""
        return f"{self.prefix}leases"

    @staticmethod
    def lease_member(run_id: str, participant: str, attempt: int) -> str:
        """The member of :meth:`leases` for one attempt (ids contain no ``|``)."""
        return f"{run_id}|{participant}|{attempt}"

    def sweep_lock(self) -> str:
        """String: held (SET NX PX) by the worker sweeping this period."""
        return f"{self.prefix}sweep"

    def run_keys(
        self,
        run_id: str,
        participants: Iterable[str],
        attempts: dict[str, int],
        backends: Mapping[str, str] | None = None,
        scripting: Collection[str] | None = None,
    ) -> list[str]:
        """Every key of one run, for expiry at settling (a run parked past its deadline,
        or far before it) and at resuming.

        Given ``backends`` (participant → its backend) and ``scripting`` (the participants
        that may run a script), the keys a participant's backend never writes are left
        out (a program: ``command`` and ``sarif`` only; a pause:
        neither ``replay`` nor ``sarif``; script rows: ``scripting`` only): an EXPIRE of
        a key that does not exist is a command for nothing.
        """
        keys = [
            self.run(run_id),
            self.run_state(run_id),
            self.run_recorded(run_id),
            self.run_roster(run_id),
            self.run_tree(run_id),
            self.run_config(run_id),
            self.run_secrets(run_id),
            self.run_change(run_id),
            self.run_judge_sent(run_id),
            self.run_cancel(run_id),
            self.run_artifacts(run_id),
            self.run_wake(run_id),
            self.run_budget(run_id),
        ]
        for p in participants:
            backend = (backends or {}).get(p)
            keys += [
                self.run_attempts(run_id, p),
                self.run_outcome(run_id, p),
                self.run_answer(run_id, p),
            ]
            if backend is None or backend in PROGRAM_BACKENDS:
                keys.append(self.run_program(run_id, p))
            if backend is None or backend not in _NEVER_PAUSE:
                keys.append(self.run_pause(run_id, p))
            tried = range(1, attempts.get(p, 0) + 1)
            keys += [self.journal(run_id, p, a) for a in tried]
            keys += [self.journal_ids(run_id, p, a) for a in tried]
            if scripting is None or p in scripting:
                keys += [self.scripts(run_id, p, a) for a in tried]
        return keys

    # -- rate limits --------------------------------------------------------------------
    def ratelimit_requests(self, name: str) -> str:
        """Sorted set: admission id → admitted ms, the requests of the last window.

        ``name`` is a limit's name (``openai``, ``openai:gpt-4.1``). Expires one window
        after the last admission, so an idle limit leaves nothing behind.
        """
        return f"{self.prefix}ratelimit:{name}:requests"

    def ratelimit_tokens(self, name: str) -> str:
        """Sorted set: ``{admission id}|{tokens}`` → admitted ms, the tokens of the last
        window; expires one window after the last write."""
        return f"{self.prefix}ratelimit:{name}:tokens"

    def ratelimit_keys(self, name: str) -> list[str]:
        """Every key of one rate limit."""
        return [self.ratelimit_requests(name), self.ratelimit_tokens(name)]

    # -- sessions -----------------------------------------------------------------------
    def session_issued(self, session: str) -> str:
        """Counter: finding ids issued in the session; INCRBY only, never reset."""
        return f"{self.prefix}session:{session}:issued"

    def session_findings(self, session: str) -> str:
        """Hash: finding id → canonical finding JSON."""
        return f"{self.prefix}session:{session}:findings"

    def session_ledger(self, session: str) -> str:
        """String: the identity ledger JSON (claimed in one atomic step)."""
        return f"{self.prefix}session:{session}:ledger"

    def session_open(self, session: str) -> str:
        """Hash: open run id → JSON {ids, deadline_ms}; those ids count as attributed."""
        return f"{self.prefix}session:{session}:open"

    def session_attributed(self, session: str) -> str:
        """Set: participant ids that have findings attributed to them in the session."""
        return f"{self.prefix}session:{session}:attributed"

    def session_runs(self, session: str) -> str:
        """Sorted set: run ids of the session scored by creation time (ms)."""
        return f"{self.prefix}session:{session}:runs"

    def session_fingerprints(self, session: str) -> str:
        """Hash: content fingerprint → id of the latest finding that reported it, for the
        runs that completed (settled or partial); a later round marks a repeat ``seen``."""
        return f"{self.prefix}session:{session}:fingerprints"

    def session_reviewed(self, session: str) -> str:
        """Hash: ``run``, ``head``, ``settled_ms`` of the session's last completed run
        (settled or partial), and ``open``, the JSON array of the findings still open
        after it (its own, then those it carried): ``--since-last`` starts after ``head``,
        outdated and carried findings are ``open``'s, ``council baseline`` writes them."""
        return f"{self.prefix}session:{session}:reviewed"

    def session_recall(self, session: str) -> str:
        """String: the JSON array of the findings the session remembers for recognition
        (:func:`council.session.remembered.recalled`: the latest telling of each id its completed
        rounds reported, at most :data:`council.session.remembered.RECALL_CAP`, newest first); a
        later round's finding recognized as one of them keeps its id."""
        return f"{self.prefix}session:{session}:recall"

    def session_dismissed(self, session: str) -> str:
        """Hash: content fingerprint → dismissal JSON {reason, dismissed_ms, finding?}
        (``council dismiss``; ``finding``: the finding dismissed, when known, so a
        rewording of it stays dismissed); a dismissed finding is listed, never gates,
        never posts."""
        return f"{self.prefix}session:{session}:dismissed"

    def session_acted(self, session: str) -> str:
        """Hash: finding id → the run that found it outdated; its raisers' ``acted`` is
        counted once per id (docs/ranking.md "Track records")."""
        return f"{self.prefix}session:{session}:acted"

    def session_keys(self, session: str) -> list[str]:
        """Every key of one session, for idle expiry and embedded state files."""
        return [
            self.session_issued(session),
            self.session_findings(session),
            self.session_ledger(session),
            self.session_open(session),
            self.session_attributed(session),
            self.session_runs(session),
            self.session_fingerprints(session),
            self.session_reviewed(session),
            self.session_recall(session),
            self.session_dismissed(session),
            self.session_waiting(session),
            self.session_answers(session),
            self.session_acted(session),
        ]
