"""The poller's counters table in the state file: optional, additive, read back by anyone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from craft_apps.host.counters import TABLE, CountersUpdate, PollerCounters, read_counters, record
from craft_apps.host.store import Fence, StateStore, StateUnavailable
from craft_apps.kernel.domain import GitHubQuota
from tests.host.support import fetched

QUOTA = GitHubQuota(remaining=47, limit=60, reset_ms=1_790_003_600_000, seen_ms=1_790_000_000_000)


def test_a_missing_file_and_a_file_without_the_table_read_as_zeros(store: StateStore, state_dir: Path):
    assert read_counters(store) == PollerCounters()
    store.open_for_writing()  # a file as older code made it: no counters table
    assert read_counters(store) == PollerCounters()
    assert (state_dir / "craft_apps_state.sqlite3").exists()


def test_counts_add_up_and_values_are_replaced(store: StateStore):
    store.open_for_writing()
    record(store, CountersUpdate(requests={"fetched": 13}, mode="coordinated", tick_ms=5, quota=QUOTA))
    record(
        store,
        CountersUpdate(
            requests={"fetched": 1, "failed": 2},
            redis_errors=3,
            redis_unreadable=2,
            mode="standalone",
            tick_ms=9,
        ),
    )
    record(store, CountersUpdate(redis_unreadable=1))
    counters = read_counters(StateStore(store.state_dir))  # another process's reader
    assert counters.requests == {"fetched": 14, "not_modified": 0, "failed": 2, "rate_limited": 0}
    assert (
        counters.redis_errors,
        counters.redis_unreadable,
        counters.mode,
        counters.tick_ms,
        counters.quota,
    ) == (
        3,
        3,
        "standalone",
        9,
        QUOTA,
    )
    record(store, CountersUpdate(quota=GitHubQuota(0, 60, None, 10), stopped_ms=11))
    counters = read_counters(store)
    assert counters.quota == GitHubQuota(0, 60, None, 10) and counters.stopped_ms == 11


def test_counting_does_not_change_what_the_endpoint_serves(store: StateStore, fence: Fence):
    assert store.put_app("photocraft", fetched(), fence=fence)
    marker = store.version_marker()
    record(store, CountersUpdate(requests={"not_modified": 1}, tick_ms=1))
    assert store.version_marker() == marker  # the endpoint's kept answer stays valid


def test_unreadable_rows_read_as_absent(store: StateStore):
    store.open_for_writing()
    record(store, CountersUpdate(requests={"fetched": 2}, mode="coordinated", quota=QUOTA))
    db = sqlite3.connect(store.path)
    with db:
        db.execute(f"UPDATE {TABLE} SET value = 'many' WHERE name = 'requests.fetched'")
        db.execute(f"UPDATE {TABLE} SET value = 'sideways' WHERE name = 'mode'")
        db.execute(f"UPDATE {TABLE} SET value = -5 WHERE name = 'quota.limit'")
    db.close()
    counters = read_counters(store)
    assert (counters.requests["fetched"], counters.mode, counters.quota) == (0, None, None)


def test_a_file_with_the_table_still_opens_for_writing_and_reading(store: StateStore, fence: Fence):
    record(store, CountersUpdate(requests={"fetched": 1}))
    store.close()
    again = StateStore(store.state_dir)
    again.open_for_writing()  # the format check accepts the extra table
    assert again.read().version >= 0
    assert read_counters(again).requests["fetched"] == 1


def test_an_unusable_file_raises_state_unavailable(state_dir: Path):
    state_dir.mkdir()
    (state_dir / "craft_apps_state.sqlite3").write_bytes(b"not a database" * 100)
    store = StateStore(state_dir)
    with pytest.raises(StateUnavailable):
        read_counters(store)
    with pytest.raises(StateUnavailable):
        record(store, CountersUpdate(tick_ms=1))
