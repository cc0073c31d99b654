"""``polling.publish.Publisher`` on its own: what the state marks as changed is written to the
host's state file and unmarked; a write that fails stays marked and is logged once; a write
refused because another poller took the lease over ends the writing."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState, Backoff, HistoryFetch
from craft_apps.polling.publish import Publisher
from craft_apps.polling.state import PollConfig, PollState
from craft_apps.testing.clock import FakeClock
from tests.support import PHOTOCRAFT, TWO_APPS, S, release

CONFIG = PollConfig(TWO_APPS, interval_ms=1800 * S, max_backoff_ms=14_400 * S)


@pytest.fixture
def store(state_dir: Path) -> StateStore:
    store = StateStore(state_dir)
    store.open_for_writing()
    return store


def publisher(store: StateStore, clock: FakeClock) -> Publisher:
    lease = Lease(store, holder="host-a", clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    return Publisher(store, lease.fence, PollState.of(CONFIG, lambda: True))


def test_what_is_marked_is_written_and_unmarked(store: StateStore, fake_clock: FakeClock) -> None:
    writes = publisher(store, fake_clock)
    state = writes.state
    state.memory[PHOTOCRAFT.key] = AppState(
        latest_release=release(), etag='"e"', fetched_ms=5, repo=PHOTOCRAFT.repo
    )
    state.history[PHOTOCRAFT.key] = (release(),)
    state.history_fetch[PHOTOCRAFT.key] = HistoryFetch('"l"', 5, PHOTOCRAFT.repo)
    state.backoff = Backoff(until_ms=10, trouble=1)
    state.unwritten.add(PHOTOCRAFT.key)
    state.unwritten_histories.add(PHOTOCRAFT.key)
    state.backoff_unwritten = True
    writes.publish()
    snapshot = store.read()
    assert snapshot.apps == {PHOTOCRAFT.key: state.memory[PHOTOCRAFT.key]}
    assert snapshot.history[PHOTOCRAFT.key] == (release(),)
    assert snapshot.history_fetches[PHOTOCRAFT.key].etag == '"l"'
    assert snapshot.backoff == state.backoff
    assert (state.unwritten, state.unwritten_histories, state.backoff_unwritten) == (set(), set(), False)


def test_a_failed_write_stays_marked_and_is_logged_once(
    store: StateStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    writes = publisher(store, fake_clock)
    writes.state.unwritten.add(PHOTOCRAFT.key)
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file: every write fails
    try:
        with caplog.at_level(logging.INFO, logger="craft_apps.polling.poller"):
            writes.publish()
            writes.publish()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert writes.state.unwritten == {PHOTOCRAFT.key}
    assert sum("couldn't write the host's state file" in r.getMessage() for r in caplog.records) == 1
    with caplog.at_level(logging.INFO, logger="craft_apps.polling.poller"):
        writes.publish()
    assert writes.state.unwritten == set()
    assert any("the host's state file is written again" in r.getMessage() for r in caplog.records)


def test_a_write_after_another_poller_took_over_stops_the_writing(
    store: StateStore, fake_clock: FakeClock
) -> None:
    writes = publisher(store, fake_clock)
    fake_clock.advance(31)  # past the lease's TTL without renewing: a standby takes over
    assert Lease(StateStore(store.path.parent), holder="host-b", clock=fake_clock).try_acquire()
    writes.state.unwritten.add(PHOTOCRAFT.key)
    writes.publish()
    assert writes.state.fence_lost
    assert store.read().apps == {}
