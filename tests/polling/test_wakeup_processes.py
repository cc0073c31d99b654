"""A signed webhook reaches running `poll_craft_releases` daemons: real processes, a real
redis-server, the GitHub stand-in's request log. The delivery is posted to the webhook view in
this process, set up as a web worker of the first host (its state directory, the same Redis).
Waiting here is for real processes, bounded by deadlines."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from django.test import Client, override_settings

from craft_apps.fleet.options import poller_cache
from craft_apps.github.parsing import parse_release
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.server import RedisServer
from tests.polling.processes import Poller, poller_environment, wait_until
from tests.support import ONE_AT_A_TIME, TWO_APPS, publish, publish_history, release_event, webhook_headers

ROOT = Path(__file__).resolve().parents[2]
APPS = TWO_APPS
SECRET = "process-test-secret-0123456789"
PUBLISHED = datetime(2026, 10, 8, tzinfo=UTC)
ROUND_SUMMARY = re.compile(r"Craft app releases \((?:coordinated|standalone)\): \d+ fetched")

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app in APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", PUBLISHED))
        yield server


class Daemon(Poller):
    """`poll_craft_releases` on one host, chatty (``-v 2``), without the start-up delay."""

    def __init__(self, state_dir: Path, github: FakeGitHub, redis_url: str | None, log: Path) -> None:
        self.state_dir = state_dir
        extra = {} if redis_url is None else {"CRAFT_APPS_REDIS_URL": redis_url}
        super().__init__(poller_environment(github, state_dir, **extra), log, "--no-startup-delay", "-v", "2")

    def shows(self, version: str, app: str = "photocraft") -> bool:
        try:
            apps = StateStore(self.state_dir).read().apps
        except Exception:
            return False
        state = apps.get(app)
        return (
            state is not None and state.latest_release is not None and state.latest_release.version == version
        )

    def started(self) -> bool:
        """Its first round has begun: the app it had to ask about (or take from Redis) is there."""
        return self.shows("0.5.0", "artcraft-launcher")

    def rounds(self) -> int:
        """The rounds it finished that asked GitHub (one summary line each)."""
        return len(ROUND_SUMMARY.findall(self.output()))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        assert self.finish() == 0, self.output()


@pytest.fixture
def daemons(tmp_path: Path, github: FakeGitHub) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def start(name: str, redis_url: str | None) -> Daemon:
        # PhotoCraft and its release list were fetched a minute ago: the first round leaves it
        # alone, so the delivery is the first reason to ask about it (no 10 s gap since that
        # answer to wait out).
        release = parse_release(json.dumps(demo_release(APPS[0], "0.5.0", PUBLISHED)).encode(), APPS[0].repo)
        minute_ago_ms = time.time_ns() // 1_000_000 - 60_000
        publish(tmp_path / name, {"photocraft": AppState(latest_release=release, fetched_ms=minute_ago_ms)})
        publish_history(tmp_path / name, "photocraft", [release], fetched_ms=minute_ago_ms, repo=APPS[0].repo)
        daemon = Daemon(tmp_path / name, github, redis_url, tmp_path / f"{name}.log")
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop()


def deliver(state_dir: Path, redis_url: str | None) -> int:
    """GitHub posting a signed ``release`` event to a web worker of the host of ``state_dir``."""
    caches: dict[str, object] = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    if redis_url is not None:
        caches["craft_apps"] = poller_cache(redis_url)
    body = json.dumps(release_event()).encode()
    with override_settings(
        CRAFT_APPS={"STATE_DIR": str(state_dir), "GITHUB_WEBHOOK_SECRET": SECRET}, CACHES=caches
    ):
        response = Client().post(
            "/v1/craft_apps/github_webhook",
            data=body,
            content_type="application/json",
            headers=webhook_headers(body, SECRET),
        )
    return response.status_code


def latest_requests(github: FakeGitHub) -> int:
    """Requests for PhotoCraft's latest release (its release list may follow a new one)."""
    return sum(r.path.endswith("/releases/latest") for r in github.requests_for("storytold/photocraft"))


def wait_for_hosts(hosts: list[Daemon], condition: Callable[[], bool], timeout: float, what: str) -> float:
    """``wait_until``, failing with every host's log: what each daemon did is the diagnosis."""
    try:
        return wait_until(condition, timeout, what)
    except AssertionError as err:
        logs = "".join(f"\n--- {host.state_dir.name}'s log:\n{host.output()}" for host in hosts)
        raise AssertionError(f"{err}{logs}") from None


def test_a_running_fleet_asks_github_within_2_s_of_a_delivery_and_only_once(
    daemons, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    # One after the other: two hosts starting together race for the first claim, and the loser
    # takes the winner's answer only at its next tick, 27-33 s later.
    hosts = [daemons("host-a", redis_server.url)]
    wait_for_hosts(hosts, lambda: hosts[0].rounds() == 1, 30, "host-a's first round")
    hosts.append(daemons("host-b", redis_server.url))
    wait_for_hosts(hosts, hosts[1].started, 30, "host-b's first round (taken from Redis at start-up)")
    github.reset_requests()
    github.publish("storytold/photocraft", demo_release(APPS[0], "0.6.0", PUBLISHED))

    assert deliver(hosts[0].state_dir, redis_server.url) == 202
    asked = wait_for_hosts(hosts, lambda: latest_requests(github) > 0, 2.0, "a request to GitHub")
    assert asked <= 2.0
    # The other host hears of it at its next one-second look and takes the answer from Redis. The
    # fleet's target, every state file within 5 s (p95), is the fleet benchmark's to measure; here
    # 15 s still comes before either host's next scheduled tick (25 s or more after the delivery).
    wait_for_hosts(hosts, lambda: all(host.shows("0.6.0") for host in hosts), 15.0, "every state file")
    assert latest_requests(github) == 1, "one host asked, the other took its answer"
    assert {r.repo for r in github.requests} == {"storytold/photocraft"}


def test_alone_the_receiving_hosts_daemon_asks_within_2_s(daemons, github: FakeGitHub):
    host = daemons("host-a", None)
    wait_for_hosts([host], lambda: host.rounds() == 1, 30, "the first round")  # then it waits
    github.reset_requests()
    github.publish("storytold/photocraft", demo_release(APPS[0], "0.6.0", PUBLISHED))
    assert deliver(host.state_dir, None) == 202
    assert wait_for_hosts([host], lambda: latest_requests(github) > 0, 2.0, "a request") <= 2.0
    wait_until(lambda: host.shows("0.6.0"), 10.0, "the state file")
    assert "a refresh of photocraft was asked for on this host" in host.output()
