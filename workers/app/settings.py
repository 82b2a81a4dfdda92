"""The one settings object of the runtime (environment prefix ``COUNCIL_``).

Built once at the edge (the CLI, or a worker starting) and passed down; nothing below
reads ``os.environ``. Every field has a laptop-safe default. Secrets are ``SecretStr``:
they never appear in a repr or a log line. Source: docs/style.md habit 8, docs/architecture.md
"One knob".
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from reviewers.sandbox.bubblewrap import PROGRAM_STORAGE_BYTES
from workers.app.redis_urls import is_sentinel, parse_sentinel
from workers.git.change_listing import DEFAULT_MAX_CHANGED_FILES
from workers.git.tree_unpacking import DEFAULT_MAX_UNPACKED_TREE_BYTES

_DURABILITY = re.compile(r"|aof|replicas:[1-9][0-9]*|aof\+replicas:[1-9][0-9]*")
"""The values of ``COUNCIL_DURABILITY``, lowercased."""

REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "sentinel://")
"""URL schemes of a Redis: redis-py's own, and Redis Sentinel's
(:mod:`workers.app.redis_urls`)."""

HOUR_S = 3600
DAY_S = 24 * HOUR_S


class Settings(BaseSettings):
    """Runtime configuration. Every field can be set as ``COUNCIL_<NAME>`` in the env."""

    model_config = SettingsConfigDict(env_prefix="COUNCIL_", extra="ignore", frozen=True)

    redis_url: SecretStr | None = None
    """Broker, results and state. Unset: embedded mode, everything inside the process."""

    prefix: str = "council:"
    """Prefix of every key the council writes in Redis (Celery's own keys aside)."""

    run_retention_s: int = Field(default=7 * DAY_S, ge=1)
    """Seconds run keys live after the run settles."""

    session_retention_s: int = Field(default=90 * DAY_S, ge=1)
    """Seconds a session's keys live after its last write (idle expiry)."""

    visibility_timeout_s: int = Field(default=2 * HOUR_S, ge=2)
    """Seconds before Redis redelivers an unacknowledged task. Must exceed twice the
    longest backstop of any roster, or a healthy long review is started again."""

    restore_interval_s: float | None = None
    """kombu's unacked-restore cadence in seconds (tests set 1); None keeps kombu's."""

    ratelimit_window_ms: int = Field(default=60_000, ge=1)
    """Milliseconds the roster's ``rpm``/``tpm`` limits count over (a minute; tests
    shorten it). Set it alike on every worker sharing a limit."""

    worker_threads: int = Field(default=16, ge=1)
    """Threads per worker process: reviewer calls wait on the network, so many at once."""

    batch_size: int = Field(default=64, ge=1)
    """Most model participants (``openai``, ``anthropic``) one ``council.review_batch``
    task carries: the coordinator (the CLI) sends a provider's participants in tasks of
    this many, each reviewed concurrently in one worker process. 1 sends one task each.
    Why 64: a batch is the unit a fleet spreads, and batch size barely matters to one
    process: ``bench/concurrency.py`` measured 500 streams of 2 s in one worker (2 cores)
    as 8 batches of 64 and as one of 500 alike, 530-670 ms over the 2 s, 115-190 ms of it
    the council's own (the rest is the SDK alone)."""

    max_change_bytes: int | None = Field(default=None, ge=1)
    """The hard cap of a change's diff (bytes, after [paths] and skipping): past it only
    the files of most value that fit are reviewed, and the round is partial. When set, it
    wins over the roster's ``[council] max_change_bytes`` (default 50,000,000)."""

    max_diff_bytes: int | None = None
    """Retired (``COUNCIL_MAX_DIFF_BYTES``): read and ignored, a round's note naming its
    successor ``COUNCIL_MAX_CHANGE_BYTES`` (a large change is no longer refused whole), so
    a worker or CI job that still sets it keeps running."""

    max_tree_bytes: int | None = Field(default=None, ge=1)
    """Largest packed head tree (git archive, gzip) stored for workers. When set, it wins
    over the roster's ``[council] max_tree_bytes`` (default 50 MiB)."""

    max_unpacked_tree_bytes: int = Field(default=DEFAULT_MAX_UNPACKED_TREE_BYTES, ge=1)
    """Largest unpacked head tree (512 MiB), counted as a tar stream counts it (each
    file's bytes padded to 512-byte blocks, plus a 512-byte header per entry): the CLI
    refuses a bigger tree before packing it, and a worker refuses to unpack one (a small
    archive of zeros unpacks to gigabytes). Set it alike on workers and the CLI."""

    max_changed_files: int = Field(default=DEFAULT_MAX_CHANGED_FILES, ge=1)
    """Most files (added, removed, changed, renamed: each once) the change may list
    (100,000): the list is read from git as a stream and git is stopped past it, before
    any file's size or diff is read. Why: a repository of a few KiB can reuse one tree
    object to list a million files (a "git bomb")."""

    tool_read_max_bytes: int = Field(default=1024 * 1024, ge=1)
    """Most bytes of one file a model reviewer's ``read_file`` tool reads (1 MiB); the
    reply says where a larger file was cut. Set on the workers."""

    journal_max_entries: int = Field(default=100, ge=1)
    """Journal entries read per participant (docs/harvest.md §5); the rest are reported."""

    journal_max_entry_bytes: int = Field(default=65536, ge=1)
    """UTF-8 bytes per journal entry read (docs/harvest.md §5)."""

    answer_max_entries: int = Field(default=1000, ge=1)
    """Findings entries read from one answer (docs/harvest.md §6); the rest are reported
    (``over-cap``) and the reviewer counts as heard in part."""

    artifact_max_bytes: int = Field(default=1024 * 1024, ge=1)
    """Largest artifact one put may store (bytes as given, JSON as compact UTF-8): 1 MiB.
    The artifact store holds what is too large to ride a checkpoint (an ask's props over
    16 KiB); a larger put is refused, naming this cap."""

    artifact_run_max_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    """Bytes all of one run's artifacts may take together (16 MiB), so a run that puts in
    a loop cannot fill Redis; a put past it is refused, naming this cap."""

    watchdog_slack_ms: int = Field(default=60_000, ge=0)
    """Milliseconds the waiting CLI allows past the longest backstop before it
    finalizes the run from the journals itself (a chord that never fires)."""

    abandon_after_s: int = Field(default=300, ge=1)
    """Seconds a run may stay opened and not dispatched before a worker's sweep settles
    it ``cancelled`` (its CLI died between opening and dispatch)."""

    sweep_interval_s: float = Field(default=2.0, gt=0)
    """Seconds between two sweeps (lapsed leases, abandoned runs, runs past their
    deadline); every worker tries, one per period sweeps."""

    durability: str = ""
    """What a run's filing must reach before ``council review`` reports it settled, beyond
    Redis's memory: ``aof`` (fsynced to this Redis's AOF: ``WAITAOF``, Redis 7.2 or later),
    ``replicas:N`` (acknowledged by N replicas: ``WAIT``), ``aof+replicas:N`` (both).
    Empty: nothing is waited for (``appendfsync everysec`` may lose the last second; the
    workers keep what they wrote meanwhile, docs/celery.md §1.17)."""

    durability_timeout_ms: int = Field(default=5000, ge=1)
    """How long ``council review`` waits for :attr:`durability` before exit 3."""

    wait_poll: bool = False
    """The waiting CLI polls the run every 10 ms (the old way, kept to measure it: see
    ``bench/fleet.py``) instead of being woken by Redis."""

    state_path: Path | None = None
    """Embedded mode: the JSON file sessions are kept in between runs (default: the
    user's cache directory)."""

    work_dir: Path | None = None
    """Where workers unpack run trees (default: the system temp directory), each run in a
    private directory (0700) of its own."""

    providers: Path | None = None
    """The worker's provider registry, a TOML file (``council worker --providers FILE``):
    the endpoints it calls, the variables holding their keys, what reviewer programs may
    be passed. Unset: the defaults from ``OPENAI_API_KEY``/``ANTHROPIC_API_KEY``
    (:func:`council.roster.providers.default_registry`). Source: docs/operating.md "The
    provider registry"."""

    local_base_url: str | None = None
    """Without a registry file: a keyless OpenAI-compatible server (Ollama, vLLM) added to
    the defaults as provider ``local`` (``http://localhost:11434/v1``)."""

    bwrap: str = "bwrap"
    """The bubblewrap binary reviewer programs run in (a name on PATH or a path; Debian's
    package ``bubblewrap``). Naming one that is not there shows what happens without it
    (``COUNCIL_BWRAP=/nonexistent``)."""

    program_storage_bytes: int = Field(default=PROGRAM_STORAGE_BYTES, ge=1024 * 1024)
    """Bytes a sandboxed reviewer program may hold written at once (64 MiB, at least 1
    MiB): its journal, ``scripts/``, ``HOME``, ``TMPDIR``, ``/tmp`` and ``/dev/shm``, all in
    memory. Reaching it stops that reviewer (``disk``), its journal kept; freed when it
    ends. Set on the workers; docs/security.md "Sandbox"."""

    ci: str | None = Field(default=None, validation_alias="CI")
    """The ``CI`` variable (set by every CI service): in CI a reviewer program never runs
    unsandboxed. Unset, empty, ``0`` or ``false``: not CI."""

    @field_validator("durability", mode="before")
    @classmethod
    def _durability(cls, value: object) -> object:
        """``aof``, ``replicas:N`` (N >= 1), ``aof+replicas:N`` or empty, in any case."""
        text = value.strip().lower() if isinstance(value, str) else value
        if not isinstance(text, str) or not _DURABILITY.fullmatch(text):
            shown = repr(value) if isinstance(value, str) else type(value).__name__
            raise ValueError(
                f"{shown} is not one of: aof, replicas:N (N at least 1), aof+replicas:N, "
                "or unset (e.g. COUNCIL_DURABILITY=replicas:1)"
            )
        return text

    @field_validator("redis_url", mode="before")
    @classmethod
    def _redis_url(cls, value: object) -> object:
        """An empty URL (an unset CI secret) means embedded mode; a URL must be Redis's (a
        Sentinel URL must name its sentinels and master)."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        if not isinstance(text, str) or not text.strip().lower().startswith(REDIS_SCHEMES):
            raise ValueError(
                "must be a Redis URL starting with redis://, rediss://, unix:// or "
                "sentinel:// (e.g. redis://localhost:6379/0, or "
                "sentinel://host1:26379;sentinel://host2:26379/0?master_name=mymaster)"
            )
        if any(c.isspace() for c in text.strip()):
            raise ValueError(
                "holds a space, tab or line break (a URL cannot): percent-encode it in the "
                "password (a space is %20) and check the URL was not cut in two"
            )
        if is_sentinel(text):
            try:
                parse_sentinel(text)
            except ValueError as exc:
                raise ValueError(f"this Sentinel URL {exc}") from None
        elif (db := _plain_db(text)) is not None and not db.isdigit():
            raise ValueError(
                f"names database {db!r}: write a number (redis://HOST:PORT/0), or leave the "
                "path out for database 0"
            )
        elif (port := _plain_port(text)) is not None and not (
            port.isdigit() and 1 <= int(port) <= 65535
        ):
            # Not shown: with a '/', '?' or '#' left in the password, it is the password's.
            raise ValueError(
                "names a port that is not a number from 1 to 65535: write "
                "redis://HOST:6379/0, and percent-encode ':' '/' '?' '#' '@' in the password"
            )
        return value

    @property
    def in_ci(self) -> bool:
        """Whether ``CI`` says this runs in CI (set, and not empty, ``0`` or ``false``)."""
        return self.ci is not None and self.ci.strip().lower() not in ("", "0", "false", "no")

    def redis_url_value(self) -> str | None:
        """The Redis URL in clear, for opening connections only (never log it)."""
        return self.redis_url.get_secret_value() if self.redis_url is not None else None


def _plain_db(url: str) -> str | None:
    """The database a ``redis://`` or ``rediss://`` URL's path names (``"0"``), or None
    when it names none (no path, or ``unix://``, whose database is ``?db=``)."""
    scheme, _, rest = url.strip().partition("://")
    if scheme.lower() not in ("redis", "rediss"):
        return None
    path = rest.split("?", 1)[0].split("#", 1)[0]
    _, slash, db = path.rpartition("@")[2].partition("/")
    if not slash:
        return None
    return db.strip("/") or None


def _plain_port(url: str) -> str | None:
    """The port a ``redis://`` or ``rediss://`` URL's host names (``"6379"``), or None
    when it names none (no ``:PORT``, an IPv6 host without one, or ``unix://``)."""
    scheme, _, rest = url.strip().partition("://")
    if scheme.lower() not in ("redis", "rediss"):
        return None
    host = re.split("[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]  # as urlsplit reads it
    if host.startswith("["):  # [::1]:6379
        host = host.partition("]")[2]
    _, colon, port = host.partition(":")
    return port if colon else None
