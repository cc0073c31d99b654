"""A clock for tests: sleeping advances time at once, randomness is scripted."""

from __future__ import annotations

from collections.abc import Iterable

START_MS = 1_790_000_000_000  # 2026-09-21T...Z, a fixed, realistic instant


class FakeClock:
    def __init__(self, now_ms: int = START_MS, randoms: Iterable[float] = ()) -> None:
        self._now_ms = now_ms
        self._randoms = list(randoms)
        self.default_random = 0.5  # the middle: jitter of exactly zero
        self.sleeps: list[float] = []

    def now_ms(self) -> int:
        return self._now_ms

    def sleep(self, seconds: float) -> bool:
        self.sleeps.append(seconds)
        self._now_ms += max(0, round(seconds * 1000))
        return True

    def random(self) -> float:
        return self._randoms.pop(0) if self._randoms else self.default_random

    def advance(self, seconds: float) -> None:
        self._now_ms += round(seconds * 1000)

    def set_ms(self, now_ms: int) -> None:
        self._now_ms = now_ms
