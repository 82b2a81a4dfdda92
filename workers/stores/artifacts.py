"""The artifact store: large values a run keeps by reference, scoped to that run.

An ask's props too large to ride every stored checkpoint (a 200-option list) are put here
once, and the ask carries the ref (``props_ref``): ``art_`` and 22 base62 characters from
:mod:`secrets` (about 131 random bits), never guessed or derived from another. One hash per
run, ``run:{run}:artifacts``, so another run's ref is simply not a field of it, and it
expires with the run's other keys (a put after settling takes the run's remaining TTL). Caps:
``COUNCIL_ARTIFACT_MAX_BYTES`` (1 MiB) per artifact, checked before anything is sent;
``COUNCIL_ARTIFACT_RUN_MAX_BYTES`` (16 MiB) per run, checked with the write in one Lua
script. Source: docs/evidence-and-asks.md §2, docs/architecture.md "State in Redis".
"""

from __future__ import annotations

import json
import re
import secrets
import string
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from council.errors import ConfigurationError
from workers.stores import RedisClient
from workers.stores.keys import Keys

ArtifactKind = Literal["bytes", "json"]
"""What was put: bytes come back as bytes, a JSON value as that value."""

REF_PREFIX = "art_"
"""What every artifact ref starts with."""

REF_CHARS = 22
"""Random base62 characters after the prefix (62**22 is about 2**131)."""

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
"""The alphabet of a ref's random part."""

REF_PATTERN = re.compile(rf"{REF_PREFIX}[0-9A-Za-z]{{{REF_CHARS}}}")
"""A ref as the store makes them; anything else resolves nowhere (and is never looked
up, so no text can name another field of the run's hash)."""

DEFAULT_MAX_BYTES = 1024 * 1024
"""One artifact's cap when the settings give none (``COUNCIL_ARTIFACT_MAX_BYTES``)."""

DEFAULT_RUN_MAX_BYTES = 16 * 1024 * 1024
"""A run's artifacts' cap when the settings give none (``COUNCIL_ARTIFACT_RUN_MAX_BYTES``)."""

TOTAL_FIELD = "total"
"""The hash field counting the bytes of the run's artifacts (no ref can be named so)."""

_PUT = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return {-1, 0} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {-2, 0} end
local total = tonumber(redis.call('HGET', KEYS[2], ARGV[5]) or '0')
local size = string.len(ARGV[2])
if total + size > tonumber(ARGV[4]) then return {-3, total} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2], ARGV[1] .. ':kind', ARGV[3])
redis.call('HINCRBY', KEYS[2], ARGV[5], size)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return {0, total + size}
"""
"""KEYS: the run's hash, its artifacts hash; ARGV: the ref, the bytes, the kind, the
run's cap, the total field. Returns {status, total}: 0 stored, -1 the run is unknown or
expired, -2 the ref is taken (a new one is drawn), -3 the run's cap would be passed."""

_HEAD = """
local kind = redis.call('HGET', KEYS[1], ARGV[1] .. ':kind')
if not kind then return false end
return {kind, redis.call('HSTRLEN', KEYS[1], ARGV[1])}
"""
"""KEYS: the artifacts hash; ARGV: the ref. Its kind and size, without the bytes."""

PUT_TRIES = 3
"""Fresh refs drawn before a put gives up (a collision is a 2**-131 event)."""


class ArtifactRefused(ConfigurationError, ValueError):
    """A put the artifact store will not take (the value, or the run it is put for)."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(f"artifact store: {problem}. {fix}")


class ArtifactTooLarge(ArtifactRefused):
    """An artifact, or a run's artifacts together, over a cap; names the cap and its knob."""

    def __init__(self, what: str, size: int, cap: int, knob: str) -> None:
        self.what, self.size, self.cap, self.knob = what, size, cap, knob
        super().__init__(
            f"{what} would be {size} bytes, over the cap of {cap} bytes ({knob})",
            f"Put less (a reference to where the data lives, say), or raise {knob}.",
        )


@dataclass(frozen=True)
class ArtifactHead:
    """What an artifact is, without its bytes: its ref, kind and size in bytes."""

    ref: str
    kind: ArtifactKind
    size: int


@dataclass(frozen=True)
class Artifact:
    """One stored artifact: ``data`` is the bytes as stored (JSON as compact UTF-8)."""

    ref: str
    kind: ArtifactKind
    data: bytes

    def value(self) -> bytes | JsonValue:
        """What was put: the bytes, or the JSON value decoded again."""
        if self.kind == "bytes":
            return self.data
        decoded: JsonValue = json.loads(self.data)
        return decoded


@dataclass(frozen=True)
class RunArtifacts:
    """The artifacts of one run, as an ask's check sees them
    (:class:`council.asks.ArtifactScope`): a ref resolves only when this run put it."""

    store: ArtifactStore
    run_id: str

    def resolves(self, ref: str) -> bool:
        """Whether ``ref`` names an artifact of this run (one HEXISTS; none for a ref
        the store could not have made)."""
        return self.store.exists(self.run_id, ref)

    def put(self, value: JsonValue) -> str:
        """Put a JSON value in this run's scope (a model's ``store_artifact``); its new
        ref. Raises :class:`ArtifactRefused` (a ValueError) as
        :meth:`ArtifactStore.put` does; a :class:`~reviewers.base.ArtifactDesk`."""
        return self.store.put(self.run_id, value)


