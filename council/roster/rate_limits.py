"""Rate limits a roster sets on model providers: requests and tokens per minute.

``[limits.openai]`` holds every model of a backend, ``[limits."openai:gpt-4.1"]`` one
model; each sets ``rpm`` and/or ``tpm`` (:class:`RateLimit`), for all workers together. A
request is admitted only when EVERY limit that applies has room (:func:`limits_for`),
enforced across workers through Redis (:class:`workers.stores.ratelimit.RedisRateLimiter`).
Source: docs/celery.md §1.10 (a provider-wide limit lives in Redis; Celery's
``rate_limit`` is per worker).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from council.errors import RosterError
from council.roster.toml_values import refuse_unknown, table_at, whole

LIMITED_BACKENDS: tuple[str, ...] = ("openai", "anthropic")
"""Backends that send requests to a provider, so a rate limit can apply to them."""

LIMIT_KEYS: tuple[str, ...] = ("rpm", "tpm")
"""Keys of one ``[limits."..."]`` table."""


class RateLimit(BaseModel):
    """How much one provider (or one of its models) may be sent per minute.

    ``rpm``: requests per minute; ``tpm``: tokens per minute (a request counts its
    estimate when admitted, corrected to its real usage when settled). None = that
    dimension is not limited. At least one is set.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)


def limit_key(backend: str, model: str | None) -> str:
    """The key a reviewer backend passes to ``RateLimiter.acquire``: ``"openai:gpt-4.1"``
    (``"openai"`` for a participant without a model)."""
    return backend if model is None else f"{backend}:{model}"


def limits_for(key: str, limits: Mapping[str, RateLimit]) -> list[tuple[str, RateLimit]]:
    """The limits that apply to a request on ``key``, most specific first, by name.

    ``"openai:gpt-4.1"`` is held to ``limits["openai:gpt-4.1"]`` and ``limits["openai"]``,
    whichever exist; a key with none is not limited (an empty list).
    """
    backend = key.split(":", 1)[0]
    names = [key] if backend == key else [key, backend]
    return [(name, limits[name]) for name in names if name in limits]


def parse_limits(table: object, where: str = "limits") -> dict[str, RateLimit]:
    """The roster's ``[limits]`` table, checked: name → :class:`RateLimit`.

    A name is ``"<backend>"`` or ``"<backend>:<model>"`` with a backend of
    :data:`LIMITED_BACKENDS`; each entry holds ``rpm`` and/or ``tpm``, whole numbers
    above 0. Why strict: a limit on a misspelt provider would be silently never applied,
    and the provider's 429s would come back. Raises :class:`~council.errors.RosterError`
    naming the field (``limits."openai:gpt-4.1".rpm``).
    """
    how = 'Write each limit as [limits.openai] or [limits."openai:gpt-4.1"] with rpm/tpm'
    found: dict[str, RateLimit] = {}
    for name, entry in table_at(table, where, how).items():
        path = RosterError.field(where, name)
        backend = name.split(":", 1)[0]
        if backend not in LIMITED_BACKENDS or name.endswith(":"):
            raise RosterError(
                path,
                f"{name!r} is not a model backend, nor one of its models",
                f'Name "<backend>" or "<backend>:<model>" with a backend of '
                f"{', '.join(LIMITED_BACKENDS)}",
            )
        entry_table = table_at(entry, path, how)
        refuse_unknown(entry_table, LIMIT_KEYS, path)
        values = {
            key: whole(
                entry_table,
                key,
                path,
                f"Write {key} as a whole number per minute, above 0, e.g. {key} = 500",
                low=1,
                high=None,
            )
            for key in LIMIT_KEYS
        }
        if values["rpm"] is None and values["tpm"] is None:
            raise RosterError(
                path,
                "sets no limit",
                "Write rpm (requests per minute) and/or tpm (tokens per minute)",
            )
        found[name] = RateLimit(rpm=values["rpm"], tpm=values["tpm"])
    return found
