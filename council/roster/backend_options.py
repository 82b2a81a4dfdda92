"""Checking a backend's own roster options, with the field path in every refusal.

Each backend reads its settings from ``Participant.options`` (what the roster table held
beyond the common fields). The roster reader calls :func:`reviewers.check_options`
so a mistake stops the round before anything is sent; a backend checks again at review
time and turns a refusal into a failure, because a backend never raises for a reviewer
fault (docs/harvest.md §7).

Source: docs/identity-and-clocks.md "Participant" (every refusal names the field path).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from council.change.analyzer_config import CONFIG_FIX, CONFIG_OPTION, CONFIG_SOURCES
from council.errors import RosterError
from council.model.participant import Participant
from council.roster.tool_catalog import TOOL_NAMES
from council.round.overrule import OVERRULE_OPTION

BASE_DIR = "base_dir"
"""Option set by the roster loader: the roster file's directory, for relative paths."""

SANDBOX_OPTION = "sandbox"
"""Option set by the roster loader on program-running reviewers from ``[council]
sandbox``: ``"required"`` refuses to run a program unconfined where bubblewrap cannot run
(see :mod:`reviewers.programs.process`); absent or ``"auto"``: the worker decides."""

SCRIPT_LIMITS_OPTION = "script_limits"
"""Option set by the roster loader from ``[council] script_limits`` and the entry's own
``script_limits``: the limits of the scripts the reviewer runs (``run_script``,
``council run-script``), a JSON object of :class:`~reviewers.sandbox.scripts.ScriptLimits`'
fields; absent: the defaults."""

SANDBOX_MODES: tuple[str, ...] = ("auto", "required")
"""Values of ``[council] sandbox``."""

PROGRAM_OPTIONS: tuple[str, ...] = ("program", "args", "env", "network", CONFIG_OPTION)
"""The options a program-running backend (``command``, ``sarif``) reads from the roster."""

RECORDED = "recorded"
"""Option set by the coordinator for a ``replay`` reviewer of a base-tree roster: the
texts of its relative ``answer``/``journal`` files as the BASE tree holds them
(``{"answer": text, "journal": text}``, each key only when that path is relative), so a
worker never reads them from a working directory (the change's files). A roster cannot
set it: the roster reader refuses the key."""

PROVIDER_OPTION = "provider"
"""A model reviewer's roster option: the name of a provider of the worker's registry
(:mod:`council.roster.providers`); the worker sets it on the participant it runs too."""

KEYLESS_OPTION = "keyless"
"""Option set by the worker on a model reviewer whose provider needs no key (a local
Ollama or vLLM): no key is read and a placeholder is sent. A roster cannot set it."""

SET_BY_COUNCIL: tuple[str, ...] = (BASE_DIR, RECORDED, KEYLESS_OPTION)
"""Options council sets itself, accepted beside the backend's own."""


def where_of(participant: Participant) -> str:
    """The roster path prefix of a participant: ``reviewers[<id>]`` or ``judge``."""
    return "judge" if participant.role == "judge" else f"reviewers[{participant.id}]"


def refuse_unknown(
    options: Mapping[str, Any], known: tuple[str, ...], where: str, backend: str
) -> None:
    """Refuse an option the backend does not read (a typo would otherwise be ignored).

    ``known`` lists the options a roster may write; those council sets itself
    (:data:`SET_BY_COUNCIL`), the round's ``sandbox`` and a judge's ``overrule`` (the
    roster reader accepts it in ``[judge]`` only) are always accepted. Raises
    :class:`RosterError` at ``{where}.{option}``.
    """
    for key in options:
        accepted = (*SET_BY_COUNCIL, SANDBOX_OPTION, SCRIPT_LIMITS_OPTION, OVERRULE_OPTION)
        if key not in known and key not in accepted:
            raise RosterError(
                f"{where}.{key}",
                f"unknown option for the {backend} backend",
                f"Remove it; this backend reads {', '.join(known)}",
            )
    if not isinstance(options.get(BASE_DIR, ""), str):
        raise RosterError(
            f"{where}.{BASE_DIR}",
            "not a directory path",
            "Leave it to the roster loader, which sets it to the roster's directory",
        )


