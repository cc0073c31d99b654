"""The production loop driven directly, as the benchmarks drive it: hooks see every tick, the
tally counts it, and a lost lease ends the loop at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import responses

from craft_apps.github.client import GitHubClient
from craft_apps.host.counters import read_counters
from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import LeaseTiming
from craft_apps.polling.loop import PollingLoop
from craft_apps.polling.poller import PollConfig, Poller, TickReport
from craft_apps.polling.tally import Tally
from craft_apps.polling.wakeup import WakeUps
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import API, APPS, release_json, url
from tests.support import S

# No keeper thread on a fake clock: a lease that outlives the wait between ticks.
LONG_LEASE = LeaseTiming(ttl_ms=3_600_000)


def loop_on(
    state_dir: Path,
    clock: FakeClock,
    on_tick: Callable[[TickReport], None],
    before_tick: Callable[[], None] | None = None,
) -> tuple[PollingLoop, StateStore, Lease]:
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="host-a", clock=clock, timing=LONG_LEASE)
    assert lease.try_acquire() and lease.fence is not None
    github = GitHubClient(api_url=API, web_url="https://github.com", token=None, clock=clock)
    poller = Poller(
        config=PollConfig(APPS, interval_ms=1800 * S, max_backoff_ms=14_400 * S),
        github=github,
        host=store,
        fence=lease.fence,
        clock=clock,
    )
    wakeups = WakeUps(poller, clock, host_marks=HostDueMarks(state_dir))
    tally = Tally(store, clock)
    loop = PollingLoop(
        poller,
        wakeups,
        lease=lease,
        tally=tally,
        clock=clock,
        startup_delay=False,
        before_tick=before_tick,
        on_tick=on_tick,
    )
    return loop, store, lease


@responses.activate
def test_the_hooks_see_every_tick_and_the_tally_counts_it(state_dir: Path, fake_clock: FakeClock):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    turns: list[str] = []
    reports: list[TickReport] = []

    def on_tick(report: TickReport) -> None:
        turns.append("tick")
        reports.append(report)
        if len(reports) == 3:
            loop.stop.set()

    loop, store, _ = loop_on(state_dir, fake_clock, on_tick, before_tick=lambda: turns.append("before"))
    loop.run()
    assert turns == ["before", "tick"] * 3
    assert [r.round.fetched for r in reports] == [2, 0, 0]  # then everything is fresh
    assert loop.last_report is reports[-1]
    assert read_counters(store).requests["fetched"] == 2
    assert read_counters(store).tick_ms is not None


@responses.activate
def test_a_lost_lease_ends_the_loop_before_the_next_tick(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    ticks: list[TickReport] = []
    loop, _, lease = loop_on(state_dir, fake_clock, ticks.append)
    loop.before_tick = lambda: lease.release() if ticks else None  # after the first tick
    with caplog.at_level(logging.ERROR, logger="craft_apps.polling.loop"):
        loop.run()
    assert len(ticks) == 1
    assert "lost the lease; standing by" in caplog.text
