"""Install reports for the admin's charts' tests: written to the host's state directory as the
writer would, on the test's clock."""

from __future__ import annotations

import uuid
from pathlib import Path

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.reports.counts import Counted
from craft_apps.reports.file_counts import FileCounts
from craft_apps.testing.clock import FakeClock

DAY_S = 86_400


def report(state_dir: Path, clock: FakeClock, version: str, outcome: str, count: int) -> None:
    """``count`` new installs of photocraft ``version`` with ``outcome``, counted now."""
    found = []
    for _ in range(count):
        install = uuid.uuid4().hex
        found.append(Counted("photocraft", version, outcome, install, install))
    FileCounts(state_dir).add(found, clock.now_ms())


def two_releases(state_dir: Path, clock: FakeClock) -> None:
    """0.4.0 installed 40 times two days ago; 0.5.0 installed 100 times yesterday and today,
    10 of them failed (5 %)."""
    clock.advance(-2 * DAY_S)
    report(state_dir, clock, "0.4.0", "installed", 40)
    clock.advance(DAY_S)
    report(state_dir, clock, "0.5.0", "installed", 60)
    clock.advance(DAY_S)
    report(state_dir, clock, "0.5.0", "installed", 30)
    report(state_dir, clock, "0.5.0", "failed", 10)


def guarded(percent: float = 2.0) -> ReleasePolicy:
    row = ReleasePolicy(app_key="photocraft", channel="stable", policy="guarded", schedule="+0h 5, +1h 100")
    row.reason, row.max_failing_percent = "guard it", percent
    row.full_clean()
    row.save()
    return row
