"""The release controls shared through a real redis-server: every poller shares what its reads
of the site's database found when it changed (the later read wins), once a day, and at the next
tick when the key is missing; a poller that never read them, on a host without a kept file,
writes the fleet's there before it publishes the releases they apply to; a key that doesn't
decode is one line and one count, and nothing is written from it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import redis

from craft_apps.controls.kept import FILE_NAME, decode, encode, inspect
from craft_apps.controls.relay import RENEW_MS, ControlsRelay
from craft_apps.controls.rules import APPROVAL, APPROVED, ROLLOUT, YANK, Control, Step
from craft_apps.fleet.entry import APP_TTL_MS
from craft_apps.fleet.store import SharedStore
from craft_apps.host.counters import read_counters
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
    """What a poller's reads of the database found, and when: None until one answered."""

    def __init__(self, controls: tuple[Control, ...] | None = None, read_ms: int = 0) -> None:
        self.found = controls
        self.read_ms = read_ms

    def __call__(self) -> frozenset[str]:
        return frozenset()

    def controls_read(self) -> tuple[tuple[Control, ...], int] | None:
        return None if self.found is None else (self.found, self.read_ms)


def test_a_poller_shares_what_it_read_once_per_change_and_the_later_read_wins(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, fake_clock: FakeClock
) -> None:
    store = SharedStore(redis_server.client(), hostname="host-a")
    relay = ControlsRelay(tmp_path)
    reads = Reads(YANKED, fake_clock.now_ms())
    relay.relay(reads.controls_read, store, fake_clock.now_ms())
    assert store.controls.read(str) == (encode(YANKED), fake_clock.now_ms())
    assert 0 < redis_client.pttl(KEY) <= APP_TTL_MS

    redis_client.pexpire(KEY, 60_000)
    relay.relay(reads.controls_read, store, fake_clock.now_ms() + S)
    assert 0 < redis_client.pttl(KEY) <= 60_000, "unchanged and present: not written again"

    reads.found, reads.read_ms = ROLLING, fake_clock.now_ms() + 2 * S
    relay.relay(reads.controls_read, store, fake_clock.now_ms() + 2 * S)
    assert store.controls.read(decode) == (ROLLING, fake_clock.now_ms() + 2 * S)
    assert not store.controls.write(encode(YANKED), fake_clock.now_ms() + S), "an earlier read loses"
    assert store.controls.read(decode) == (ROLLING, fake_clock.now_ms() + 2 * S)
    assert not (tmp_path / FILE_NAME).exists(), "a host that reads the database keeps no file of its own"


