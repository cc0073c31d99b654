"""Hosts coordinating through a real redis-server, against the local GitHub stand-in."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from craft_apps.compat import UTC
from craft_apps.conf import DEFAULT_APPS
from craft_apps.domain import AppSpec
from craft_apps.fallback import PollMode
from craft_apps.github import FetchOutcome, GitHubClient
from craft_apps.lease import Lease
from craft_apps.poller import PollConfig, Poller, ReleaseSource
from craft_apps.shared_store import SharedStore
from craft_apps.state_store import StateStore
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.redis.server import RedisServer
from tests.redis.silent_redis import SilentRedis

S = 1000
APPS = (
    AppSpec("photocraft", "PhotoCraft", "storytold/photocraft"),
    AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher"),
)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app in DEFAULT_APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


class Host:
    """One host of the fleet: its own state directory, lease, GitHub client and Redis client."""

    def __init__(
        self,
        name: str,
        root: Path,
        clock: FakeClock,
        github: FakeGitHub,
        client: redis.Redis | None,
        apps: tuple[AppSpec, ...] = APPS,
        source: ReleaseSource | None = None,
    ) -> None:
        self.name = name
        self.store = StateStore(root / name)
        self.store.open_for_writing()
        lease = Lease(self.store, holder=name, clock=clock)
        assert lease.try_acquire() and lease.fence is not None
        self.shared = None if client is None else SharedStore(client, hostname=name)
        self.client = GitHubClient(api_url=github.url, web_url="https://github.com", token=None, clock=clock)
        self.poller = Poller(
            config=PollConfig(apps, interval_ms=1800 * S, max_backoff_ms=14_400 * S),
            github=source or self.client,
            host=self.store,
            fence=lease.fence,
            clock=clock,
            shared=self.shared,
        )
        self.poller.load_host_state()

    def served_tags(self) -> dict[str, str | None]:
        apps = self.store.read().apps
        return {key: (s.latest_release.tag if s.latest_release else None) for key, s in apps.items()}


def test_a_host_takes_another_hosts_fresh_fetch_instead_of_asking_github(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    host_a = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    report = host_a.poller.tick()
    assert report.mode is PollMode.COORDINATED
    assert report.round.fetched == 2
    github.reset_requests()
    host_b = Host("host-b", tmp_path, fake_clock, github, redis_server.client())
    report = host_b.poller.tick()
    assert report.mode is PollMode.COORDINATED
    assert report.round.requests() == 0
    assert github.requests == []
    assert host_b.served_tags() == {"photocraft": "v0.5.0", "artcraft-launcher": "v0.5.0"}
    assert redis_client.hget("craftApps:releases:app:photocraft", "by") == b"host-a"


def test_a_new_host_serves_the_fleets_releases_at_start_up_without_asking_github(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    Host("host-a", tmp_path, fake_clock, github, redis_server.client()).poller.tick()
    github.reset_requests()
    newcomer = Host("host-new", tmp_path, fake_clock, github, redis_server.client())
    assert newcomer.poller.warm_start()
    assert newcomer.served_tags() == {"photocraft": "v0.5.0", "artcraft-launcher": "v0.5.0"}
    assert github.requests == []


def test_a_claimed_app_is_left_to_the_host_that_claimed_it(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    host_a = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    host_b = Host("host-b", tmp_path, fake_clock, github, redis_server.client())
    assert host_a.shared is not None
    assert host_a.shared.claim("photocraft", fake_clock.now_ms())  # host A is asking right now
    report = host_b.poller.tick()
    assert report.round.fetched == 1
    assert [r.repo for r in github.requests] == ["storytold/craft-launcher"]
    fake_clock.advance(61)  # the claim lapsed and nobody shared a fetch: host B asks
    assert host_b.poller.tick().round.fetched == 1
    assert [r.repo for r in github.requests] == ["storytold/craft-launcher", "storytold/photocraft"]


def test_the_fleets_backoff_stops_every_host(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    from craft_apps.testing.fake_github import RateLimited429Fault

    github.set_fault(None, RateLimited429Fault(retry_after_s=600))
    host_a = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    assert host_a.poller.tick().round.rate_limited
    assert redis_client.exists("craftApps:releases:backoff")
    github.reset_requests()
    host_b = Host("host-b", tmp_path, fake_clock, github, redis_server.client())
    assert host_b.poller.tick().backing_off
    assert github.requests == []
    github.set_fault(None, None)
    fake_clock.advance(1801)  # the reset plus a minute, or the interval: whichever is longer
    assert host_b.poller.tick().round.fetched == 2
    assert not redis_client.exists("craftApps:releases:backoff"), "a good round deletes it"


def test_an_unreachable_redis_makes_the_tick_standalone(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, caplog
):
    # Configured as django-redis configures the poller's pool: timeouts, no retries.
    closed = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=3, socket_timeout=5, retry=Retry(NoBackoff(), 0)
    )
    host = Host("host-a", tmp_path, fake_clock, github, closed)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        report = host.poller.tick()
    assert time.monotonic() - started < 2
    assert report.mode is PollMode.STANDALONE
    assert report.round.fetched == 2
    assert host.poller.redis_log.is_failing
    warnings = [r for r in caplog.records if r.name == "craft_apps.fallback"]
    assert len(warnings) == 1, "warned once, not once per Redis call"


def test_a_redis_that_goes_silent_fails_within_the_io_timeout(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub
):
    with SilentRedis() as silent:
        client = redis.Redis.from_url(
            silent.url, socket_timeout=0.5, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0)
        )
        host = Host("host-a", tmp_path, fake_clock, github, client)
        started = time.monotonic()
        report = host.poller.tick()
        elapsed = time.monotonic() - started
    assert report.mode is PollMode.STANDALONE
    assert report.round.fetched == 2
    assert elapsed < 1.5, elapsed  # one read timeout, not one per Redis call


class KillRedisAfterFirstRequest(ReleaseSource):
    def __init__(self, client: GitHubClient, server: RedisServer) -> None:
        self.client = client
        self.server = server
        self.calls = 0

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
        self.calls += 1
        outcome = self.client.fetch_latest_release(repo, etag)
        if self.calls == 1:
            self.server.kill()
        return outcome


def test_redis_killed_mid_round_the_round_finishes_alone_and_coordination_resumes(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, caplog
):
    server = RedisServer.start(tmp_path / "redis")
    try:
        host = Host("host-a", tmp_path, fake_clock, github, server.client())
        host.poller.github = KillRedisAfterFirstRequest(host.client, server)
        report = host.poller.tick()
        assert report.round.fetched == 2, "the round finished alone"
        assert report.mode is PollMode.STANDALONE
        assert host.served_tags() == {"photocraft": "v0.5.0", "artcraft-launcher": "v0.5.0"}
        server.restart()
        with caplog.at_level(logging.INFO, logger="craft_apps.fallback"):
            report = host.poller.tick()
        assert report.mode is PollMode.COORDINATED
        assert not host.poller.redis_log.is_failing
        assert any("back" in r.getMessage() for r in caplog.records if r.name == "craft_apps.fallback")
    finally:
        server.stop()


def test_with_coordination_off_redis_is_never_touched(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client, settings
):
    from craft_apps.runner import PollerRunner, RunnerOptions

    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": redis_server.url + "?client_name=craft_apps_poller",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 3, "SOCKET_TIMEOUT": 5},
        },
    }
    apps = ",".join(f"{a.key}={a.name}={a.repo}" for a in APPS)
    base = {"STATE_DIR": str(tmp_path / "state"), "GITHUB_API_URL": github.url, "APPS": apps}
    before = redis_client.info("stats")["total_commands_processed"]
    settings.CRAFT_APPS = {**base, "COORDINATION_ENABLED": False}
    assert PollerRunner(options=RunnerOptions(once=True, keep_lease_in_background=False)).run() == 0
    after = redis_client.info("stats")["total_commands_processed"]
    assert after - before == 1, "only this test's own INFO"
    assert len(github.requests) == 2
    settings.CRAFT_APPS = {**base, "STATE_DIR": str(tmp_path / "other")}
    assert PollerRunner(options=RunnerOptions(once=True, keep_lease_in_background=False)).run() == 0
    assert redis_client.exists("craftApps:releases:app:photocraft"), "with coordination on, it is used"


def run_fleet(tmp_path: Path, github: FakeGitHub, redis_url: str | None, hosts: int = 5) -> Counter[str]:
    """`hosts` pollers as processes, each with its own state directory, every app due at once."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url)
    if redis_url:
        env["CRAFT_APPS_REDIS_URL"] = redis_url + "?client_name=craft_apps_poller"
    processes = [
        subprocess.Popen(
            [sys.executable, "manage.py", "poll_craft_releases", "--once"],
            cwd=ROOT,
            # A token each: every host has its own GitHub quota, as hosts with their own IPs do.
            env={
                **env,
                "CRAFT_APPS_STATE_DIR": str(tmp_path / f"host-{index}"),
                "CRAFT_APPS_RELEASE_GITHUB_TOKEN": f"token-of-host-{index}",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for index in range(hosts)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr.decode()
    return Counter(str(r.repo) for r in github.requests)


@pytest.mark.slow
def test_five_hosts_ask_github_about_each_app_exactly_once(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client, capsys
):
    coordinated = run_fleet(tmp_path / "on", github, redis_server.url)
    assert coordinated == Counter({app.repo: 1 for app in DEFAULT_APPS})
    github.reset_requests()
    alone = run_fleet(tmp_path / "off", github, None)
    assert alone == Counter({app.repo: 5 for app in DEFAULT_APPS})
    with capsys.disabled():
        print(
            f"\n5 hosts, 13 apps due at once: {sum(coordinated.values()) / 13:.2f} GitHub requests per app "
            f"with coordination, {sum(alone.values()) / 13:.2f} without"
        )
