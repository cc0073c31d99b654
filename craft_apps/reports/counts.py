"""What the reports add up to, per app, version and outcome: the shapes both stores take and
give, and what a store does (``stores`` picks one). See docs/reports.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from craft_apps.kernel.compat import UTC
from craft_apps.reports.report import FAILURES, OUTCOMES

KEEP_DAYS = 30  # a release's counts and marks expire this long after its last report
KEEP_S = KEEP_DAYS * 86_400
VERSIONS_KEPT = 20  # per app, the versions last reported; older ones are forgotten


@dataclass(frozen=True, slots=True)
class Counted:
    """A report as the writer keeps it: no install id, no address, only keyed hashes."""

    app: str
    version: str
    outcome: str
    install: str  # digest.install_digest
    release: str  # digest.release_digest: one counted outcome per install and version


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    reports: int = 0  # reports accepted (an install's repeats included, within its rate limit)
    installs: int = 0  # distinct installs whose counted outcome this is


@dataclass(frozen=True)
class ReleaseCounts:
    """One app's version: its counts by outcome (every outcome present)."""

    app: str
    version: str
    outcomes: Mapping[str, OutcomeCounts] = field(default_factory=dict)

    def installs(self, outcomes: Sequence[str] = OUTCOMES) -> int:
        return sum(self.outcomes.get(o, OutcomeCounts()).installs for o in outcomes)

    def failure_share(self) -> float | None:
        """The share of counted installs that failed, crashed or rolled back (None: none yet)."""
        total = self.installs()
        return None if total == 0 else self.installs(FAILURES) / total


@dataclass(frozen=True)
class DailyInstalls:
    """One app's version: the installs first counted for it on each day (UTC ``YYYY-MM-DD``)."""

    app: str
    version: str
    days: Mapping[str, int] = field(default_factory=dict)


def day_of(ms: int) -> str:
    """The UTC day of the instant ``ms`` (milliseconds since the epoch), as ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def last_days(now_ms: int, count: int) -> list[str]:
    """The ``count`` days up to the one of ``now_ms``, oldest first (at most ``KEEP_DAYS``)."""
    today = datetime.fromtimestamp(now_ms / 1000, tz=UTC).date()
    span = max(1, min(count, KEEP_DAYS))
    return [(today - timedelta(days=back)).isoformat() for back in range(span - 1, -1, -1)]


class ReportsUnavailable(Exception):
    """The counts couldn't be written or read (one line, no secret)."""


class CountStore(Protocol):
    where: str  # "redis" or "state_dir", for the status

    def add(self, reports: Sequence[Counted], now_ms: int) -> int:
        """Adds the reports; returns how many counted as a new install. Raises
        ``ReportsUnavailable``."""
        ...

    def counts(self, apps: Sequence[str]) -> list[ReleaseCounts]:
        """Every kept version of ``apps``, newest report first per app. Raises
        ``ReportsUnavailable``."""
        ...

    def daily(self, apps: Sequence[str], days: Sequence[str]) -> list[DailyInstalls]:
        """Every kept version of ``apps`` with its new installs on each of ``days``. Raises
        ``ReportsUnavailable``."""
        ...
