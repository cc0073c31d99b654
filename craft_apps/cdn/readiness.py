"""When a change may be purged: once every live web process (and host) serves it.

``readiness(reports, needed, now_ms, seen_ms, longest_ms)`` is the pure rule: READY when every
report younger than ``STALE_MS`` holds version ``needed``, UNCONFIRMED once ``longest_ms``
passed since the change was seen, else WAIT. ``Settle`` waits on it once per change, then a
tenth of a second more for the processes to make their answers anew.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from craft_apps.api.answer import RECHECK_S as ANSWER_RECHECK_S
from craft_apps.content.served_versions import ServedReport
from craft_apps.kernel.clock import Clock

STALE_MS = 2500  # two beats of a second and a look's time: a report older is a process gone
POLL_S = 0.05  # how often a waiting purge reads the reports again


class Readiness(enum.Enum):
    READY = "ready"  # every live web process serves the change
    WAIT = "wait"
    UNCONFIRMED = "unconfirmed"  # the longest wait passed without every process saying so


def readiness(
    reports: Iterable[ServedReport],
    needed: int | None,
    now_ms: int,
    seen_ms: int,
    longest_ms: int,
    stale_ms: int = STALE_MS,
) -> Readiness:
    """Whether a change seen at ``seen_ms`` with notices version ``needed`` (None: made without
    the database) may be purged at ``now_ms``."""
    live = [report for report in reports if now_ms - report.at_ms <= stale_ms]
    if live and all(_holds(report.version, needed) for report in live):
        return Readiness.READY
    if now_ms - seen_ms >= longest_ms:
        return Readiness.UNCONFIRMED
    return Readiness.WAIT


def _holds(served: int | None, needed: int | None) -> bool:
    return needed is None or (served is not None and served >= needed)


@dataclass(frozen=True)
class Gate:
    """How a change's purge waits: the reports (read at an instant, in Unix ms), the clock, the
    longest wait, and what to do with the outcome (with how many live processes lagged, of how
    many)."""

    served: Callable[[int], Sequence[ServedReport]]
    clock: Clock
    longest_s: float
    outcome: Callable[[Readiness, int, int], None]


class Settle:
    """Waits, once for all the requests of one change, until the change may be purged."""

    def __init__(self, gate: Gate, seen_ms: int, needed: int | None) -> None:
        self._gate = gate
        self._seen_ms = seen_ms
        self._needed = needed
        self._lock = threading.Lock()
        self._passed: bool | None = None

    def wait(self) -> bool:
        """True when the change may be purged; False when stopping (the answer ages out)."""
        with self._lock:
            if self._passed is None:
                self._passed = self._wait()
            return self._passed

    def _wait(self) -> bool:
        gate, longest_ms = self._gate, round(self._gate.longest_s * 1000)
        while True:
            now_ms = gate.clock.now_ms()
            reports = gate.served(now_ms)
            outcome = readiness(reports, self._needed, now_ms, self._seen_ms, longest_ms)
            if outcome is Readiness.WAIT:
                if not gate.clock.sleep(POLL_S):
                    return False
                continue
            live = [report for report in reports if now_ms - report.at_ms <= STALE_MS]
            lagging = sum(1 for report in live if not _holds(report.version, self._needed))
            gate.outcome(outcome, lagging, len(live))
            # Each web process makes its answer anew within a tenth of a second of a change.
            return outcome is Readiness.UNCONFIRMED or gate.clock.sleep(ANSWER_RECHECK_S)