def test_a_poller_that_never_read_them_keeps_the_fleets_for_its_web_processes_once(
    tmp_path: Path,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SharedStore(redis_server.client(), hostname="host-b")
    assert store.controls.write(encode(YANKED), fake_clock.now_ms())
    relay = ControlsRelay(tmp_path)
    with caplog.at_level(logging.WARNING, "craft_apps.polling.controls_relay"):
        relay.relay(Reads().controls_read, store, fake_clock.now_ms())
        relay.relay(Reads().controls_read, store, fake_clock.now_ms())
    assert inspect(tmp_path).controls == YANKED
    [line] = [r.getMessage() for r in caplog.records if r.name == "craft_apps.polling.controls_relay"]
    assert "keeping the 1 controls the fleet shared (read at " in line

    store.controls.write(encode(ROLLING), fake_clock.now_ms() + S)
    relay.relay(Reads().controls_read, store, fake_clock.now_ms() + S)
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
        store.controls.write("not the controls", fake_clock.now_ms())
        relay.relay(Reads().controls_read, store, fake_clock.now_ms())
        relay.relay(Reads().controls_read, store, fake_clock.now_ms())
        assert store.reads.problems(KEY)[0].startswith("they don't read as controls: ")
        redis_client.hset(KEY, "v", "9")
        assert store.controls.read(decode) is None
        assert store.controls.read(decode) is None
        redis_client.delete(KEY)
        redis_client.set(KEY, "a string")
        assert store.controls.read(decode) is None
    assert not (tmp_path / FILE_NAME).exists()
    assert store.reads.unreadable == 3, "each refusal logged is counted"
    lines = [r.getMessage() for r in caplog.records]
    assert sum(f"Redis key {KEY} (they don't read as controls: " in line for line in lines) == 1, lines
    assert sum(f"Redis key {KEY} (controls of format '9'" in line for line in lines) == 1, lines
    assert sum(f"Redis key {KEY} (it is not a hash)" in line for line in lines) == 1, lines


def test_the_poller_keeps_them_before_it_publishes_the_fleets_releases(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
) -> None:
    Host("host-a", tmp_path, fake_clock, github, redis_server.client()).poller.tick()
    SharedStore(redis_server.client(), hostname="host-a").controls.write(encode(YANKED), fake_clock.now_ms())
    newcomer = Host("host-new", tmp_path, fake_clock, github, redis_server.client())
    newcomer.poller.needs_history = Reads()  # the site's database not read yet
    seen: list[bool] = []
    publish = newcomer.poller.publisher.publish

    def watched() -> None:
        seen.append((tmp_path / "host-new" / FILE_NAME).exists())
        publish()

    newcomer.poller.publisher.publish = watched  # type: ignore[method-assign]
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
    assert host.shared is not None and host.shared.controls.write("not the controls", fake_clock.now_ms())
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


def test_a_missing_key_is_written_again_at_the_next_tick_and_a_kept_one_renewed_daily(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, fake_clock: FakeClock
) -> None:
    """A FLUSHALL, a Redis restarted without persistence, or 7 days without an edit: the key
    comes back from any poller that reads the database, as it last read it."""
    store = SharedStore(redis_server.client(), hostname="host-a")
    relay = ControlsRelay(tmp_path)
    reads = Reads(YANKED, fake_clock.now_ms())
    relay.relay(reads.controls_read, store, fake_clock.now_ms())
    assert store.controls.read(decode) == (YANKED, fake_clock.now_ms())

    redis_client.flushall()
    fake_clock.advance(30)
    reads.read_ms = fake_clock.now_ms()
    relay.relay(reads.controls_read, store, fake_clock.now_ms())
    assert store.controls.read(decode) == (YANKED, fake_clock.now_ms()), "back after one tick"

    redis_client.pexpire(KEY, 60_000)  # as if six days had passed since the write
    fake_clock.advance(RENEW_MS // 1000)
    reads.read_ms = fake_clock.now_ms()
    relay.relay(reads.controls_read, store, fake_clock.now_ms())
    assert redis_client.pttl(KEY) > APP_TTL_MS - 60_000, "renewed a day after the last write"
    assert store.controls.read(decode) == (YANKED, fake_clock.now_ms())


def test_a_renewal_never_stamps_an_old_read_as_new(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, fake_clock: FakeClock
) -> None:
    """Host A's database stopped answering after its read; host B read an edit since. A's
    renewal carries the time of A's read, so B's later read stays."""
    store_a = SharedStore(redis_server.client(), hostname="host-a")
    store_b = SharedStore(redis_server.client(), hostname="host-b")
    relay_a, relay_b = ControlsRelay(tmp_path / "a"), ControlsRelay(tmp_path / "b")
    stale = Reads(YANKED, fake_clock.now_ms())
    relay_a.relay(stale.controls_read, store_a, fake_clock.now_ms())
    relay_b.relay(Reads(ROLLING, fake_clock.now_ms() + S).controls_read, store_b, fake_clock.now_ms() + S)
    relay_a.relay(stale.controls_read, store_a, fake_clock.now_ms() + RENEW_MS)
    assert store_a.controls.read(decode) == (ROLLING, fake_clock.now_ms() + S)


def test_the_release_policies_travel_with_the_controls_to_a_host_that_never_read_the_database(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, fake_clock: FakeClock
) -> None:
    redis_client.delete(KEY)  # another test's later read would win
    since = fake_clock.now_ms() - 3_600_000
    held = (
        *YANKED,
        Control("photocraft", APPROVAL, "", "stable", since_ms=since),
        Control("photocraft", APPROVED, "v0.6.0", "stable"),
    )
    store = SharedStore(redis_server.client(), hostname="host-a")
    ControlsRelay(tmp_path / "a").relay(
        Reads(held, fake_clock.now_ms()).controls_read, store, fake_clock.now_ms()
    )
    assert store.controls.read(decode) == (held, fake_clock.now_ms())
    other = SharedStore(redis_server.client(), hostname="host-b")
    ControlsRelay(tmp_path / "b").relay(Reads().controls_read, other, fake_clock.now_ms())
    assert inspect(tmp_path / "b").controls == held, (
        "host B's web processes apply the policy from their start"
    )
