"""Each app's release history shared through a real redis-server: its own key beside the
reference's hashes, newer wins, and a host started later warms up with it without GitHub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import redis

from craft_apps.fleet.entry import APP_TTL_MS
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import HistoryFetch
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.server import RedisServer
from tests.support import PHOTOCRAFT, TWO_APPS, S, release

DAY = datetime(2026, 10, 8, tzinfo=UTC)
HISTORY_KEY = "craftApps:releases:history:photocraft"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app in TWO_APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", DAY))
        server.releases.publish_prerelease(
            PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0-rc.1", DAY + timedelta(days=1))
        )
        yield server


def host(
    name: str, root: Path, clock: FakeClock, github: FakeGitHub, client: redis.Redis, needs: frozenset[str]
) -> Poller:
    store = StateStore(root / name)
    store.open_for_writing()
    lease = Lease(store, holder=name, clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    poller = Poller(
        config=PollConfig(TWO_APPS, interval_ms=1800 * S, max_backoff_ms=14_400 * S),
        github=GitHubClient(api_url=github.url, web_url="https://github.com", token=None, clock=clock),
        host=store,
        fence=lease.fence,
        clock=clock,
        shared=SharedStore(client, hostname=name),
        needs_history=lambda: needs,
    )
    poller.load_host_state()
    return poller


def test_the_history_has_its_own_key_and_the_reference_hash_keeps_its_fields(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client: redis.Redis,
) -> None:
    plain = host("host-plain", tmp_path, fake_clock, github, redis_server.client(), frozenset())
    plain.tick()
    reference_fields = set(redis_client.hkeys("craftApps:releases:app:photocraft"))
    assert not redis_client.exists(HISTORY_KEY)  # the default configuration shares no history
    redis_client.flushall()
    poller = host("host-a", tmp_path, fake_clock, github, redis_server.client(), frozenset({"photocraft"}))
    poller.tick()
    assert set(redis_client.hkeys("craftApps:releases:app:photocraft")) == reference_fields
    stored = redis_client.hgetall(HISTORY_KEY)
    assert stored[b"v"] == b"1" and stored[b"repo"] == PHOTOCRAFT.repo.encode()
    assert [r["tag"] for r in json.loads(stored[b"releases"])] == ["v0.6.0-rc.1", "v0.5.0"]
    assert stored[b"etag"] and int(stored[b"fetched_ms"]) > 0
    assert 0 < redis_client.pttl(HISTORY_KEY) <= APP_TTL_MS
    assert not redis_client.exists("craftApps:releases:history:artcraft-launcher")


def test_a_host_started_later_warms_up_with_the_history_without_asking_github(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client: redis.Redis,
) -> None:
    host("host-a", tmp_path, fake_clock, github, redis_server.client(), frozenset({"photocraft"})).tick()
    github.reset_requests()
    newcomer = host(
        "host-new", tmp_path, fake_clock, github, redis_server.client(), frozenset({"photocraft"})
    )
    assert newcomer.warm_start()
    assert github.requests == []
    history = newcomer.host.read().history["photocraft"]
    assert [(r.tag, r.prerelease) for r in history] == [("v0.6.0-rc.1", True), ("v0.5.0", False)]
    assert newcomer.host.read().history_fetches["photocraft"].etag is not None  # revalidates later


def test_an_older_history_never_replaces_a_newer_one(redis_client: redis.Redis) -> None:
    store = SharedStore(redis_client, hostname="pod-a")
    repo = PHOTOCRAFT.repo
    assert store.histories.write("photocraft", [release("0.6.0")], HistoryFetch('"b"', 2_000, repo))
    assert not store.histories.write("photocraft", [release("0.5.0")], HistoryFetch('"a"', 1_000, repo))
    assert not store.histories.write("photocraft", [release("0.4.0")], HistoryFetch(None, None, repo))
    found = store.histories.read(["photocraft", "artcraft-launcher"])
    assert found[1] is None and found[0] is not None
    assert [r.tag for r in found[0][0]] == ["v0.6.0"] and found[0][1] == HistoryFetch('"b"', 2_000, repo)


def test_a_history_that_does_not_decode_reads_as_none(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    redis_client.hset(HISTORY_KEY, mapping={"v": "1", "releases": "[{}]", "fetched_ms": "5"})
    store = SharedStore(redis_client, hostname="pod-a")
    assert store.histories.read(["photocraft"]) == [None]
    assert store.histories.read(["photocraft"]) == [None]
    assert sum(HISTORY_KEY in r.getMessage() for r in caplog.records) == 1