def check_program_options(
    options: Mapping[str, Any], where: str, backend: str, more: tuple[str, ...] = ()
) -> None:
    """Refuse bad options of a program-running backend (``command``, ``sarif``).

    ``program`` is a non-empty string: a bare name looked up on PATH, an absolute path, or
    a path relative to the roster; ``args`` (optional) a list of strings; ``env``
    (optional) names of variables passed on from the worker (:func:`check_env_names`);
    ``network`` (optional) a boolean; ``config_from`` (optional) ``base`` or ``head``
    (:mod:`council.change.analyzer_config`); ``sandbox`` (set by the loader) one of
    :data:`SANDBOX_MODES`; ``more`` names the backend's other options (checked by the
    backend). Raises :class:`RosterError` at ``{where}.program`` / ``.args`` / ``.env`` /
    ``.network`` / ``.config_from`` / ``.sandbox``.
    """
    refuse_unknown(options, (*PROGRAM_OPTIONS, *more), where, backend)
    program = options.get("program")
    if not isinstance(program, str) or not program.strip() or "\0" in program:
        raise RosterError(
            f"{where}.program",
            "missing, or not a program name or path",
            'Set program = "NAME" (looked up on PATH) or a path to an executable',
        )
    args = options.get("args", [])
    if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
        raise RosterError(f"{where}.args", "not a list of strings", 'Write args = ["--flag"]')
    check_env_names(options.get("env", []), where)
    if not isinstance(options.get("network", False), bool):
        raise RosterError(
            f"{where}.network",
            "is not true or false",
            "Write network = true for a program that needs the network; leave it out if not",
        )
    mode = options.get(SANDBOX_OPTION, "auto")
    if mode not in SANDBOX_MODES:
        raise RosterError("council.sandbox", f"{mode!r} is not a sandbox mode", SANDBOX_FIX)
    source = options.get(CONFIG_OPTION, "base")
    if source not in CONFIG_SOURCES:
        raise RosterError(f"{where}.{CONFIG_OPTION}", f"{source!r} is not a source", CONFIG_FIX)


SANDBOX_FIX = (
    'Write sandbox = "required" (never run a reviewer program unsandboxed) or "auto" '
    "(the default: unsandboxed, with a note, only in embedded mode outside CI)"
)

PROVIDER_KEYS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
)
"""Model providers' key variables a reviewer program never gets (with every variable a
roster's ``api_key_env`` names, see :func:`check_env_names`)."""

_NEVER_PASSED: dict[str, str] = {
    "COUNCIL_REDIS_URL": (
        "it is the council's Redis, with its password: a program reading the change "
        "under review could rewrite every run's state (council record works without it, "
        "through the journal file)"
    ),
    "PATH": "council sets PATH itself (the worker's, without relative entries)",
    "HOME": "council sets HOME itself, to a private directory of the sandbox",
    "TMPDIR": "council sets TMPDIR itself, to a private directory of the sandbox",
}


def check_env_names(names: object, where: str) -> list[str]:
    """A program reviewer's ``env``: names of the worker's variables passed on, checked.

    Each is a variable name (letters, digits, ``_``, not starting with a digit). Refused,
    with a :class:`RosterError` at ``{where}.env`` saying why: a provider's key
    (:data:`PROVIDER_KEYS` and the defaults of ``api_key_env``; the roster reader also
    refuses what the roster's model reviewers name in ``api_key_env``),
    ``COUNCIL_REDIS_URL`` and every other ``COUNCIL_`` setting, and
    ``PATH``/``HOME``/``TMPDIR`` (council sets them). Why: the program reads the change
    under review, which comes from anyone.
    """
    fix = 'List the variables the program needs, e.g. env = ["SSL_CERT_FILE"]'
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise RosterError(f"{where}.env", "not a list of variable names", fix)
    secret = {*PROVIDER_KEYS, *DEFAULT_KEY_ENV.values()}
    for name in names:
        why: str | None = None
        if not _ENV_NAME.fullmatch(name):
            raise RosterError(f"{where}.env", f"{name!r} is not an environment variable name", fix)
        if name in secret:
            why = (
                "it holds a model provider's API key, and a reviewer program runs on the "
                "change under review, which comes from anyone"
            )
        elif name in _NEVER_PASSED:
            why = _NEVER_PASSED[name]
        elif name.startswith("COUNCIL_"):
            why = (
                "it is a council setting of the worker; council sets the reviewer's own "
                "variables (COUNCIL_RUN, COUNCIL_PARTICIPANT, COUNCIL_ATTEMPT, COUNCIL_JOURNAL)"
            )
        if why is not None:
            raise RosterError(
                f"{where}.env", f"{name} is never passed to a reviewer program: {why}", fix
            )
    return list(names)


