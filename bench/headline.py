"""One bench's headline: the figure it is run for, beside its baseline of the same run.

Every bench ends by calling :func:`headline` once per figure it answers for; the line it
prints starts with :data:`PREFIX` and holds JSON, so ``bench/all.py`` collects it from the
bench's output and builds the table of ``bench/README.md`` from it. A person reads the
same line: what was measured, the figure, the baseline, their ratio and the goal.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

PREFIX = "headline "
"""How a headline line starts (the rest of the line is its JSON)."""


@dataclass(frozen=True)
class Headline:
    """One figure: ``ratio`` is figure / baseline (None when they are not comparable);
    ``goal`` says the target in words ("<= 1.2x"), ``met`` whether it held (None: no goal)."""

    bench: str
    measure: str
    figure: str
    baseline: str
    ratio: float | None = None
    goal: str = ""
    met: bool | None = None


def headline(
    bench: str,
    measure: str,
    figure: str,
    baseline: str,
    ratio: float | None = None,
    goal: str = "",
    met: bool | None = None,
) -> Headline:
    """Print one headline line (:data:`PREFIX` + JSON) and return it."""
    line = Headline(bench, measure, figure, baseline, ratio, goal, met)
    print(PREFIX + json.dumps(asdict(line), ensure_ascii=False), flush=True)
    return line


def parse(line: str) -> Headline | None:
    """The headline a line of a bench's output holds, or None when it holds none.

    Raises ValueError when the line starts with :data:`PREFIX` and its JSON is not a
    headline: a bench that prints a broken headline is a broken bench."""
    if not line.startswith(PREFIX):
        return None
    try:
        raw = json.loads(line[len(PREFIX) :])
        return Headline(**raw)
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"a broken headline line: {line[:200]!r} ({exc})") from exc
