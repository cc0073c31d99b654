"""Hosts polling in the test process on one fake clock, for the refresh tests: ``Host`` (its
state file, lease, poller and wake-ups), the ``APPS`` they poll, and ``github_on`` (the fake
GitHub on that clock, each app at 0.5.0 published at ``PUBLISHED``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import redis

from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.polling.wakeup import WakeUps
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import PHOTOCRAFT, S

APPS = (
    PHOTOCRAFT,
    AppSpec("vectorcraft", "VectorCraft", "storytold/vectorcraft"),
)
PUBLISHED = datetime(2026, 10, 8, tzinfo=UTC)


@contextmanager
def github_on(clock: FakeClock) -> Iterator[FakeGitHub]:
    """The fake GitHub on ``clock``, serving each of ``APPS`` at 0.5.0."""
    with FakeGitHub(now=lambda: clock.now_ms() / 1000) as server:
        for app in APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", PUBLISHED))
        yield server


class Host:
    def __init__(
        self, name: str, root: Path, clock: FakeClock, github: FakeGitHub, client: redis.Redis | None
    ) -> None:
        self.dir = root / name
        self.store = StateStore(self.dir)
        self.store.open_for_writing()
        lease = Lease(self.store, holder=name, clock=clock)
        assert lease.try_acquire() and lease.fence is not None
        shared = None if client is None else SharedStore(client, hostname=name)
        self.poller = Poller(
            config=PollConfig(APPS, interval_ms=1800 * S, max_backoff_ms=14_400 * S),
            github=GitHubClient(api_url=github.url, web_url="https://github.com", token=None, clock=clock),
            host=self.store,
            fence=lease.fence,
            clock=clock,
            shared=shared,
        )
        self.marks = HostDueMarks(self.dir)
        self.wakeups = WakeUps(
            self.poller,
            clock,
            host_marks=self.marks,
            shared_marks=None if client is None else SharedDueMarks(client),
        )
        self.poller.load_host_state()

    def shows(self, version: str) -> bool:
        state = self.store.read().apps.get(PHOTOCRAFT.key)
        return (
            state is not None and state.latest_release is not None and state.latest_release.version == version
        )