SARIF_SCOPES: tuple[str, ...] = ("lines", "files")
"""Values of a ``sarif`` reviewer's ``scope``: results on added lines, or on changed files."""

DEFAULT_SARIF_SCOPE = "lines"
"""The ``scope`` of a ``sarif`` reviewer whose roster sets none."""

SARIF_LEVELS: tuple[str, ...] = ("error", "warning", "note", "none")
"""The SARIF ``level`` values (SARIF 2.1.0 §3.27.10), the keys of ``levels``."""

LEVEL_SEVERITIES: tuple[str, ...] = ("critical", "medium", "minor", "none")
"""What ``levels`` may map a SARIF level to: a severity, or ``none`` (a note, no severity)."""


def check_sarif_options(options: Mapping[str, Any], where: str) -> None:
    """Refuse bad options of a ``sarif`` reviewer, beyond ``program`` and ``args``.

    ``scope`` (optional) is one of :data:`SARIF_SCOPES`; ``levels`` (optional) a table
    from SARIF levels (:data:`SARIF_LEVELS`) to :data:`LEVEL_SEVERITIES`, e.g.
    ``{error = "medium"}``. Raises :class:`RosterError` at ``{where}.scope`` /
    ``{where}.levels`` / ``{where}.levels.<level>``.
    """
    check_program_options(options, where, "sarif", ("scope", "levels"))
    scope = options.get("scope", DEFAULT_SARIF_SCOPE)
    if scope not in SARIF_SCOPES:
        raise RosterError(
            f"{where}.scope",
            f"{scope!r} is not a scope",
            'Write scope = "lines" (results on added lines) or "files" (on changed files)',
        )
    check_levels(options.get("levels", {}), where)


LEVELS_FIX = 'Write levels = { error = "medium" }: SARIF levels to council severities'


def check_levels(levels: object, where: str) -> dict[str, str]:
    """A sarif reviewer's ``levels`` table, checked: SARIF level → council severity.

    Raises :class:`RosterError` at ``{where}.levels`` (or the offending key) naming the
    levels and severities allowed. Shared by the roster reader and the backend's own check.
    """
    if not isinstance(levels, Mapping):
        raise RosterError(f"{where}.levels", "is not a table", LEVELS_FIX)
    for level, severity in levels.items():
        if level not in SARIF_LEVELS:
            raise RosterError(
                RosterError.field(f"{where}.levels", str(level)),
                f"{level!r} is not a SARIF level",
                f"Map some of {', '.join(SARIF_LEVELS)}",
            )
        if severity not in LEVEL_SEVERITIES:
            raise RosterError(
                RosterError.field(f"{where}.levels", str(level)),
                f"{severity!r} is not a severity",
                f"Choose one of {', '.join(LEVEL_SEVERITIES)} (none: a note without severity)",
            )
    return {str(k): str(v) for k, v in levels.items()}


MODEL_OPTIONS: tuple[str, ...] = (
    "base_url",
    "api_key_env",
    "max_turns",
    "max_output_tokens",
    PROVIDER_OPTION,
)
"""The options a model backend (``openai``, ``anthropic``) reads from the roster."""

