"""Time as a dependency: the clock, the sleep and the randomness, handed in.

The poller, the lease and the GitHub client never call ``time`` or ``random`` themselves, so the
tests run schedules, backoffs and leases on a fake clock. ``SystemClock.sleep`` ends at once on
a stop request. See docs/architecture.md.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time, Unix milliseconds."""
        ...

    def sleep(self, seconds: float) -> bool:
        """Waits up to ``seconds``; returns False when woken early because of a stop request."""
        ...

    def random(self) -> float:
        """Uniform in [0, 1)."""
        ...


class SystemClock:
    def __init__(self, stop: threading.Event | None = None, rng: random.Random | None = None) -> None:
        self.stop = stop or threading.Event()
        self._rng = rng or random.Random()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> bool:
        return not self.stop.wait(max(0.0, seconds))

    def random(self) -> float:
        return self._rng.random()
