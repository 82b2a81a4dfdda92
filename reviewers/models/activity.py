"""The idle clock's memory: when something last happened in a review.

Shared by the process runner (an output line, a journal entry) and the model streams (a
token, a journal entry): whatever happened, ``touch`` starts the idle clock again.
Source: docs/identity-and-clocks.md "Clocks" (idle).
"""

from __future__ import annotations

import threading
import time


class Activity:
    """The last moment something happened (monotonic seconds), shared by threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = time.monotonic()

    def touch(self) -> None:
        """Something happened now: the idle clock starts again."""
        with self._lock:
            self._last = time.monotonic()

    def since_ms(self) -> int:
        """Milliseconds since the last activity."""
        with self._lock:
            return int((time.monotonic() - self._last) * 1000)