DEFAULT_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The variable holding a model backend's key when the roster sets no ``api_key_env``."""


def key_env(participant: Participant) -> str | None:
    """The environment variable whose value the worker puts in ``request.secrets``.

    ``options["api_key_env"]``, else the backend's default (:data:`DEFAULT_KEY_ENV`);
    None for a backend that needs no key, or a provider that needs none (``keyless``, set
    by the worker). Why the worker: reviewers never read the environment, and the key must
    not travel in the task message or the roster.
    """
    default = DEFAULT_KEY_ENV.get(participant.backend)
    if default is None or participant.options.get(KEYLESS_OPTION) is True:
        return None
    return str(participant.options.get("api_key_env", default))


MAX_TURNS_CEILING = 200
"""Most requests one model review may make in its tool loop (``max_turns``)."""

MAX_OUTPUT_TOKENS_CEILING = 1_000_000
"""Largest ``max_output_tokens`` accepted, in tokens (a typo guard, not a model limit)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_model_options(participant: Participant, where: str, backend: str) -> None:
    """Refuse bad settings of a model reviewer (``openai``, ``anthropic``), before any send.

    ``participant.model`` is required (the model name as the server knows it); options:
    ``provider`` a provider's name (the worker's registry holds it or refuses it);
    ``base_url`` an http(s) URL with a host; ``api_key_env`` the NAME of an environment
    variable (the worker reads it; the key itself never appears in a roster);
    ``max_turns`` a whole number of requests in [1, 200]; ``max_output_tokens`` a whole
    number of tokens in [1, 1000000]; every name in ``participant.tools`` one of
    :data:`~reviewers.models.tools.TOOL_NAMES` (a typo would silently drop a tool).
    Raises :class:`RosterError` at ``{where}.{field}``.
    Source: docs/identity-and-clocks.md "Participant", issue "Model reviewers".
    """
    options = participant.options
    refuse_unknown(options, MODEL_OPTIONS, where, backend)
    model = participant.model
    if model is None or not model.strip():
        raise RosterError(
            f"{where}.model",
            f"is missing (the {backend} backend needs one)",
            'Write the model name as the server knows it, e.g. model = "gpt-4.1"',
        )
    base_url = options.get("base_url")
    if base_url is not None and not is_http_url(base_url):
        raise RosterError(
            f"{where}.base_url",
            f"{base_url!r} is not an http(s) URL",
            'Write the server\'s URL, e.g. base_url = "http://localhost:11434/v1"',
        )
    provider = options.get(PROVIDER_OPTION)
    if provider is not None and not (isinstance(provider, str) and _NAME.fullmatch(provider)):
        raise RosterError(
            f"{where}.{PROVIDER_OPTION}",
            f"{provider!r} is not a provider name",
            'Name a provider of the workers\' registry, e.g. provider = "openai"',
        )
    env = options.get("api_key_env")
    if env is not None and not (isinstance(env, str) and _ENV_NAME.fullmatch(env)):
        raise RosterError(
            f"{where}.api_key_env",
            "is not an environment variable name",
            'Name the variable that holds the key, e.g. api_key_env = "MY_KEY"',
        )
    for tool in participant.tools or ():
        if tool not in TOOL_NAMES:
            raise RosterError(
                f"{where}.tools",
                f"unknown tool {tool!r} for the {backend} backend",
                f"Choose among {', '.join(TOOL_NAMES)}",
            )
    for key, ceiling, unit in (
        ("max_turns", MAX_TURNS_CEILING, "requests"),
        ("max_output_tokens", MAX_OUTPUT_TOKENS_CEILING, "tokens"),
    ):
        value = options.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
            raise RosterError(
                f"{where}.{key}",
                f"{value!r} is not a whole number of {unit} in [1, {ceiling}]",
                f"Write {key} = 20, or leave it out for the default",
            )


def is_http_url(value: object) -> bool:
    """Whether ``value`` is an http(s) URL with a host (and, when written, a valid port)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = urlsplit(value)
        _ = parsed.port
    except ValueError:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.hostname)
