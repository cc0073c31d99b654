"""The poller's steps built on their own for their tests, without a ``Poller``: ``steps`` gives
one host's (its state file and lease, an optional Redis, GitHub's rules, GitHub as the updater
files' source with ``updater=True``) as ``Steps``; ``unreachable_redis`` a client of no Redis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from craft_apps.controls.relay import ControlsRelay
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.polling.answers import Answers
from craft_apps.polling.drops import DropLog
from craft_apps.polling.due_apps import DueApps
from craft_apps.polling.fleet_merge import FleetMerge
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.polling.history_lists import HistoryLists
from craft_apps.polling.publish import Publisher
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.state import PollConfig, PollState
from craft_apps.polling.state_checks import StateChecks
from craft_apps.polling.updater_reads import UpdaterReads
from craft_apps.tauri.file_reads import UpdaterKeeper
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import API
from tests.support import TWO_APPS, S

CONFIG = PollConfig(TWO_APPS, interval_ms=1800 * S, max_backoff_ms=14_400 * S)


def unreachable_redis() -> redis.Redis:
    """A client of a Redis nothing listens for (port 1): asked once, not again after a backoff."""
    return redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))


@dataclass
class Steps:
    store: StateStore
    state: PollState
    publisher: Publisher
    lists: HistoryLists
    merge: FleetMerge
    due: DueApps
    checks: StateChecks
    shares: FleetShares | None
    answers: Answers
    updater_reads: UpdaterReads
    files: UpdaterKeeper
    redis_log: RedisTroubleLog


def steps(
    state_dir: Path,
    clock: FakeClock,
    client: redis.Redis | None = None,
    *,
    name: str = "host-a",
    config: PollConfig = CONFIG,
    needs_history: Callable[[], frozenset[str]] = lambda: frozenset(),
    updater: bool = False,
) -> Steps:
    store = StateStore(state_dir / name)
    store.open_for_writing()
    lease = Lease(store, holder=name, clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    shared = None if client is None else SharedStore(client, hostname=name)
    github = GitHubClient(api_url=API, web_url="https://github.com", token=None, clock=clock)
    state, log, requests = PollState.of(config, lambda: True), RedisTroubleLog(), RefreshRequests()
    files = UpdaterKeeper(github if updater else None, config.interval_ms, config.max_backoff_ms)
    drops = DropLog(store, config.web_url)
    publisher = Publisher(store, lease.fence, state)
    shares = None if shared is None else FleetShares(shared, state, log)
    checks = StateChecks(state, config, github, files, drops)
    lists = HistoryLists(
        state, config, github, github, files, drops, requests, publisher, shares, clock, needs_history
    )
    relay = ControlsRelay(store.state_dir)
    merge = FleetMerge(state, config, shared, checks, lists, publisher, relay, log, clock)
    due = DueApps(state, config, shared, requests, merge, publisher, log, clock)
    answers = Answers(state, lists, files, drops, publisher, shares, log, clock)
    reads = UpdaterReads(state, files, lists, publisher, shares, log, clock)
    return Steps(store, state, publisher, lists, merge, due, checks, shares, answers, reads, files, log)
