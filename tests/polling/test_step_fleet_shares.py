"""``polling.fleet_shares.FleetShares`` on its own, with a real Redis: an answer is shared with
what this host holds (a 200 whole, a 304 as a new fetch time, a 304 after the updater files were
read whole again, a failure with its count); a history is shared with its list fetch; Redis
trouble raises for an answer and is only logged for a history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import redis

from craft_apps.fleet.entry import SharedAppEntry
from craft_apps.fleet.errors import RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import AppState, HistoryFetch, UpdaterFile
from craft_apps.kernel.source import Failed, Fetched, NotModified
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import steps, unreachable_redis
from tests.support import PHOTOCRAFT, S, release

KEY = PHOTOCRAFT.key
HELD = AppState(latest_release=release(), etag='"e"', fetched_ms=5 * S, repo=PHOTOCRAFT.repo)
FILES = (UpdaterFile("windows-x86_64", release().assets[0].download_url, "c2ln"),)


def shares(state_dir: Path, clock: FakeClock, client: redis.Redis, held: AppState = HELD) -> FleetShares:
    made = steps(state_dir, clock, client)
    assert made.shares is not None
    made.state.memory[KEY] = held
    return made.shares


def shared_entry(client: redis.Redis) -> SharedAppEntry:
    entries, _ = SharedStore(client, hostname="host-b").entries.read([KEY])
    assert entries[0] is not None
    return entries[0]


def test_a_200_shares_what_this_host_holds(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    shares(state_dir, fake_clock, redis_client).answer(KEY, Fetched(release(), '"e"'), 5 * S)
    fetched = shared_entry(redis_client).fetched
    assert fetched is not None
    assert (fetched.latest_release, fetched.etag, fetched.fetched_ms, fetched.repo) == (
        release(),
        '"e"',
        5 * S,
        PHOTOCRAFT.repo,
    )


def test_a_304_moves_the_shared_fetch_time(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    SharedStore(redis_client, hostname="host-b").entries.write_fetched(
        KEY, release(), '"e"', 5 * S, PHOTOCRAFT.repo
    )
    sharing = shares(state_dir, fake_clock, redis_client, replace(HELD, fetched_ms=9 * S))
    sharing.shared.entries.read([KEY])  # this host's last read held the fleet's fetch
    sharing.answer(KEY, NotModified(), 9 * S)
    fetched = shared_entry(redis_client).fetched
    assert fetched is not None and (fetched.latest_release, fetched.fetched_ms) == (release(), 9 * S)


def test_a_304_after_the_updater_files_were_read_shares_the_release_with_them(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    SharedStore(redis_client, hostname="host-b").entries.write_fetched(
        KEY, release(), '"e"', 5 * S, PHOTOCRAFT.repo
    )
    filled = replace(HELD, latest_release=replace(release(), updater=FILES), fetched_ms=9 * S)
    sharing = shares(state_dir, fake_clock, redis_client, filled)
    sharing.shared.entries.read([KEY])
    sharing.answer(KEY, NotModified(), 9 * S, filled=True)
    fetched = shared_entry(redis_client).fetched
    assert fetched is not None and fetched.latest_release is not None
    assert fetched.latest_release.updater == FILES


def test_a_failure_is_shared_with_its_count(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    failing = replace(HELD, failed_ms=7 * S, failures=3)
    shares(state_dir, fake_clock, redis_client, failing).answer(KEY, Failed("timed out"), 7 * S)
    failure = shared_entry(redis_client).failure
    assert failure is not None and (failure.failed_ms, failure.failures) == (7 * S, 3)


def test_a_history_is_shared_with_its_list_fetch(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    sharing = shares(state_dir, fake_clock, redis_client)
    fetch = HistoryFetch('"l"', 5 * S, PHOTOCRAFT.repo)
    sharing.state.history[KEY] = (release(), release("0.4.0"))
    sharing.state.history_fetch[KEY] = fetch
    sharing.history(KEY, fake_clock.now_ms())
    [history] = SharedStore(redis_client, hostname="host-b").histories.read([KEY])
    assert history == ((release(), release("0.4.0")), fetch)
    assert not sharing.redis_log.is_failing


def test_redis_trouble_raises_for_an_answer_and_is_logged_for_a_history(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    unreachable = unreachable_redis()
    sharing = shares(state_dir, fake_clock, unreachable)
    with pytest.raises(RedisTrouble):
        sharing.answer(KEY, Fetched(release(), '"e"'), 5 * S)
    sharing.state.history_fetch[KEY] = HistoryFetch('"l"', 5 * S, PHOTOCRAFT.repo)
    sharing.history(KEY, fake_clock.now_ms())
    assert sharing.redis_log.is_failing
