"""Hosts coordinating through a real redis-server, against the local GitHub stand-in."""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from craft_apps.conf import DEFAULT_APPS
from craft_apps.github.client import GitHubClient
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import PollMode
from craft_apps.kernel.source import FetchOutcome, ReleaseSource
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.hosts import Host, finish, poller_env, start_once
from tests.fleet.server import RedisServer
from tests.fleet.silent_redis import SilentRedis
from tests.support import ONE_AT_A_TIME, TWO_APPS, S, free_port

APPS = TWO_APPS


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
    assert host_a.shared.claims.claim("photocraft", fake_clock.now_ms())  # host A is asking right now
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


PHOTOCRAFT_KEY = "craftApps:releases:app:photocraft"
LAUNCHER_KEY = "craftApps:releases:app:artcraft-launcher"
BOTH_SERVED = {"photocraft": "v0.5.0", "artcraft-launcher": "v0.5.0"}


def test_a_hash_of_another_format_is_replaced_not_adopted(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    host_a = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    assert host_a.poller.tick().round.fetched == 2
    host_b = Host("host-b", tmp_path, fake_clock, github, redis_server.client())
    host_b.poller.tick()
    fake_clock.advance(1801)
    # Another format version's entry: its release null must never be served as ours.
    redis_client.hset(
        PHOTOCRAFT_KEY,
        mapping={"v": "2", "fetched_ms": fake_clock.now_ms(), "etag": '"x"', "release": "null"},
    )
    github.reset_requests()
    report = host_a.poller.tick()
    assert report.round.unchanged == 2 and report.mode is PollMode.COORDINATED
    host_b.poller.tick()
    assert host_b.served_tags() == BOTH_SERVED
    assert github.requests_for("storytold/photocraft") != [], "host A asked"
    assert len(github.requests) == 2, "host B took host A's answers"
    stored = redis_client.hgetall(PHOTOCRAFT_KEY)
    assert stored[b"v"] == b"1" and stored[b"by"] == b"host-a" and stored[b"release"] != b"null"


def test_after_a_flush_the_next_304s_fill_redis_again_and_replace_garbage(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    host_a = Host("host-a", tmp_path, fake_clock, github, redis_server.client())
    assert host_a.poller.tick().round.fetched == 2
    redis_client.flushall()
    etag = github.etag_of("storytold/craft-launcher")
    garbage = {"v": "1", "fetched_ms": fake_clock.now_ms(), "etag": etag, "release": "x" * 10_000_000}
    redis_client.hset(LAUNCHER_KEY, mapping=garbage)  # re-read by every host every tick until replaced
    fake_clock.advance(1801)
    assert host_a.poller.tick().round.unchanged == 2
    assert redis_client.hstrlen(LAUNCHER_KEY, "release") < 10_000
    github.reset_requests()

    newcomer = Host("host-new", tmp_path, fake_clock, github, redis_server.client())
    assert newcomer.poller.warm_start()
    assert newcomer.served_tags() == BOTH_SERVED
    assert newcomer.poller.tick().round.requests() == 0
    assert github.requests == []


WRITE_FAULTS = ["out of memory", "read-only replica", "PEXPIRE denied by ACL"]


def refuse_writes(server: RedisServer, fault: str) -> tuple[redis.Redis, Callable[[], object]]:
    """A client of ``server`` that reads but can't write, and what ends the fault."""
    admin = server.client()
    if fault == "out of memory":
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)
        return server.client(), lambda: admin.config_set("maxmemory", 0)
    if fault == "read-only replica":
        admin.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))  # a master that never answers
        return server.client(), lambda: admin.execute_command("REPLICAOF", "NO", "ONE")
    url = server.acl_user("poller", "pw", ["~*", "&*", "+@all", "-pexpire"])
    return (
        redis.Redis.from_url(url, socket_timeout=5, retry=Retry(NoBackoff(), 0)),
        lambda: server.acl_user("poller", "pw", ["~*", "&*", "+@all"]),
    )


