"""A Redis client wrapper that counts network round trips, for tests that claim a count.

Every command sent on the client is one round trip; a pipeline is one round trip when it
is executed, whatever it holds. Works over fakeredis and redis-py clients alike.
"""

from __future__ import annotations

from typing import Any

from redis.commands.core import Script

LOCAL = frozenset({"get_encoder", "get_connection_kwargs", "close"})
"""Client methods that send nothing to the server (not counted)."""


class CountingPipeline:
    """A pipeline whose ``execute`` counts one round trip on its client."""

    def __init__(self, pipe: Any, owner: CountingClient) -> None:
        self._pipe, self._owner = pipe, owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Send the queued commands (one round trip)."""
        self._owner.round_trips += 1
        return self._pipe.execute(*args, **kwargs)


class CountingClient:
    """Wraps a client; ``round_trips`` counts commands sent and pipelines executed."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.round_trips = 0

    def pipeline(self, *args: Any, **kwargs: Any) -> CountingPipeline:
        """A pipeline counted when executed."""
        return CountingPipeline(self._client.pipeline(*args, **kwargs), self)

    def register_script(self, script: str) -> Script:
        """A script object whose calls go through this wrapper (and are counted)."""
        return Script(self, script)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name in LOCAL:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.round_trips += 1
            return attr(*args, **kwargs)

        return call
