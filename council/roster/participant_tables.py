"""Reading one participant table of a roster (``[[reviewers]]`` or ``[judge]``).

A participant table holds the common fields (id, backend, model, thinking_level, tools,
persona, clocks) and its backend's own settings, which are checked here and kept in
:attr:`~council.model.participant.Participant.options` exactly as written. Every refusal is a
:class:`~council.errors.RosterError` naming the field path. Source: docs/identity-and-clocks.md
"Participant".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from council.change.analyzer_config import CONFIG_FIX, CONFIG_OPTION, CONFIG_SOURCES
from council.errors import RosterError
from council.model.clocks import CEILING_MS, CLOCK_FIELDS, resolve_clocks
from council.model.participant import (
    BACKENDS,
    THINKING_LEVELS,
    Backend,
    Participant,
    Role,
    ThinkingLevel,
)
from council.roster.backend_options import (
    LEVELS_FIX,
    SANDBOX_OPTION,
    SARIF_SCOPES,
    SCRIPT_LIMITS_OPTION,
    check_env_names,
    check_levels,
)
from council.roster.personas import PERSONA_ID
from council.roster.providers import PROVIDER_NAME
from council.roster.script_limits import read_limits
from council.roster.toml_values import (
    flag,
    refuse_unknown,
    required_text,
    table_at,
    text,
    text_list,
    whole,
)
from council.round.overrule import OVERRULE_FIX, OVERRULE_MODES, OVERRULE_OPTION

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a participant id looks like: it becomes part of Redis keys and queue names."""

COMMON_KEYS: tuple[str, ...] = (
    "id",
    "backend",
    "model",
    "thinking_level",
    "tools",
    "persona",
    "optional",
    "context_tokens",
    "script_limits",
    *CLOCK_FIELDS,
)
"""Keys every participant table may hold, whatever its backend."""

JUDGE_KEYS: tuple[str, ...] = (OVERRULE_OPTION,)
"""Keys only ``[judge]`` may hold: ``overrule`` (whose findings the judge may overrule,
``"models"`` by default or ``"all"``; see :mod:`council.round.overrule`), kept in its options."""

BACKEND_OPTIONS: dict[str, tuple[str, ...]] = {
    "openai": ("provider", "base_url", "api_key_env", "max_turns", "max_output_tokens"),
    "anthropic": ("provider", "base_url", "api_key_env", "max_turns", "max_output_tokens"),
    "command": ("program", "args", "env", "network", CONFIG_OPTION),
    "replay": ("answer", "journal", "latency_ms"),
    "sarif": ("program", "args", "env", "network", CONFIG_OPTION, "scope", "levels"),
}
"""The backend's own keys, stored in :attr:`Participant.options` as given."""

PATH_BACKENDS: tuple[str, ...] = ("command", "replay", "sarif")
"""Backends whose options may name files relative to the roster (they get ``base_dir``)."""

PROGRAM_BACKENDS: tuple[str, ...] = ("command", "sarif")
"""Backends that run a program (confined, see :mod:`reviewers.sandbox.bubblewrap`)."""