def new_ref() -> str:
    """A fresh ref: ``art_`` and 22 base62 characters from :mod:`secrets`."""
    return REF_PREFIX + "".join(secrets.choice(BASE62) for _ in range(REF_CHARS))


class ArtifactStore:
    """Put and read a run's artifacts in Redis, each run its own scope."""

    def __init__(
        self,
        client: RedisClient,
        keys: Keys,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        run_max_bytes: int = DEFAULT_RUN_MAX_BYTES,
    ) -> None:
        self._r, self._keys = client, keys
        self._max_bytes, self._run_max_bytes = max_bytes, run_max_bytes
        self._put = client.register_script(_PUT)
        self._head = client.register_script(_HEAD)

    def put(self, run_id: str, value: bytes | JsonValue) -> str:
        """Store ``value`` in the run's scope and return its new ref.

        ``bytes`` (or a bytearray, memoryview) are stored as given; anything else must be
        a JSON value (a ``str`` is a JSON string) and is stored as compact UTF-8 JSON.
        Raises :class:`ArtifactTooLarge` over ``COUNCIL_ARTIFACT_MAX_BYTES`` (checked
        before anything is sent) or past ``COUNCIL_ARTIFACT_RUN_MAX_BYTES`` for the run,
        and :class:`ArtifactRefused` for a value JSON cannot carry or a run that is
        unknown or expired (an artifact belongs to a run, and lives as long as it).
        """
        kind, data = _encoded(value)
        if len(data) > self._max_bytes:
            raise ArtifactTooLarge(
                "the artifact", len(data), self._max_bytes, "COUNCIL_ARTIFACT_MAX_BYTES"
            )
        keys = [self._keys.run(run_id), self._keys.run_artifacts(run_id)]
        for _ in range(PUT_TRIES):
            ref = new_ref()
            status, total = (
                int(n)
                for n in self._put(
                    keys=keys, args=[ref, data, kind, self._run_max_bytes, TOTAL_FIELD]
                )
            )
            if status == 0:
                return ref
            if status == -1:
                raise ArtifactRefused(
                    f"run {run_id!r} is unknown or expired",
                    "Put an artifact for a run that is open (or settled and not yet expired).",
                )
            if status == -3:
                raise ArtifactTooLarge(
                    f"run {run_id!r}'s artifacts",
                    total + len(data),
                    self._run_max_bytes,
                    "COUNCIL_ARTIFACT_RUN_MAX_BYTES",
                )
        raise RuntimeError(f"no free artifact ref after {PUT_TRIES} draws")  # pragma: no cover

    def exists(self, run_id: str, ref: str) -> bool:
        """Whether ``ref`` is an artifact of ``run_id`` (another run's ref is not)."""
        if not REF_PATTERN.fullmatch(ref):
            return False
        return bool(self._r.hexists(self._keys.run_artifacts(run_id), ref))

    def head(self, run_id: str, ref: str) -> ArtifactHead | None:
        """The artifact's kind and size, without its bytes; None when ``ref`` does not
        resolve in the run's scope (unknown, another run's, expired)."""
        if not REF_PATTERN.fullmatch(ref):
            return None
        found = self._head(keys=[self._keys.run_artifacts(run_id)], args=[ref])
        if not found:
            return None
        kind, size = found
        return ArtifactHead(ref=ref, kind=_kind(kind), size=int(size))

    def get(self, run_id: str, ref: str) -> Artifact | None:
        """The artifact, or None when ``ref`` does not resolve in the run's scope."""
        if not REF_PATTERN.fullmatch(ref):
            return None
        data, kind = self._r.hmget(self._keys.run_artifacts(run_id), [ref, f"{ref}:kind"])
        if data is None or kind is None:
            return None
        return Artifact(ref=ref, kind=_kind(kind), data=bytes(data))

    def total(self, run_id: str) -> int:
        """The bytes of all the run's artifacts (0 when it has none)."""
        raw = self._r.hget(self._keys.run_artifacts(run_id), TOTAL_FIELD)
        return int(raw) if raw is not None else 0

    def scope(self, run_id: str) -> RunArtifacts:
        """The run's artifacts as the scope an ask's ``props_ref`` must resolve in."""
        return RunArtifacts(self, run_id)


def _encoded(value: bytes | JsonValue) -> tuple[ArtifactKind, bytes]:
    """The kind and stored bytes of a value to put; :class:`ArtifactRefused` when a
    non-bytes value is not JSON."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes", bytes(value)
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return "json", text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        # UnicodeEncodeError (a lone surrogate) is a ValueError too.
        raise ArtifactRefused(
            f"a {type(value).__name__} that JSON cannot carry was put",
            "Put bytes, or a JSON value (objects with string keys, arrays, strings, finite "
            "numbers, booleans, null).",
        ) from None


def _kind(raw: bytes) -> ArtifactKind:
    """The stored kind, as the literal (``bytes`` for anything but ``json``)."""
    return "json" if raw == b"json" else "bytes"
