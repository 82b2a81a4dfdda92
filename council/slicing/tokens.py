"""A participant's context budget, and an estimate of a text's tokens with no download.

The estimate is UTF-8 bytes over a family's bytes-per-token ratio, rounded up: a
non-ASCII character costs its 2-4 bytes, so dense scripts are not undercounted. The
ratios are conservative (real tokenizers give more bytes per token on code and prose), so
the estimate errs high; docs/architecture.md "Slices" gives its error.
Source: docs/architecture.md "Slices".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from council.model.participant import Participant


@dataclass(frozen=True)
class Family:
    """A model family: the model names it covers (prefixes), its context window and how
    many UTF-8 bytes one token holds at the least on code (the estimate's ratio)."""

    prefixes: tuple[str, ...]
    context_tokens: int
    bytes_per_token: float


FAMILIES: tuple[Family, ...] = (
    Family(("gpt-4.1",), 1_047_576, 3.0),
    Family(("gpt-5",), 400_000, 3.0),
    Family(("gpt-4o", "chatgpt-4o"), 128_000, 3.0),
    Family(("o1", "o3", "o4"), 200_000, 3.0),
    Family(("claude",), 200_000, 2.8),
)
"""Known families, the first matching prefix wins (``gpt-4.1-mini`` is ``gpt-4.1``)."""

UNKNOWN = Family((), 128_000, 2.5)
"""A model of no known family (a local server's, say), and the ratio of a program."""

ANSWER_TOKENS = 16_384
"""Tokens kept free for a model's answer when it sets no ``max_output_tokens``."""

MODEL_BACKENDS = frozenset({"openai", "anthropic"})
"""Backends whose participants always have a budget (their family's window by default)."""


def family(model: str | None) -> Family:
    """The family of a model name (case-insensitive, provider prefix ``x/`` dropped),
    :data:`UNKNOWN` when none matches."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    return next((f for f in FAMILIES if name.startswith(f.prefixes)), UNKNOWN)


def context_budget(p: Participant) -> int | None:
    """The tokens ``p``'s whole request may hold: its roster's ``context_tokens``, else its
    model family's window; None for a program without one (never sliced) and for the
    backends that are not sent the change (``sarif``, ``replay``)."""
    if p.backend in ("sarif", "replay"):
        return None
    if p.context_tokens is not None:
        return p.context_tokens
    return family(p.model).context_tokens if p.backend in MODEL_BACKENDS else None


def answer_room(p: Participant) -> int:
    """Tokens of the budget kept for the answer: ``max_output_tokens``, else
    :data:`ANSWER_TOKENS` for a model; 0 for a program (its answer is its stdout)."""
    if p.backend not in MODEL_BACKENDS:
        return 0
    cap = p.options.get("max_output_tokens")
    return int(cap) if isinstance(cap, int) else ANSWER_TOKENS


def estimate(text: str, bytes_per_token: float) -> int:
    """Estimated tokens of ``text``: its UTF-8 bytes over ``bytes_per_token``, rounded up.
    An ASCII text is measured without copying it."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return math.ceil(size / bytes_per_token)


def ratio(p: Participant) -> float:
    """The bytes-per-token ratio of ``p``'s estimate (its family's; a program's
    :data:`UNKNOWN`'s)."""
    known = family(p.model) if p.backend in MODEL_BACKENDS else UNKNOWN
    return known.bytes_per_token
