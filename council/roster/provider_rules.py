"""What a worker lets a participant use: its provider, and its program's variables.

The roster comes from whoever submits a round; the keys are the worker's. So the worker
that runs a participant decides, from ITS registry (:mod:`council.roster.providers`):
:func:`for_worker` returns the participant as the backend runs it (a model reviewer's
``base_url`` and ``api_key_env`` are the registry's), or raises :class:`ProviderRefused`
saying which provider or variable, and how an operator adds it. One refused participant
fails alone; the round goes on.

Embedded mode (the CLI is its own worker: the user's own keys, the user's own roster)
honours a roster's ``base_url``, ``api_key_env`` and program ``env`` as written; a named
``provider`` is the registry's there too, and no key variable ever reaches a program.

Source: docs/security.md "Providers belong to the workers".
"""

from __future__ import annotations

from collections.abc import Sequence

from council.model.participant import Participant
from council.roster.backend_options import (
    DEFAULT_KEY_ENV,
    KEYLESS_OPTION,
    PROVIDER_OPTION,
    where_of,
)
from council.roster.providers import STANDARD_ENDPOINTS, ProviderEntry, ProviderRegistry, endpoint

MODEL_BACKENDS: tuple[str, ...] = ("openai", "anthropic")
PROGRAM_BACKENDS: tuple[str, ...] = ("command", "sarif")

ADD_FIX = (
    "An operator adds it to the workers' provider registry (the TOML file COUNCIL_PROVIDERS "
    "or council worker --providers names: [providers.NAME] with api, base_url and key_env), "
    'or the roster names a provider the workers hold with provider = "NAME"'
)


class ProviderRefused(ValueError):
    """This worker will not run the participant as its roster asks; the message names
    the participant's roster path, the provider or variable, and the fix."""


def for_worker(
    participant: Participant, registry: ProviderRegistry, *, embedded: bool
) -> Participant:
    """``participant`` as this worker runs it; raises :class:`ProviderRefused`.

    A model reviewer gets its provider's ``base_url`` and ``api_key_env`` (or the
    council-set ``keyless``), unless ``embedded`` and the roster names no provider; a
    program reviewer's ``env`` must hold no key variable and, unless ``embedded``, only
    the registry's ``program_env``. Other backends come back as they are.
    """
    if participant.backend in MODEL_BACKENDS:
        return _model(participant, registry, embedded=embedded)
    if participant.backend in PROGRAM_BACKENDS:
        _program_env(participant, registry, embedded=embedded)
    return participant


def _model(participant: Participant, registry: ProviderRegistry, *, embedded: bool) -> Participant:
    options = participant.options
    name = options.get(PROVIDER_OPTION)
    if name is None and embedded:
        return participant
    where = where_of(participant)
    if name is not None:
        entry = _named(participant, str(name), registry, where)
    else:
        entry = _matching(participant, registry, where)
    if entry.models and participant.model not in entry.models:
        raise ProviderRefused(
            f"{where}.model: {participant.model!r} is not among the models provider "
            f"{entry.name!r} allows on this worker ({', '.join(entry.models)}). Choose one "
            f"of them, or an operator adds it to models in [providers.{entry.name}] of the "
            f"registry ({registry.source})"
        )
    kept = {
        k: v
        for k, v in options.items()
        if k not in ("base_url", "api_key_env", KEYLESS_OPTION, PROVIDER_OPTION)
    }
    kept.update({"base_url": entry.base_url, PROVIDER_OPTION: entry.name})
    if entry.key_env is None:
        kept[KEYLESS_OPTION] = True
    else:
        kept["api_key_env"] = entry.key_env
    return participant.model_copy(update={"options": kept})


def _named(
    participant: Participant, name: str, registry: ProviderRegistry, where: str
) -> ProviderEntry:
    """The registry's provider ``name``, if it fits what the roster asked."""
    entry = registry.providers.get(name)
    if entry is None:
        hint = ""
        if name in DEFAULT_KEY_ENV and registry.source.startswith("(defaults"):
            hint = f" (the defaults hold {name!r} only when {DEFAULT_KEY_ENV[name]} is set)"
        raise ProviderRefused(
            f"{where}.provider: provider {name!r} is not in this worker's provider registry "
            f"({registry.source}: {registry.described()}){hint}. {ADD_FIX}"
        )
    if entry.api != participant.backend:
        raise ProviderRefused(
            f"{where}.provider: provider {name!r} speaks the {entry.api} API, not "
            f'{participant.backend}. Write backend = "{entry.api}", or name a provider of '
            f"the {participant.backend} API"
        )
    options = participant.options
    url = options.get("base_url")
    if url is not None and endpoint(str(url)) != endpoint(entry.base_url):
        raise ProviderRefused(
            f"{where}.base_url: {url} is not the endpoint of provider {name!r} on this "
            f"worker ({entry.base_url}). Leave base_url out: the provider says where"
        )
    env = options.get("api_key_env")
    if env is not None and env != entry.key_env:
        raise ProviderRefused(
            f"{where}.api_key_env: {env} is not the key variable of provider {name!r} on "
            f"this worker ({entry.key_env or 'it needs no key'}). Leave api_key_env out: "
            "the provider says which key"
        )
    return entry


def _matching(participant: Participant, registry: ProviderRegistry, where: str) -> ProviderEntry:
    """The one registry provider of the participant's API at the endpoint it asks for (its
    ``base_url``, else the API's standard one) with the key variable it asks for (its
    ``api_key_env``, else the one the provider names, the standard variable first)."""
    options = participant.options
    backend = participant.backend
    url = str(options.get("base_url", STANDARD_ENDPOINTS[backend]))
    env = options.get("api_key_env")
    found = [
        e
        for e in registry.providers.values()
        if e.api == backend and endpoint(e.base_url) == endpoint(url)
    ]
    if env is not None:
        found = [e for e in found if e.key_env == env]
    elif len(found) > 1:
        found = [e for e in found if e.key_env == DEFAULT_KEY_ENV[backend]] or found
    if len(found) == 1:
        return found[0]
    asked = f"the {backend} endpoint {url}" + (f" with the key in {env}" if env else "")
    if not found:
        raise ProviderRefused(
            f"{where}: this worker's provider registry ({registry.source}) holds no provider "
            f"for {asked}; it holds {registry.described()}. {ADD_FIX}"
        )
    raise ProviderRefused(
        f"{where}: several providers of this worker fit {asked} "
        f'({", ".join(e.name for e in found)}). Name one with provider = "NAME"'
    )


def _program_env(participant: Participant, registry: ProviderRegistry, *, embedded: bool) -> None:
    """Refuse a program reviewer's ``env`` naming a key variable, or (distributed) a
    variable the registry's ``program_env`` does not list."""
    where = where_of(participant)
    names = participant.options.get("env", [])
    if not isinstance(names, Sequence) or isinstance(names, str):
        raise ProviderRefused(f"{where}.env: not a list of variable names")
    keys = registry.key_variables
    for name in names:
        if name in keys:
            raise ProviderRefused(
                f"{where}.env: {name} holds a model provider's key on this worker, and a "
                "reviewer program runs on the change under review, which comes from anyone: "
                f"it is never passed. Remove {name} from env"
            )
        if not embedded and name not in registry.program_env:
            allowed = ", ".join(registry.program_env) or "none"
            raise ProviderRefused(
                f"{where}.env: this worker does not pass {name} to reviewer programs (it "
                f"passes: {allowed}). Remove it from env, or an operator who trusts every "
                f"program with it lists it in [programs] env of the workers' provider "
                f"registry ({registry.source})"
            )
