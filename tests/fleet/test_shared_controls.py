"""The release controls shared through a real redis-server: every poller shares what its reads
of the site's database found when it changed (the later read wins), and a poller that never read
them, on a host without a kept file, writes the fleet's there before it publishes the releases
they apply to; a key that doesn't decode is one line and one count, and nothing is written from it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import redis

from craft_apps.controls import ROLLOUT, YANK, Control, Step
from craft_apps.fleet.entry import APP_TTL_MS
from craft_apps.fleet.store import SharedStore
from craft_apps.host.counters import read_counters
from craft_apps.notices.kept_controls import FILE_NAME, decode, encode, inspect
from craft_apps.polling.controls_relay import ControlsRelay
from craft_apps.polling.poller import Poller
from craft_apps.polling.tally import Tally
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.hosts import Host
from tests.fleet.server import RedisServer
from tests.support import S

KEY = "craftApps:releases:controls"
YANKED = (Control("photocraft", YANK, "v0.5.0"),)
ROLLING = (Control("photocraft", ROLLOUT, "v0.5.0", "beta", 5, (Step(1_800_000_000_000, 25),), None),)


class Reads:
    """What a poller's reads of the database found: None until one answered."""

    def __init__(self, controls: tuple[Control, ...] | None = None) -> None:
        self.found = controls

    def __call__(self) -> frozenset[str]:
        return frozenset()

    def controls(self) -> tuple[Control, ...] | None:
        return self.found


def test_a_poller_shares_what_it_read_once_per_change_and_the_later_read_wins(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, fake_clock: FakeClock
) -> None:
    store = SharedStore(redis_server.client(), hostname="host-a")
    relay = ControlsRelay(tmp_path)
    reads = Reads(YANKED)
    relay.relay(reads.controls, store, fake_clock.now_ms())
    assert store.read_controls(str) == (encode(YANKED), fake_clock.now_ms())
    assert 0 < redis_client.pttl(KEY) <= APP_TTL_MS

    redis_client.delete(KEY)
    relay.relay(reads.controls, store, fake_clock.now_ms() + S)
    assert not redis_client.exists(KEY), "unchanged: not written again"

    reads.found = ROLLING
    relay.relay(reads.controls, store, fake_clock.now_ms() + 2 * S)
    assert store.read_controls(decode) == (ROLLING, fake_clock.now_ms() + 2 * S)
    assert not store.write_controls(encode(YANKED), fake_clock.now_ms() + S), "an earlier read loses"
    assert store.read_controls(decode) == (ROLLING, fake_clock.now_ms() + 2 * S)
    assert not (tmp_path / FILE_NAME).exists(), "a host that reads the database keeps no file of its own"


def test_a_poller_that_never_read_them_keeps_the_fleets_for_its_web_processes_once(
    tmp_path: Path,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SharedStore(redis_server.client(), hostname="host-b")
    assert store.write_controls(encode(YANKED), fake_clock.now_ms())
    relay = ControlsRelay(tmp_path)
    with caplog.at_level(logging.WARNING, "craft_apps.polling.controls_relay"):
        relay.relay(Reads().controls, store, fake_clock.now_ms())
        relay.relay(Reads().controls, store, fake_clock.now_ms())
    assert inspect(tmp_path).controls == YANKED
    [line] = [r.getMessage() for r in caplog.records if r.name == "craft_apps.polling.controls_relay"]
    assert "keeping the 1 controls the fleet shared (read at " in line

    store.write_controls(encode(ROLLING), fake_clock.now_ms() + S)
    relay.relay(Reads().controls, store, fake_clock.now_ms() + S)
    assert inspect(tmp_path).controls == YANKED, "a kept file is this host's: never replaced from Redis"


def test_a_key_that_isnt_controls_is_one_line_and_writes_nothing(
    tmp_path: Path,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SharedStore(redis_server.client(), hostname="host-b")
    relay = ControlsRelay(tmp_path)
    with caplog.at_level(logging.WARNING):
        store.write_controls("not the controls", fake_clock.now_ms())
        relay.relay(Reads().controls, store, fake_clock.now_ms())
        relay.relay(Reads().controls, store, fake_clock.now_ms())
        assert store.problems(KEY)[0].startswith("they don't read as controls: ")
        redis_client.hset(KEY, "v", "9")
        assert store.read_controls(decode) is None
        assert store.read_controls(decode) is None
        redis_client.delete(KEY)
        redis_client.set(KEY, "a string")
        assert store.read_controls(decode) is None
    assert not (tmp_path / FILE_NAME).exists()
    assert store.unreadable == 3, "each refusal logged is counted"
    lines = [r.getMessage() for r in caplog.records]
    assert sum(f"Redis key {KEY} (they don't read as controls: " in line for line in lines) == 1, lines
    assert sum(f"Redis key {KEY} (controls of format '9'" in line for line in lines) == 1, lines
    assert sum(f"Redis key {KEY} (it is not a hash)" in line for line in lines) == 1, lines


def test_the_poller_keeps_them_before_it_publishes_the_fleets_releases(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
) -> None:
    Host("host-a", tmp_path, fake_clock, github, redis_server.client()).poller.tick()
    SharedStore(redis_server.client(), hostname="host-a").write_controls(encode(YANKED), fake_clock.now_ms())
    newcomer = Host("host-new", tmp_path, fake_clock, github, redis_server.client())
    newcomer.poller.needs_history = Reads()  # the site's database not read yet
    seen: list[bool] = []
    publish = newcomer.poller._publish

    def watched() -> None:
        seen.append((tmp_path / "host-new" / FILE_NAME).exists())
        publish()

    newcomer.poller._publish = watched  # type: ignore[method-assign]
    assert newcomer.poller.warm_start()
    assert newcomer.served_tags()["photocraft"] == "v0.5.0"
    assert seen and all(seen), "the file was there at every publish"
    assert inspect(tmp_path / "host-new").controls == YANKED


def test_every_refusal_is_counted_once_in_the_hosts_counters_across_custodies(
    tmp_path: Path,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    fake_clock: FakeClock,
    github: FakeGitHub,
) -> None:
    redis_client.hset(
        "craftApps:releases:app:photocraft", mapping={"v": "1", "fetched_ms": "1", "etag": "", "release": "{"}
    )
    host = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    assert host.shared is not None and host.shared.write_controls("not the controls", fake_clock.now_ms())
    host.poller.needs_history = Reads()
    tally = Tally(host.store, fake_clock)
    for _ in range(3):
        tally.after_tick(host.poller.tick(), host.poller, host.client)
        fake_clock.advance(30)
    assert read_counters(host.store).redis_unreadable == 2, "the entry and the controls, each once"
    assert host.served_tags()["photocraft"] == "v0.5.0", "the refused entry was replaced by a fetch"

    successor = Poller(  # a new custody in the same process keeps the shared store
        config=host.poller.config,
        github=host.client,
        host=host.store,
        fence=host.poller.fence,
        clock=fake_clock,
        shared=host.shared,
    )
    successor.needs_history = Reads()
    successor.load_host_state()
    tally.after_tick(successor.tick(), successor, host.client)
    tally.after_tick(successor.tick(), successor, host.client)
    assert read_counters(host.store).redis_unreadable == 2, "the store outlives the custody: not again"