@pytest.mark.parametrize("fault", WRITE_FAULTS)
def test_redis_refusing_writes_is_one_trouble_warned_every_ten_minutes(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, fresh_redis_server: RedisServer, caplog, fault
):
    client, end_fault = refuse_writes(fresh_redis_server, fault)
    host = Host("host-a", tmp_path, fake_clock, github, client, interval_s=60)
    caplog.set_level(logging.INFO, logger="craft_apps.fleet.trouble")
    for _ in range(15):  # 15 min of ticks, every one reading Redis and trying to claim
        report = host.poller.tick()
        assert report.round.fetched + report.round.unchanged == 2, "polling alone meanwhile"
        fake_clock.advance(61)
    messages = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "craft_apps.fleet.trouble"]
    assert [level for level, _ in messages] == ["WARNING", "WARNING"], messages
    assert "writing craftApps:releases:app:" in messages[0][1]
    assert "(9 similar errors not logged)" in messages[1][1]
    if fault == "PEXPIRE denied by ACL":
        admin = fresh_redis_server.client()
        assert admin.keys("*") == [], "no hash left without a TTL"

    caplog.clear()
    end_fault()
    host.poller.tick()
    host.poller.tick()
    back = [r.getMessage() for r in caplog.records if r.name == "craft_apps.fleet.trouble"]
    assert len(back) == 1 and re.fullmatch(
        r"Craft app releases: Redis is back after 9[0-9]{2} s; .*", back[0]
    )
    assert 0 < fresh_redis_server.client().pttl(PHOTOCRAFT_KEY) <= 7 * 24 * 3600 * S


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
    warnings = [r for r in caplog.records if r.name == "craft_apps.fleet.trouble"]
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
        with caplog.at_level(logging.INFO, logger="craft_apps.fleet.trouble"):
            report = host.poller.tick()
        assert report.mode is PollMode.COORDINATED
        assert not host.poller.redis_log.is_failing
        assert any("back" in r.getMessage() for r in caplog.records if r.name == "craft_apps.fleet.trouble")
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.django_db  # the runner closes the site's old database connections before each tick
def test_with_coordination_off_redis_is_never_touched(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client, settings
):
    from craft_apps.polling.process import PollerRunner, RunnerOptions

    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": redis_server.url + "?client_name=craft_apps_poller",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 3, "SOCKET_TIMEOUT": 5},
        },
    }

    def poll_once() -> int:
        options = RunnerOptions(once=True, keep_lease_in_background=False)
        return PollerRunner(make_source=GitHubClient.from_settings, options=options).run()

    apps = ",".join(f"{a.key}={a.name}={a.repo}" for a in APPS)
    base = {"STATE_DIR": str(tmp_path / "state"), "GITHUB_API_URL": github.url, "APPS": apps}
    before = redis_client.info("stats")["total_commands_processed"]
    settings.CRAFT_APPS = {**base, "COORDINATION_ENABLED": False}
    assert poll_once() == 0
    after = redis_client.info("stats")["total_commands_processed"]
    assert after - before == 1, "only this test's own INFO"
    assert asked(github) == each_once(APPS), "each app's latest, and its list with it"
    settings.CRAFT_APPS = {**base, "STATE_DIR": str(tmp_path / "other")}
    assert poll_once() == 0
    assert redis_client.exists("craftApps:releases:app:photocraft"), "with coordination on, it is used"


def asked(github: FakeGitHub) -> Counter[tuple[str, str]]:
    """How often GitHub was asked each repository's latest release and its release list."""
    return Counter((str(r.repo), "latest" if r.path.endswith("/latest") else "list") for r in github.requests)


def each_once(apps, times: int = 1) -> Counter[tuple[str, str]]:
    """Each app's latest and its release list, ``times`` times each."""
    return Counter({(app.repo, kind): times for app in apps for kind in ("latest", "list")})


def run_fleet(
    tmp_path: Path, github: FakeGitHub, redis_url: str | None, hosts: int = 5
) -> Counter[tuple[str, str]]:
    """`hosts` pollers as processes, each with its own state directory, every app due at once."""
    env = poller_env(github, redis_url)
    for process in [start_once(env, tmp_path / f"host-{index}", index) for index in range(hosts)]:
        finish(process)
    return asked(github)


def age_host_state(state_dir: Path, by_ms: int) -> None:
    """Moves every fetch time in a stopped host's state file back, as if ``by_ms`` had passed
    (the store itself never goes back in time, so straight in SQL)."""
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    try:
        with db:
            assert db.execute("UPDATE app_state SET fetched_ms = fetched_ms - ?", (by_ms,)).rowcount > 0
    finally:
        db.close()


@pytest.mark.slow
def test_after_a_flush_a_host_started_later_warms_up_with_every_app(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    """Real processes: host A shares its fetches; Redis is emptied; host A's next round gets
    only 304s and shares its whole entries again, so host B, started later, asks GitHub nothing."""
    apps = DEFAULT_APPS[:2]
    env = poller_env(github, redis_server.url, apps)
    finish(start_once(env, tmp_path / "host-a", 0))
    assert asked(github) == each_once(apps) and {r.status for r in github.requests} == {200}
    redis_client.flushall()
    age_host_state(tmp_path / "host-a", by_ms=3600 * S)
    github.reset_requests()

    finish(start_once(env, tmp_path / "host-a", 0))
    assert [r.status for r in github.requests] == [304, 304]
    github.reset_requests()
    finish(start_once(env, tmp_path / "host-b", 1))
    assert github.requests == [], "host B took every app from Redis"
    served = StateStore(tmp_path / "host-b").read().apps
    assert {key: s.latest_release.tag if s.latest_release else None for key, s in served.items()} == {
        app.key: "v0.5.0" for app in apps
    }


@pytest.mark.slow
@ONE_AT_A_TIME
def test_five_hosts_ask_github_about_each_app_exactly_once(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client, capsys
):
    coordinated = run_fleet(tmp_path / "on", github, redis_server.url)
    assert coordinated == each_once(DEFAULT_APPS), "one host asks each app's latest and its list"
    github.reset_requests()
    alone = run_fleet(tmp_path / "off", github, None)
    assert alone == each_once(DEFAULT_APPS, times=5)
    with capsys.disabled():
        print(
            f"\n5 hosts, 13 apps due at once: {sum(coordinated.values()) / 13:.2f} GitHub requests per app "
            f"with coordination, {sum(alone.values()) / 13:.2f} without (each: its latest, and its list "
            "once at start-up)"
        )
