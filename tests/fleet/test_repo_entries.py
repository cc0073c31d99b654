"""Two hosts configured with different repositories for one app key on one real redis-server, and
entries written as 0.2 (or the reference pods) write them, without the repository fields."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis

from craft_apps.github.parsing import parse_release
from craft_apps.kernel.codec import encode_release
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.hosts import Host
from tests.fleet.server import RedisServer

ONE = (AppSpec("one", "One", "acme/one"),)
UNO = (AppSpec("one", "One", "acme/uno"),)
KEY = "craftApps:releases:app:one"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.publish("acme/one", demo_release(ONE[0], "1.0.0", datetime(2026, 10, 1, tzinfo=UTC)))
        server.publish("acme/uno", demo_release(UNO[0], "2.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


def versions(host: Host) -> str | None:
    release = host.store.read().apps["one"].latest_release
    return None if release is None else release.version


def test_hosts_with_other_repositories_for_one_app_never_take_each_others_release(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    host_one = Host("host-one", tmp_path, fake_clock, github, redis_server.client(), apps=ONE)
    assert host_one.poller.tick().round.fetched == 1
    assert redis_client.hget(KEY, "repo") == b"acme/one"

    # acme/one's host claimed the key a moment ago: that claim is about another repository.
    host_uno = Host("host-uno", tmp_path, fake_clock, github, redis_server.client(), apps=UNO)
    fake_clock.advance(5)
    report = host_uno.poller.tick()
    assert report.round.fetched == 1, "asked about acme/uno at once"
    assert [request.repo for request in github.requests] == ["acme/one", "acme/uno"]
    assert github.requests[1].header("If-None-Match") is None
    assert versions(host_uno) == "2.0.0"
    state = host_uno.store.read().apps["one"]
    assert state.repo == "acme/uno" and state.latest_release is not None and state.latest_release.assets
    assert "Redis holds a release of acme/one for one, not of acme/uno" in caplog.text

    # Now Redis holds acme/uno's fetch, newer: acme/one's host keeps its own.
    assert redis_client.hget(KEY, "repo") == b"acme/uno"
    host_one.poller.tick()
    assert versions(host_one) == "1.0.0"
    assert host_one.poller.memory["one"].etag == github.etag_of("acme/one")
    assert "Redis holds a release of acme/uno for one, not of acme/one" in caplog.text
    assert caplog.text.count("Redis holds a release of acme/uno") == 1, "once, not every tick"
    host_one.poller.tick()
    assert caplog.text.count("Redis holds a release of acme/uno") == 1


def as_0_2_writes(redis_client: redis.Redis, app: AppSpec, version: str | None, fetched_ms: int) -> None:
    """A 200 shared by a host that doesn't know the repository fields: only its own fields."""
    release = None
    if version is not None:
        body = json.dumps(demo_release(app, version, datetime(2026, 11, 1, tzinfo=UTC))).encode()
        release = parse_release(body, app.repo)
    redis_client.hset(
        KEY,
        mapping={
            "v": "1",
            "fetched_ms": str(fetched_ms),
            "etag": f'"{app.repo}-{version}"',
            "release": encode_release(release),
            "by": "host-0.2",
        },
    )


@pytest.mark.parametrize("version", ["3.0.0", None])
def test_a_0_2_hosts_fetch_of_another_repository_is_not_taken_though_the_hash_recorded_ours(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    version: str | None,
) -> None:
    """The repository field our host wrote stays in the hash behind a 0.2 host's write: it no
    longer vouches for the fetch, and a release of acme/one (or "no release" from a writer that
    names no repository) is not taken as acme/uno's."""
    host_uno = Host("host-uno", tmp_path, fake_clock, github, redis_server.client(), apps=UNO)
    assert host_uno.poller.tick().round.fetched == 1
    fake_clock.advance(60)
    as_0_2_writes(redis_client, ONE[0], version, fake_clock.now_ms())
    assert redis_client.hget(KEY, "repo") == b"acme/uno", "left behind"
    fake_clock.advance(1)
    host_uno.poller.tick()
    assert versions(host_uno) == "2.0.0"
    assert host_uno.poller.memory["one"].etag == github.etag_of("acme/uno")


def test_a_0_2_hosts_fetch_of_the_same_repository_is_taken_by_its_release_page(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client: redis.Redis,
) -> None:
    """Hashes written before the upgrade (or by 0.2 hosts beside it) keep working: a release
    whose page is in the app's repository is the app's, and is recorded as such when shared."""
    as_0_2_writes(redis_client, UNO[0], "2.5.0", fake_clock.now_ms())
    host_uno = Host("host-uno", tmp_path, fake_clock, github, redis_server.client(), apps=UNO)
    assert host_uno.poller.warm_start()
    assert versions(host_uno) == "2.5.0"
    assert host_uno.store.read().apps["one"].repo == "acme/uno"
    assert github.requests == []