MODEL_BACKENDS: tuple[str, ...] = ("openai", "anthropic")
"""Backends that cannot run without a ``model``."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _program_options(table: Mapping[str, object], backend: str, where: str) -> dict[str, Any]:
    """``program`` (required), ``args``, ``env``, ``network`` and ``config_from`` (whose
    analyzer configuration it reads, see :mod:`council.change.analyzer_config`) of a command or
    sarif reviewer."""
    fix = f'A {backend} reviewer needs the program to run, e.g. program = "./review.sh"'
    program = required_text(table, "program", where, fix)
    if "\0" in program:
        raise RosterError(f"{where}.program", "holds a NUL character", fix)
    options: dict[str, Any] = {"program": program}
    args_fix = 'Write args as a list of text, e.g. args = ["--json"]'
    args = text_list(table, "args", where, args_fix, non_empty=False, blank_ok=True)
    if args is not None:
        options["args"] = list(args)
    if "env" in table:
        options["env"] = check_env_names(table["env"], where)
    network_fix = (
        "Write network = true for a program that needs the network (it has none in its "
        "sandbox otherwise), or leave it out"
    )
    network = flag(table, "network", where, network_fix)
    if network is not None:
        options["network"] = network
    source = text(table, CONFIG_OPTION, where, CONFIG_FIX)
    if source is not None:
        if source not in CONFIG_SOURCES:
            raise RosterError(f"{where}.{CONFIG_OPTION}", f"unknown source {source!r}", CONFIG_FIX)
        options[CONFIG_OPTION] = source
    return options


def _sarif_options(table: Mapping[str, object], where: str) -> dict[str, Any]:
    """``scope`` (lines or files) and ``levels`` (SARIF level → severity) of a sarif reviewer."""
    options: dict[str, Any] = {}
    scope_fix = 'Write scope = "lines" (results on added lines) or "files" (on changed files)'
    scope = text(table, "scope", where, scope_fix)
    if scope is not None:
        if scope not in SARIF_SCOPES:
            raise RosterError(f"{where}.scope", f"unknown scope {scope!r}", scope_fix)
        options["scope"] = scope
    if "levels" in table:
        levels = table_at(table["levels"], f"{where}.levels", LEVELS_FIX)
        options["levels"] = check_levels(levels, where)
    return options


def _replay_options(table: Mapping[str, object], where: str) -> dict[str, Any]:
    """``answer`` (required), ``journal`` and ``latency_ms`` of a replay reviewer."""
    options: dict[str, Any] = {
        "answer": required_text(
            table, "answer", where, 'A replay reviewer needs its recorded answer: answer = "PATH"'
        )
    }
    journal = text(table, "journal", where, 'Write the recorded journal\'s path: journal = "PATH"')
    if journal is not None:
        options["journal"] = journal
    latency_fix = f"Write latency_ms in whole milliseconds, from 0 to {CEILING_MS} (8 hours)"
    latency = whole(table, "latency_ms", where, latency_fix, low=0, high=CEILING_MS)
    if latency is not None:
        options["latency_ms"] = latency
    return options


def _model_options(table: Mapping[str, object], where: str) -> dict[str, Any]:
    """``provider``, ``base_url``, ``api_key_env``, ``max_turns`` and ``max_output_tokens``
    of a model (which providers a worker holds is the worker's: docs/security.md)."""
    options: dict[str, Any] = {}
    provider_fix = (
        'Name a provider of the workers\' registry, e.g. provider = "openai" (letters, '
        "digits, '_', '.' and '-')"
    )
    provider = text(table, "provider", where, provider_fix)
    if provider is not None:
        if not PROVIDER_NAME.fullmatch(provider):
            raise RosterError(
                f"{where}.provider", f"{provider!r} is not a provider name", provider_fix
            )
        options["provider"] = provider
    url_fix = 'Write the server\'s http(s) URL, e.g. base_url = "http://localhost:11434/v1"'
    base_url = text(table, "base_url", where, url_fix)
    if base_url is not None:
        if not base_url.startswith(("http://", "https://")):
            raise RosterError(f"{where}.base_url", f"{base_url!r} is not an http(s) URL", url_fix)
        options["base_url"] = base_url
    env_fix = 'Name the environment variable that holds the key, e.g. api_key_env = "MY_KEY"'
    env = text(table, "api_key_env", where, env_fix)
    if env is not None:
        if not _ENV_NAME.fullmatch(env):
            raise RosterError(
                f"{where}.api_key_env", "is not an environment variable name", env_fix
            )
        options["api_key_env"] = env
    turns = whole(
        table, "max_turns", where, "Write max_turns as a whole number, 1 to 200", low=1, high=200
    )
    if turns is not None:
        options["max_turns"] = turns
    tokens = whole(
        table,
        "max_output_tokens",
        where,
        "Write max_output_tokens as a whole number of tokens, 1 to 1000000",
        low=1,
        high=1_000_000,
    )
    if tokens is not None:
        options["max_output_tokens"] = tokens
    return options


def backend_options(table: Mapping[str, object], backend: str, where: str) -> dict[str, Any]:
    """The backend's own settings from a participant table, checked, as written.

    ``command``/``sarif``: ``program`` (required), ``args``, ``env`` (names of the worker's
    variables, never a key: :func:`~council.roster.backend_options.check_env_names`),
    ``network`` (a boolean), ``config_from`` (``base``, the default, or ``head``); ``sarif``
    also ``scope`` (``lines``/``files``), ``levels`` (SARIF level → severity or ``none``).
    ``replay``: ``answer`` (required path), ``journal``, ``latency_ms`` (whole ms, 0 to 8 h).
    ``openai``/``anthropic``: ``provider`` (a name of the workers' registry), ``base_url``
    (http(s)), ``api_key_env`` (a variable's NAME).
    Absent optional keys stay absent. Raises :class:`~council.errors.RosterError` at
    ``{where}.{key}``. Source: docs/identity-and-clocks.md "Participant".
    """
    if backend == "sarif":
        return {**_program_options(table, backend, where), **_sarif_options(table, where)}
    if backend == "command":
        return _program_options(table, backend, where)
    if backend == "replay":
        return _replay_options(table, where)
    return _model_options(table, where)


def participant_id(table: Mapping[str, object], where: str) -> str:
    """The participant's id: present, text, and shaped like :data:`ID_PATTERN`."""
    fix = (
        "Give every participant its own id of letters, digits, '_', '.' and '-', starting "
        'with a letter or digit, at most 64 characters, e.g. id = "hawk"'
    )
    pid = required_text(table, "id", where, fix)
    if not ID_PATTERN.fullmatch(pid):
        raise RosterError(f"{where}.id", f"{pid!r} is not a usable id", fix)
    return pid


def read_participant(
    value: object,
    where: str,
    role: Role,
    round_table: Mapping[str, object],
    base_dir: str | None = None,
) -> Participant:
    """One participant table, checked: id, backend, unknown keys, fields, options, clocks.

    Why: a roster mistake must stop the council before anything is sent, naming the
    field. ``where`` is the table's path (``reviewers[2]``, ``judge``); ``role`` comes
    from the table kind, never from the table. Clocks (ms) are the table's own over the
    round's (``round_table``, path ``council``). ``base_dir``, when given, is stored as
    ``options["base_dir"]`` for backends that read files relative to the roster; the
    round's ``sandbox = "required"`` as ``options["sandbox"]`` for program backends; the
    script limits (``[council] script_limits``, then the entry's own keys over them) as
    ``options["script_limits"]`` when either is written; a judge's ``overrule``
    (:data:`JUDGE_KEYS`) as ``options["overrule"]``.
    Raises :class:`~council.errors.RosterError`. Source: docs/identity-and-clocks.md.
    """
    how = "Write each reviewer as a [[reviewers]] table and the judge as a [judge] table"
    table = table_at(value, where, how)
    pid = participant_id(table, where)
    backend_fix = f"Choose one of the backends: {', '.join(BACKENDS)}"
    backend = required_text(table, "backend", where, backend_fix)
    if backend not in BACKENDS:
        raise RosterError(f"{where}.backend", f"unknown backend {backend!r}", backend_fix)
    judge_keys = JUDGE_KEYS if role == "judge" else ()
    refuse_unknown(
        table, (*COMMON_KEYS, *judge_keys, *BACKEND_OPTIONS[backend]), where, BACKEND_OPTIONS
    )
    model_fix = 'Write the model name as the backend knows it, e.g. model = "gpt-4.1"'
    model = text(table, "model", where, model_fix)
    if model is None and backend in MODEL_BACKENDS:
        raise RosterError(
            f"{where}.model", f"is missing (the {backend} backend needs one)", model_fix
        )
    level_fix = f"Choose one of the thinking levels: {', '.join(THINKING_LEVELS)}"
    level = text(table, "thinking_level", where, level_fix)
    if level is not None and level not in THINKING_LEVELS:
        raise RosterError(f"{where}.thinking_level", f"unknown level {level!r}", level_fix)
    tools_fix = 'List the tools the reviewer may use, e.g. tools = ["read_file"], or leave it out'
    tools = text_list(table, "tools", where, tools_fix, non_empty=True, blank_ok=False)
    persona_fix = (
        "Write the lens id: the name of its charter file without .md (letters, digits, "
        "'_' and '-'), e.g. persona = \"security\""
    )
    persona = text(table, "persona", where, persona_fix)
    if persona is not None and not PERSONA_ID.fullmatch(persona):
        raise RosterError(f"{where}.persona", f"{persona!r} is not a persona id", persona_fix)
    optional = flag(
        table,
        "optional",
        where,
        "Write optional = true for a reviewer the gate may do without, or leave it out",
    )
    if optional and role == "judge":
        raise RosterError(
            f"{where}.optional",
            "a judge cannot be optional: the judge's silence would un-gate findings",
            "Leave optional out of [judge]",
        )
    context = _context_tokens(table, backend, where)
    options = backend_options(table, backend, where)
    if base_dir is not None and backend in PATH_BACKENDS:
        options["base_dir"] = base_dir
    if backend in PROGRAM_BACKENDS and round_table.get(SANDBOX_OPTION) == "required":
        options[SANDBOX_OPTION] = "required"
    if SCRIPT_LIMITS_OPTION in round_table or SCRIPT_LIMITS_OPTION in table:
        limits = None
        if SCRIPT_LIMITS_OPTION in round_table:
            limits = read_limits(round_table[SCRIPT_LIMITS_OPTION], "council.script_limits")
        if SCRIPT_LIMITS_OPTION in table:
            own = table[SCRIPT_LIMITS_OPTION]
            limits = read_limits(own, f"{where}.script_limits", limits)
        if limits is not None:
            options[SCRIPT_LIMITS_OPTION] = limits.as_json()
    overrule = text(table, OVERRULE_OPTION, where, OVERRULE_FIX) if role == "judge" else None
    if overrule is not None:
        if overrule not in OVERRULE_MODES:
            raise RosterError(
                f"{where}.{OVERRULE_OPTION}", f"{overrule!r} is not an overrule mode", OVERRULE_FIX
            )
        options[OVERRULE_OPTION] = overrule
    return Participant(
        id=pid,
        role=role,
        backend=cast(Backend, backend),
        model=model,
        thinking_level=cast("ThinkingLevel | None", level),
        tools=tools,
        persona=persona,
        clocks=resolve_clocks(round_table, table, "council", where),
        options=options,
        optional=bool(optional),
        context_tokens=context,
    )


CONTEXT_CEILING = 100_000_000
"""The largest ``context_tokens`` a roster may write (tokens)."""


def _context_tokens(table: Mapping[str, object], backend: str, where: str) -> int | None:
    """``context_tokens``: the participant's context budget in tokens, for a model or a
    command reviewer (a SARIF analyzer reads the tree and a replay its recording: neither is
    sent the change, so neither is sliced). None when absent."""
    fix = f"Write context_tokens as a whole number of tokens, 1 to {CONTEXT_CEILING}"
    tokens = whole(table, "context_tokens", where, fix, low=1, high=CONTEXT_CEILING)
    if tokens is not None and backend in ("sarif", "replay"):
        raise RosterError(
            f"{where}.context_tokens",
            f"a {backend} reviewer is not sent the change, so it has no context to budget",
            "Leave context_tokens out of this entry (models and command reviewers take it)",
        )
    return tokens
