"""A worker's provider registry: which model endpoints it calls, and with which key.

The registry belongs to the worker, never to a roster: a roster names a provider
(``provider = "openai"``) and the worker that runs the reviewer decides whether it holds
it (:mod:`council.roster.provider_rules`). It is read from a TOML file the worker's
operator writes (``COUNCIL_PROVIDERS``, ``council worker --providers FILE``), or made from
the standard variables (:func:`default_registry`). No file is read here: the caller passes
the text, a ``source`` name for messages and the worker's environment (a mapping). Every
refusal is a :class:`RegistryError` naming the file, the provider and the fix.

Source: docs/security.md "Providers belong to the workers", docs/operating.md "The
provider registry".
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from council.errors import ConfigurationError
from council.roster.backend_options import DEFAULT_KEY_ENV, PROVIDER_KEYS, is_http_url

PROVIDER_APIS: tuple[str, ...] = ("openai", "anthropic")
"""The wires a provider speaks: a model reviewer's backend must be its provider's ``api``."""

STANDARD_ENDPOINTS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
"""The endpoint of each API when a roster sets no ``base_url`` (the SDKs' own)."""

LOCAL_PROVIDER = "local"
"""The keyless OpenAI-compatible provider ``COUNCIL_LOCAL_BASE_URL`` adds to the defaults."""

PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a provider's name looks like (as a participant id)."""

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PROVIDER_KEYS_ALLOWED: tuple[str, ...] = ("api", "base_url", "key_env", "models")
"""The keys of one ``[providers.NAME]`` table."""

SET_BY_COUNCIL_ENV: tuple[str, ...] = ("PATH", "HOME", "TMPDIR")
"""Variables council sets for a reviewer program itself; never passed from the worker."""


class RegistryError(ConfigurationError):
    """The provider registry is wrong: ``source`` (the file), ``where`` (the table or key),
    the problem and the fix. Exit code 2: the worker does not start."""

    def __init__(self, source: str, where: str, problem: str, fix: str) -> None:
        self.source, self.where, self.problem, self.fix = source, where, problem, fix
        place = f"{source}: {where}" if where else source
        super().__init__(f"provider registry {place}: {problem}. {fix}")


class ProviderEntry(BaseModel):
    """One provider a worker calls: its ``api`` (wire), ``base_url``, the NAME of the
    variable holding its key (None: a keyless endpoint, Ollama or vLLM) and the models it
    allows (empty: any)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    api: str
    base_url: str
    key_env: str | None = None
    models: tuple[str, ...] = ()


class ProviderRegistry(BaseModel):
    """What a worker holds: its providers by name, and the variables reviewer programs
    may be passed (``program_env``, never a key). ``source`` names where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    providers: dict[str, ProviderEntry] = {}
    program_env: tuple[str, ...] = ()

    @property
    def key_variables(self) -> frozenset[str]:
        """Every variable holding a key: the registry's, and the well-known ones."""
        own = {p.key_env for p in self.providers.values() if p.key_env is not None}
        return frozenset({*own, *PROVIDER_KEYS, *DEFAULT_KEY_ENV.values()})

    def described(self) -> str:
        """The providers for a message: ``openai (https://…, OPENAI_API_KEY), local (…)``."""
        if not self.providers:
            return "no provider"
        return ", ".join(
            f"{p.name} ({p.base_url}, {p.key_env or 'no key'})" for p in self.providers.values()
        )


def endpoint(url: str) -> str:
    """``url`` compared as an endpoint: scheme and host lower-cased, no trailing ``/``."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def default_registry(environ: Mapping[str, str], local_base_url: str | None) -> ProviderRegistry:
    """The registry of a worker without a file: ``openai`` (OpenAI's endpoint) when
    ``OPENAI_API_KEY`` is set, ``anthropic`` when ``ANTHROPIC_API_KEY`` is, and ``local``
    (keyless, OpenAI-compatible) at ``local_base_url`` when given; no program variable.
    Raises :class:`RegistryError` when ``local_base_url`` is not an http(s) URL."""
    source = "(defaults: no COUNCIL_PROVIDERS file)"
    found: dict[str, ProviderEntry] = {}
    for api, url in STANDARD_ENDPOINTS.items():
        variable = DEFAULT_KEY_ENV[api]
        if environ.get(variable, "").strip():
            found[api] = ProviderEntry(name=api, api=api, base_url=url, key_env=variable)
    if local_base_url is not None:
        if not is_http_url(local_base_url):
            raise RegistryError(
                source,
                "COUNCIL_LOCAL_BASE_URL",
                f"{local_base_url!r} is not an http(s) URL",
                "Write the server's URL, e.g. COUNCIL_LOCAL_BASE_URL=http://localhost:11434/v1",
            )
        found[LOCAL_PROVIDER] = ProviderEntry(
            name=LOCAL_PROVIDER, api="openai", base_url=local_base_url
        )
    return ProviderRegistry(source=source, providers=found)


def parse_registry(text: str, source: str, environ: Mapping[str, str]) -> ProviderRegistry:
    """Read a registry file's TOML text, checked against the worker's ``environ``.

    Tables: ``[providers.NAME]`` with ``api`` (``openai``/``anthropic``; by default the
    name when it is one), ``base_url`` (required, http(s)), ``key_env`` (a variable that
    must be set; leave it out for a keyless endpoint) and ``models`` (a list; absent: any);
    ``[programs]`` with ``env``, the variables reviewer programs may be passed (never a
    key variable, a ``COUNCIL_`` setting, PATH, HOME or TMPDIR). Raises
    :class:`RegistryError` naming ``source``, the table and the fix.
    """
    doc = _load(text, source)
    for key in doc:
        if key not in ("providers", "programs"):
            raise RegistryError(
                source, key, f"unknown table {key!r}", "Write [providers.NAME] and [programs] only"
            )
    table = doc.get("providers", {})
    if not isinstance(table, dict):
        raise RegistryError(
            source, "providers", "is not a table", "Write each provider as [providers.NAME]"
        )
    providers = {name: _provider(name, value, source, environ) for name, value in table.items()}
    registry = ProviderRegistry(source=source, providers=providers)
    env = _program_env(doc.get("programs", {}), source, registry.key_variables)
    return registry.model_copy(update={"program_env": env})


def _load(text: str, source: str) -> dict[str, Any]:
    """The TOML document, or a RegistryError naming the line and column of the slip."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        return _bad_toml(err, source)


def _bad_toml(err: tomllib.TOMLDecodeError, source: str) -> dict[str, Any]:
    message = str(err)
    where = re.search(r"\(at line (\d+), column (\d+)\)", message)
    at = f"line {where[1]}, column {where[2]}" if where else "the end"
    problem = re.sub(r"\s*\(at [^)]*\)$", "", message)
    raise RegistryError(
        source,
        at,
        f"not valid TOML ({problem})",
        "Fix the syntax there: each provider is a [providers.NAME] table, text needs quotes "
        '(base_url = "https://api.openai.com/v1")',
    ) from err


def _provider(name: str, value: object, source: str, environ: Mapping[str, str]) -> ProviderEntry:
    """One ``[providers.NAME]`` table, checked."""
    where = f"providers.{name}"
    if not PROVIDER_NAME.fullmatch(name):
        raise RegistryError(
            source,
            where,
            f"{name!r} is not a provider name",
            "Name it with letters, digits, '_', '.' and '-', starting with a letter or digit",
        )
    if not isinstance(value, dict):
        raise RegistryError(
            source, where, "is not a table", f'Write [{where}] with base_url = "https://…"'
        )
    for key in value:
        if key not in PROVIDER_KEYS_ALLOWED:
            hint = " (the key itself never goes in a file: name its variable)" * (key == "api_key")
            raise RegistryError(
                source,
                f"{where}.{key}",
                f"unknown key {key!r}{hint}",
                f"Allowed: {', '.join(PROVIDER_KEYS_ALLOWED)}",
            )
    api = value.get("api", name if name in PROVIDER_APIS else None)
    if api not in PROVIDER_APIS:
        raise RegistryError(
            source,
            f"{where}.api",
            "is missing" if api is None else f"{api!r} is not an API council speaks",
            'Write api = "openai" (any OpenAI-compatible server) or api = "anthropic"',
        )
    base_url = value.get("base_url")
    if not is_http_url(base_url):
        shown = "is missing" if base_url is None else f"{base_url!r} is not an http(s) URL"
        example = STANDARD_ENDPOINTS.get(str(api), "")
        raise RegistryError(
            source, f"{where}.base_url", shown, f'Write the endpoint, e.g. base_url = "{example}"'
        )
    key_env = _key_env(value.get("key_env"), where, source, environ)
    models = value.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise RegistryError(
            source,
            f"{where}.models",
            "is not a list of model names",
            'Write models = ["gpt-4.1", "gpt-4.1-mini"], or leave it out to allow any',
        )
    return ProviderEntry(
        name=name, api=str(api), base_url=str(base_url), key_env=key_env, models=tuple(models)
    )


def _key_env(value: object, where: str, source: str, environ: Mapping[str, str]) -> str | None:
    """A provider's ``key_env``: a variable's name, set in the worker's environment."""
    if value is None:
        return None
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise RegistryError(
            source,
            f"{where}.key_env",
            f"{value!r} is not an environment variable name",
            'Name the variable holding the key, e.g. key_env = "OPENAI_API_KEY"',
        )
    if not environ.get(value, "").strip():
        raise RegistryError(
            source,
            f"{where}.key_env",
            f"{value} is not set in this worker's environment",
            f"Export {value} for the worker (council worker reads it at start), or remove "
            "key_env for a keyless endpoint",
        )
    return value


def _program_env(value: object, source: str, keys: frozenset[str]) -> tuple[str, ...]:
    """``[programs] env``: the variables reviewer programs may be passed, checked."""
    fix = 'Write [programs] env = ["SSL_CERT_FILE"]: variables a reviewer program may read'
    if not isinstance(value, dict) or any(k != "env" for k in value):
        raise RegistryError(source, "programs", "holds something other than env", fix)
    names = value.get("env", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RegistryError(source, "programs.env", "is not a list of variable names", fix)
    for name in names:
        why = None
        if not ENV_NAME.fullmatch(name):
            why = "is not an environment variable name"
        elif name in keys:
            why = (
                "holds a model provider's key; a reviewer program runs on the change under "
                "review, which comes from anyone, so a key is never passed to one"
            )
        elif name in SET_BY_COUNCIL_ENV or name.startswith("COUNCIL_"):
            why = "is set by council itself (or is a council setting of the worker)"
        if why is not None:
            raise RegistryError(source, "programs.env", f"{name} {why}", f"Remove {name}")
    return tuple(names)
