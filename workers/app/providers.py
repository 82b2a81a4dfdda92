"""Loading this worker's provider registry from its settings and environment.

The file ``COUNCIL_PROVIDERS`` names (``council worker --providers FILE``), else the
defaults from the standard key variables and ``COUNCIL_LOCAL_BASE_URL``
(:mod:`council.roster.providers`). Read once, when the runtime is built: a worker with a
bad registry does not start. Source: docs/operating.md "The provider registry".
"""

from __future__ import annotations

from collections.abc import Mapping

from council.roster.providers import (
    ProviderRegistry,
    RegistryError,
    default_registry,
    parse_registry,
)
from workers.app.settings import Settings


def load_providers(settings: Settings, environ: Mapping[str, str]) -> ProviderRegistry:
    """The registry ``settings`` name, checked against ``environ`` (the worker's).

    Raises :class:`~council.roster.providers.RegistryError` (exit 2) naming the file when
    it cannot be read or is wrong, and when ``COUNCIL_LOCAL_BASE_URL`` is set beside a
    file (the file says it all).
    """
    path = settings.providers
    if path is None:
        return default_registry(environ, settings.local_base_url)
    source = str(path)
    if settings.local_base_url is not None:
        raise RegistryError(
            source,
            "",
            "COUNCIL_LOCAL_BASE_URL is set beside a registry file, which alone says what "
            "this worker calls",
            'Unset COUNCIL_LOCAL_BASE_URL and write [providers.local] with api = "openai" '
            "and its base_url in the file",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RegistryError(
            source,
            "",
            f"cannot be read ({why})",
            "Point COUNCIL_PROVIDERS (or council worker --providers) at the registry's "
            "TOML file, readable by the worker",
        ) from None
    return parse_registry(text, source, environ)
