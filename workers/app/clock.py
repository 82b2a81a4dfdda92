"""The wall clock, in milliseconds since the epoch: the one reading of time the runtime
stamps runs, outcomes and dismissals with (the domain takes times as arguments).

Source: docs/identity-and-clocks.md (clocks are in milliseconds).
"""

from __future__ import annotations

import time


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return int(time.time() * 1000)
