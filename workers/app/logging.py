"""Structured JSON logging for workers and the CLI, with secrets removed from every line.

A run spans one CLI and several worker processes, so it is followed as one JSON object per
line on stderr, filtered by ``run_id``, ``session``, ``participant``, ``task_id`` and
``attempt``; no API key or Redis password may reach one (:class:`Redact` masks them in every
value, :func:`redact_url` and :func:`redact_text` in messages built elsewhere), and no
value can write a CI runner's command (:class:`NoCommands`). One processor
chain serves structlog's calls and foreign stdlib records (Celery, kombu), so every line has
the same shape. A task's context is cleared after it: pool threads run task after task, and
contextvars persist.

Source: docs/architecture.md "Observability", docs/celery.md §0 item 7 and §2.1,
docs/style.md habit 10.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO, cast

import structlog
from pydantic import SecretBytes, SecretStr
from structlog.contextvars import bind_contextvars, clear_contextvars, merge_contextvars
from structlog.processors import JSONRenderer, TimeStamper, format_exc_info
from structlog.stdlib import LoggerFactory, ProcessorFormatter, add_log_level, add_logger_name
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from council.rendering.escape import for_log

__all__ = [
    "MASK",
    "SECRET_KEY_PARTS",
    "NoCommands",
    "Redact",
    "bind_task_context",
    "clear_task_context",
    "configure_logging",
    "get_logger",
    "real_stream",
    "redact_text",
    "redact_url",
    "render_json_line",
    "set_record_fields",
    "show_url_as",
]

MASK = "***"
"""What a removed secret is replaced with, everywhere."""

SECRET_KEY_PARTS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "authorization",
    "credential",
    "cookie",
)
"""Substrings (case-insensitive, ``-`` read as ``_``) that make a field name secret."""

_HANDLER_NAME = "council"
"""Name of the one root handler configure_logging owns; a second call replaces it."""

_PROCESSOR_META = frozenset({"_record", "_from_structlog", "exc_info", "stack_info"})
"""Event-dict keys that belong to later processors (ProcessorFormatter, format_exc_info)."""

_MAX_DEPTH = 16
"""Nesting depth after which a value is rendered with repr() and redacted as text."""

_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<userinfo>[^\s/?#'\"<>]*)@", re.I
)
# The userinfo run is greedy, so it ends at the LAST "@" before the host, as urlsplit reads it.

_SECRET_NAMES = "|".join(re.escape(part).replace("_", "[_-]") for part in SECRET_KEY_PARTS)
_ASSIGNMENT = re.compile(
    rf"(?P<name>[\w-]*(?:{_SECRET_NAMES})[\w-]*)(?P<sep>[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s&,;'\"]+)",
    re.I,
)
_BEARER = re.compile(r"\b(?P<scheme>bearer)\s+[\w\-.~+/]+=*", re.I)
_KEY_SHAPES = re.compile(
    r"\bsk-[\w-]{20,}"  # OpenAI / Anthropic style keys
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bgithub_pat_\w{20,}"  # GitHub fine-grained tokens
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
)


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _password = match["userinfo"].partition(":")
    return f"{match['scheme']}{user}:{MASK}@" if colon else f"{match['scheme']}{MASK}@"


def _mask_assignment(match: re.Match[str]) -> str:
    if match["value"].isdigit():  # a count such as tokens_in=1200 is not a secret
        return match[0]
    if match["name"].lower() == "tokens":  # prose: "a budget of 6000 tokens: shown are"
        return match[0]
    return f"{match['name']}{match['sep']}{MASK}"


def redact_url(url: str) -> str:
    """Return ``url`` with its password (or bare token user) and secret query values masked.

    ``redis://:pw@h:6379/0`` → ``redis://:***@h:6379/0``; ``redis://user:pw@h`` →
    ``redis://user:***@h``; ``https://tok@host`` → ``https://***@host``;
    ``https://h/x?api_key=abc`` → ``https://h/x?api_key=***``; a Sentinel URL's addresses
    (``;`` between them) one by one. Why: error messages name the Redis or API endpoint
    that failed, and the URL the user configured carries the password.
    Source: docs/architecture.md "Observability".
    """
    if url.strip().lower().startswith("sentinel://") and ";" in url:  # address by address
        return ";".join(redact_url(part) for part in url.split(";"))
    scheme, sep, rest = url.strip().partition("://")
    if sep and "@" in rest and not any(c.isspace() for c in rest):
        # One URL: everything before its LAST "@" is userinfo, even when a password holds
        # "/" or ":" and no parser would read it (the case where leaking is likeliest).
        userinfo, _, host = rest.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        masked = f"{user}:{MASK}" if colon and "/" not in user else MASK
        return _ASSIGNMENT.sub(_mask_assignment, f"{scheme}://{masked}@{host}")
    return redact_text(url)


def redact_text(text: str) -> str:
    """Return ``text`` with every secret form ``Redact`` knows masked.

    Covers URL passwords, ``name=value`` / ``name: value`` where the name looks secret (digits
    only are kept: token counts), ``Bearer <token>``, and key shapes (``sk-…``, ``ghp_…``,
    ``github_pat_…``, ``AKIA…``). Why: exception text and subprocess output are free text;
    the secret has no field name there to give it away.
    """
    text = _KEY_SHAPES.sub(MASK, text)
    text = _BEARER.sub(lambda m: f"{m['scheme']} {MASK}", text)
    return _ASSIGNMENT.sub(_mask_assignment, _URL_USERINFO.sub(_mask_userinfo, text))


class Redact:
    """Processor that masks secrets in every value of the event dict, however deeply nested.

    A value whose key looks secret (any of ``secret_key_parts`` in its name) becomes
    ``MASK`` unless it is a number, a bool or None: ``tokens_in=1200`` is a count every
    reviewer line carries, never a credential. Strings go through ``redact_text``; dicts,
    lists and tuples are walked; pydantic ``SecretStr``/``SecretBytes`` become ``MASK``; any
    other object is rendered as JSONRenderer would (``__structlog__()`` or ``repr()``) and
    then redacted, so an exception object cannot carry a password past this step.

    Place it after ``format_exc_info`` so that rendered tracebacks are redacted too. Keys
    that belong to later processors (``exc_info``, ProcessorFormatter's ``_record``) are left
    alone. Source: docs/architecture.md "Observability", docs/style.md habit 10.
    """

    def __init__(self, secret_key_parts: Iterable[str] = SECRET_KEY_PARTS) -> None:
        self._parts = tuple(part.lower().replace("-", "_") for part in secret_key_parts)

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        return {
            key: value if key in _PROCESSOR_META else self._field(key, value, 0)
            for key, value in event_dict.items()
        }

    def is_secret_key(self, key: object) -> bool:
        """Whether a field named ``key`` holds a secret (case-insensitive substring match)."""
        name = str(key).lower().replace("-", "_")
        return any(part in name for part in self._parts)

    def _field(self, key: object, value: Any, depth: int) -> Any:
        if self.is_secret_key(key) and not _is_scalar(value):
            return MASK
        return self._value(value, depth)

    def _value(self, value: Any, depth: int) -> Any:
        if _is_scalar(value):
            return value
        if isinstance(value, str):
            return redact_text(value)
        if isinstance(value, SecretStr | SecretBytes):
            return MASK
        if depth < _MAX_DEPTH:
            if isinstance(value, Mapping):
                return {k: self._field(k, v, depth + 1) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return type(value)(self._value(item, depth + 1) for item in value)
        return redact_text(_render(value))


class NoCommands:
    """Processor that keeps every string of a line (event, field values, nested keys and
    values) from writing a CI runner's command: ``##[`` becomes ``##\\[`` as
    :func:`council.rendering.escape.for_log` writes it (GitHub's runner reads ``##[error]``
    anywhere in a line). ``one_line`` (the console renderer, which writes strings raw):
    newlines and control characters are escaped too, so no value starts a line
    (``::add-mask::``); a traceback (``exception``, ``stack``) keeps its lines, each line
    starting with ``::`` escaped. JSON writes newlines as ``\\n`` itself.

    Place it after :class:`Redact` (the masks see the text as written). Idempotent. Why:
    fields carry what programs and the change wrote (a reviewer's stderr in ``failure``).
    Source: docs/architecture.md "Observability", docs/security.md "The change is
    untrusted input".
    """

    _MULTI_LINE = frozenset({"exception", "stack"})

    def __init__(self, *, one_line: bool = False) -> None:
        self.one_line = one_line

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        return {
            self._text(key, True) if isinstance(key, str) else key: (
                value
                if key in _PROCESSOR_META
                else self._value(value, self.one_line and key not in self._MULTI_LINE, 0)
            )
            for key, value in event_dict.items()
        }

    def _text(self, text: str, one_line: bool) -> str:
        if self.one_line:
            return for_log(text, one_line=one_line)
        return text.replace("##[", "##\\[")

    def _value(self, value: Any, one_line: bool, depth: int) -> Any:
        if isinstance(value, str):
            return self._text(value, one_line)
        if depth < _MAX_DEPTH:
            if isinstance(value, Mapping):
                return {
                    self._text(k, True) if isinstance(k, str) else k: self._value(
                        v, one_line, depth + 1
                    )
                    for k, v in value.items()
                }
            if isinstance(value, list | tuple):
                return type(value)(self._value(item, one_line, depth + 1) for item in value)
        return value


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, bool | int | float)


def _render(value: object) -> str:
    structlog_hook = getattr(value, "__structlog__", None)
    if callable(structlog_hook):
        return str(structlog_hook())
    return repr(value)


RecordFields = Callable[[logging.LogRecord], "Mapping[str, object] | None"]
"""Fields a stdlib record gets before it is formatted (None: none), for records written
where no context is bound: Celery's "Task … received" (:mod:`workers.app.task_lines`)."""


class _RecordFields(logging.Filter):
    """The handler's filter: asks :data:`RecordFields` for a record's fields, in the thread
    that logs it and outside the handler's lock (a lookup may wait on Redis), and keeps
    them on the record for :func:`_merge_record_fields`. Never drops a record, never raises."""

    def __init__(self) -> None:
        super().__init__()
        self.source: RecordFields | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        source = self.source
        if source is not None:
            try:
                fields = source(record)
            except Exception:  # a line is never lost to its decoration
                fields = None
            if fields:
                record.council_fields = dict(fields)
        return True


_RECORD_FIELDS = _RecordFields()

_URL_FORMS: dict[str, str] = {}
"""A URL as another library shows it → as ours does (:func:`show_url_as`)."""


def set_record_fields(source: RecordFields | None) -> None:
    """Give stdlib records outside any bound context the fields ``source`` finds for them
    (bound context wins over them); None stops it."""
    _RECORD_FIELDS.source = source


def show_url_as(theirs: str, ours: str) -> None:
    """Write ``theirs`` (a URL as a library masks it) as ``ours`` in stdlib records'
    messages. Why: kombu shows ``redis://:**@host`` for a URL with no password at all,
    which reads as one with a password; ours (:func:`redact_url`) masks only what is there."""
    if theirs and theirs != ours:
        _URL_FORMS[theirs] = ours


def _merge_record_fields(
    logger: WrappedLogger, method_name: str, event_dict: EventDict
) -> EventDict:
    """A foreign record's :func:`set_record_fields` fields and its URLs as ours show them."""
    record = event_dict.get("_record")
    fields = getattr(record, "council_fields", None)
    if isinstance(fields, Mapping):
        for key, value in fields.items():
            event_dict.setdefault(key, value)
    event = event_dict.get("event")
    if isinstance(event, str):
        for theirs, ours in _URL_FORMS.items():
            event = event.replace(theirs, ours)
        event_dict["event"] = event
    return event_dict


def _shared_processors(*, foreign: bool = False, console: bool = False) -> list[Processor]:
    """The chain every line runs through, whether it came from structlog or stdlib
    (``foreign``: a stdlib record's, which also gets :func:`_merge_record_fields`;
    ``console``: for the console renderer, which needs newlines escaped)."""
    return [
        merge_contextvars,
        *([_merge_record_fields] if foreign else []),
        add_logger_name,
        add_log_level,
        TimeStamper(fmt="iso", utc=True),
        format_exc_info,
        Redact(),
        NoCommands(one_line=console),
    ]


def _level_number(level: str) -> int:
    names = logging.getLevelNamesMapping()
    try:
        return names[level.upper()]
    except KeyError:
        known = ", ".join(sorted(n for n in names if n != "NOTSET"))
        raise ValueError(f"unknown log level {level!r}; use one of {known}") from None


def configure_logging(
    *, level: str = "INFO", stream: TextIO | None = None, json: bool = True
) -> None:
    """Send structlog and stdlib records, as one JSON object per line, to ``stream``.

    ``stream`` defaults to stderr (the real one, when a worker's stderr is a
    :class:`workers.app.stdio.LineStream`): stdout belongs to the CLI's report. ``json=False``
    renders
    the same fields for a human (ConsoleRenderer). The root logger gets one handler owned by
    this function (calling again replaces it, so nothing is ever logged twice); handlers
    others installed (pytest's capture) are kept. Loggers are not cached, so
    ``structlog.testing.capture_logs`` still sees loggers created at import time.
    Raises ``ValueError`` for an unknown level. Source: docs/celery.md §2.1.
    """
    number = _level_number(level)
    out = stream if stream is not None else real_stream(sys.stderr)
    shared = _shared_processors(console=not json)
    renderer: Processor = (
        JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    handler = logging.StreamHandler(out)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(_RECORD_FIELDS)
    handler.setFormatter(
        ProcessorFormatter(
            foreign_pre_chain=_shared_processors(foreign=True, console=not json),
            processors=[ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(number)
    structlog.configure(
        processors=[*shared, ProcessorFormatter.wrap_for_formatter],
        logger_factory=LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(number),
        cache_logger_on_first_use=False,
    )


def real_stream(stream: TextIO) -> TextIO:
    """The stream lines really go to: ``stream`` itself, or the one a worker's
    :class:`workers.app.stdio.LineStream` logs to (so a handler never writes into the
    stream that logs what it writes)."""
    original = getattr(stream, "council_original", None)
    return cast(TextIO, original) if original is not None else stream


def render_json_line(event: str, *, level: str, logger: str, **fields: object) -> str:
    """One JSON log line, rendered as the handler would (bound context, ``timestamp``,
    redaction) but without the logging machinery: no lock is taken, nothing is written.

    For signal handlers (Celery's shutdown notices), where logging may be mid-write on
    the same thread, and for a write that logging itself made. Never raises for a value
    JSON cannot hold (it is rendered with ``repr``)."""
    event_dict: EventDict = {"event": event, **fields}
    chain = (merge_contextvars, TimeStamper(fmt="iso", utc=True), Redact(), NoCommands())
    for processor in chain:
        event_dict = processor(None, level, event_dict)
    event_dict["logger"], event_dict["level"] = logger, level
    return str(JSONRenderer()(None, level, event_dict))


def get_logger(name: str | None = None) -> FilteringBoundLogger:
    """A structlog logger; ``name`` becomes the ``logger`` field (default: the caller's module)."""
    if name is None:
        return cast(FilteringBoundLogger, structlog.get_logger())
    return cast(FilteringBoundLogger, structlog.get_logger(name))


def bind_task_context(**fields: object) -> None:
    """Add ``fields`` to every later line of this task (thread or process), until cleared.

    A task binds what it learns after start, e.g. ``bind_task_context(attempt=2)`` once the
    journal's INCR has numbered the attempt (docs/architecture.md, journal key).
    """
    bind_contextvars(**fields)


def clear_task_context() -> None:
    """Forget every bound field, so the next task on this thread starts with none.

    Why: prefork children and pool threads run task after task, and context left behind
    puts one run's ``run_id`` on another's lines (docs/celery.md §2.1, "Leakage hazards").
    """
    clear_contextvars()
