"""Purge on change in a fleet of real pollers: two hosts, each a ``poll_craft_releases`` process
of its own state directory, polling the GitHub stand-in and sharing a real redis-server, with
the purge configured (``http`` PURGE to an edge that records what it is asked). A yank saved in
the site's database changes both channels' answers on both hosts; each URL is purged once in
the fleet, by one host, with the public Host, and the other host says it left it to the other.
The waits are for the processes' own log lines and the edge's requests, never for a margin."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from craft_apps.host.database import StateUnavailable
from craft_apps.host.store import StateStore
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.cdn.edge import PurgeEdge
from tests.content.workers_support import database_for_the_workers
from tests.controls.conftest import DAY
from tests.controls.support import yank
from tests.fleet.hosts import ROOT, poller_env
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

PUBLIC = "https://updates.example.com"
STABLE, BETA = "/v1/craft_apps/release_info", "/v1/craft_apps/release_info?channel=beta"


@pytest.fixture
def edge() -> Iterator[PurgeEdge]:
    running = PurgeEdge()
    yield running
    running.close()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for day, version in enumerate(("1.2.0", "1.3.0")):
            server.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, version, DAY + timedelta(days=day)))
        yield server


class Host:
    """A ``poll_craft_releases`` process (debug lines on) of its own state directory."""

    def __init__(self, name: str, env: dict[str, str], tmp: Path) -> None:
        self.log = tmp / f"{name}.log"
        self.state_dir = tmp / name
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "poll_craft_releases", "--no-startup-delay", "-v", "2"],
                cwd=ROOT,
                env={**env, "CRAFT_APPS_STATE_DIR": str(tmp / name), "CRAFT_APPS_RELEASE_GITHUB_TOKEN": name},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def knows_history(self) -> bool:
        """Whether this host's state file holds photocraft's older releases."""
        store = StateStore(self.state_dir)
        try:
            return "v1.2.0" in [release.tag for release in store.read().history.get(PHOTOCRAFT.key, ())]
        except StateUnavailable:
            return False
        finally:
            store.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def until(condition: Callable[[], bool], hosts: list[Host], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for host in hosts:
            assert host.process.poll() is None, host.output()
        assert time.monotonic() < deadline, f"{what}:\n" + "\n".join(host.output() for host in hosts)
        time.sleep(0.05)


def test_a_yank_is_purged_once_by_one_host_of_the_fleet(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client, edge: PurgeEdge
):
    with database_for_the_workers() as (database, _):
        env = {
            **poller_env(github, redis_server.url, (PHOTOCRAFT,)),
            **{f"DJANGO_DB_{key}": value for key, value in database.items()},
            "CRAFT_APPS_CDN_PURGE_KIND": "http",
            "CRAFT_APPS_CDN_PURGE_URL": edge.url + "{path}",
            "CRAFT_APPS_CDN_PUBLIC_URL": PUBLIC,
        }
        hosts = [Host(name, env, tmp_path) for name in ("host-a", "host-b")]
        try:
            watching = f"Craft apps CDN purge: watching {STABLE}, {BETA}."
            until(
                lambda: all(watching in host.output() for host in hosts), hosts, "both hosts serve photocraft"
            )
            # Each host learns the older releases (the release list) after the latest one; the
            # answer to a yank changes again then. Yank once both know them: one change, one purge.
            until(lambda: all(host.knows_history() for host in hosts), hosts, "both hosts know v1.2.0")
            yank("v1.3.0")

            # A purge waits until the host's web processes serve the change (none here: the 2 s
            # fallback), so wait for the edge's requests, then for each host's line.
            until(
                lambda: edge.got(STABLE).is_set() and edge.got(BETA).is_set(),
                hosts,
                "the edge got both purges",
            )

            def both_decided() -> bool:
                return all("dropped /v1/" in h.output() or "fleet purges /v1/" in h.output() for h in hosts)

            until(both_decided, hosts, "each host purged the yank or left it to the other")
        finally:
            codes = [host.stop() for host in hosts]
    assert codes == [0, 0], [host.output() for host in hosts]
    assert sorted(edge.requests) == [
        ("PURGE", STABLE, "updates.example.com"),
        ("PURGE", BETA, "updates.example.com"),
    ], [host.output() for host in hosts]
    assert sum("Craft apps CDN purge: dropped" in host.output() for host in hosts) >= 1
