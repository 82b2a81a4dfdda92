"""A round's lineup: the roster's participants as this round runs them, and their prompts.

Pure: built from what the runtime already read — the trusted roster, the filtered change,
the persona charters' text, the round's notes — so the same inputs give the same lineup
and the same prompts, byte for byte. The reads (the base tree, the files beside
``--roster``) and the checks (backend options, settings, caps) are the runtime's
(:mod:`workers.coordinator.preparation`), and happen first.
Source: docs/architecture.md "The shape" (read the change and the trusted roster, check
everything, build the prompts; nothing is sent before every check passed),
docs/identity-and-clocks.md (personas, clocks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from council.change.diff import Change
from council.model.participant import Participant
from council.model.report import WITHOUT_KEYS
from council.roster import Roster
from council.roster.backend_options import BASE_DIR, key_env
from council.roster.prompt import Prompt, prompt_parts


@dataclass(frozen=True)
class Lineup:
    """The reviewers (in roster order) and the judge of one round."""

    reviewers: tuple[Participant, ...]
    judge: Participant | None = None

    @property
    def everyone(self) -> tuple[Participant, ...]:
        """The reviewers in roster order, then the judge when there is one."""
        return (*self.reviewers, *((self.judge,) if self.judge is not None else ()))

    @property
    def placed(self) -> tuple[tuple[str, Participant], ...]:
        """Each participant with its place in the roster, the prefix a refusal names:
        ``("reviewers[0]", p0)``, ``("reviewers[1]", p1)``, …, then ``("judge", j)``."""
        return (
            *((f"reviewers[{i}]", p) for i, p in enumerate(self.reviewers)),
            *((("judge", self.judge),) if self.judge is not None else ()),
        )


def line_up(roster: Roster, base_dir: Path) -> Lineup:
    """The roster's participants as this round runs them; never raises.

    A replay participant reads its files relative to ``base_dir`` (beside an explicit
    ``--roster`` file, else the repository root; the caller decides which), unless its
    entry already names one: a round is replayed from the same trusted place its roster
    comes from.
    """
    return Lineup(
        reviewers=tuple(with_base_dir(p, base_dir) for p in roster.reviewers),
        judge=with_base_dir(roster.judge, base_dir) if roster.judge is not None else None,
    )


def without_keys(lineup: Lineup) -> tuple[Lineup, tuple[str, ...]]:
    """``lineup`` without the participants that read an API key (model reviewers, a
    model judge), and the notes saying who was left out; never raises.

    Why: a pull request from a fork must be reviewed without the repository's secrets
    (its CI job gets none), yet its analyzers and keyless reviewers can still review it
    and gate. Leaving the keyed reviewers out is the CI recipe's decision
    (``council review --without-keys``), never the change's, and the report says it, so
    no one reads a missing model's silence as a clean review. A lineup left with no
    reviewer is the caller's to refuse. Source: docs/ci-and-forges.md "Keys, and pull
    requests from forks".
    """
    keyed = [p for p in lineup.everyone if key_env(p) is not None]
    if not keyed:
        return lineup, ()
    kept = tuple(p for p in lineup.reviewers if key_env(p) is None)
    judge = lineup.judge if lineup.judge is not None and key_env(lineup.judge) is None else None
    named = ", ".join(f"{p.id} ({p.backend} {p.model})" for p in keyed)
    notes = [
        f"{WITHOUT_KEYS} (--without-keys): {named} left out of this round, "
        "so what they would find is not in this report; the other reviewers review and gate"
    ]
    if lineup.judge is not None and judge is None:
        notes.append(f"no judge this round: {lineup.judge.id} needs a key, so nothing is overruled")
    return Lineup(reviewers=kept, judge=judge), tuple(notes)


def with_base_dir(p: Participant, base_dir: Path) -> Participant:
    """``p`` with ``base_dir`` among its options when it is a replay participant that has
    none (its ``answer``/``journal`` paths resolve there); any other participant as is."""
    if p.backend != "replay" or BASE_DIR in p.options:
        return p
    return p.model_copy(update={"options": {**p.options, BASE_DIR: str(base_dir)}})


def reviewer_prompts(
    reviewers: Sequence[Participant],
    change: Change,
    personas: Mapping[str, str],
    notes: Sequence[str],
) -> dict[str, Prompt]:
    """Participant id → the prompt it is sent, for each reviewer; their ``shared`` parts
    are one text (every reviewer gets the same change and notes), for the prefix caches.

    ``personas`` maps a participant id to its charter's body (ids without a persona are
    absent); ``notes`` are the round's notes, in the order they are shown. The judge has
    none here: its prompt is built once the reviewers are filed
    (:mod:`workers.settling.judge_turn`).
    """
    return {
        p.id: prompt_parts(p, change, change.text, persona_text=personas.get(p.id), notes=notes)
        for p in reviewers
    }


def deadline_ms(created_ms: int, lineup: Lineup, slack_ms: int) -> int:
    """When the watchdog settles the run, in ms since the epoch: ``created_ms`` plus the
    longest reviewer backstop, the judge's backstop (it runs after them) and ``slack_ms``.

    Raises :class:`ValueError` for a lineup without reviewers (a checked roster has one).
    """
    judge_ms = lineup.judge.clocks.backstop_ms if lineup.judge is not None else 0
    longest_ms = max(p.clocks.backstop_ms for p in lineup.reviewers)
    return created_ms + longest_ms + judge_ms + slack_ms
