"""``polling.fleet_merge.FleetMerge`` on its own, with a real Redis: a refresh takes another
host's newer answer and publishes it, leaves out a fetch of another repository, and says when
there is no fleet to read."""

from __future__ import annotations

from pathlib import Path

import redis

from craft_apps.fleet.store import SharedStore
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import steps
from tests.support import PHOTOCRAFT, release

KEY = PHOTOCRAFT.key


def test_without_a_fleet_a_refresh_reads_nothing(state_dir: Path, fake_clock: FakeClock) -> None:
    assert not steps(state_dir, fake_clock).merge.refresh()


def test_another_hosts_newer_answer_is_taken_and_published(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    other = SharedStore(redis_client, hostname="host-b")
    other.entries.write_fetched(KEY, release(), '"e"', fake_clock.now_ms(), PHOTOCRAFT.repo)
    made = steps(state_dir, fake_clock, redis_client)
    assert made.merge.refresh()
    assert made.state.memory[KEY].latest_release == release()
    assert made.store.read().apps[KEY].etag == '"e"'
    assert [r.tag for r in made.store.read().history[KEY]] == ["v0.5.0"], "the latest seen"


def test_a_fetch_of_another_repository_is_left_out(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    other = SharedStore(redis_client, hostname="host-b")
    elsewhere = release(repo="someone/else")
    other.entries.write_fetched(KEY, elsewhere, '"e"', fake_clock.now_ms(), "someone/else")
    made = steps(state_dir, fake_clock, redis_client)
    assert made.merge.refresh()
    assert made.state.memory[KEY].latest_release is None
    assert KEY not in made.store.read().apps
