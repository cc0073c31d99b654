"""Each app's release history, end to end against the GitHub stand-in: the list asked only for
the apps that need it, revalidated with its own ETag, a prerelease published and deleted, a
stable release overtaking a release candidate, and every release seen through the latest."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import PHOTOCRAFT, TWO_APPS, S

INTERVAL_S = 1800
DAY = datetime(2026, 10, 8, tzinfo=UTC)


def tags(store: StateStore, key: str) -> list[str]:
    return [release.tag for release in store.read().history.get(key, ())]


class Host:
    def __init__(self, state_dir: Path, clock: FakeClock, server: FakeGitHub, needs: frozenset[str]) -> None:
        self.clock = clock
        self.store = StateStore(state_dir)
        self.store.open_for_writing()
        self.lease = Lease(self.store, holder="host-a", clock=clock)
        assert self.lease.try_acquire() and self.lease.fence is not None
        github = GitHubClient(api_url=server.url, web_url="https://github.com", token=None, clock=clock)
        self.poller = Poller(
            config=PollConfig(TWO_APPS, interval_ms=INTERVAL_S * S, max_backoff_ms=14_400 * S),
            github=github,
            host=self.store,
            fence=self.lease.fence,
            clock=clock,
            needs_history=lambda: needs,
        )
        self.poller.load_host_state()

    def round(self) -> None:
        self.poller.tick()
        self.clock.advance(INTERVAL_S)


def release(app: AppSpec, version: str, days: int) -> dict[str, object]:
    return demo_release(app, version, DAY + timedelta(days=days))


@pytest.fixture
def server() -> Iterator[FakeGitHub]:
    with FakeGitHub() as github:
        for app in TWO_APPS:
            github.publish(app.repo, release(app, "0.5.0", 0))
        yield github


def test_the_default_configuration_asks_no_list_and_keeps_every_latest_seen(
    state_dir: Path, fake_clock: FakeClock, server: FakeGitHub
) -> None:
    host = Host(state_dir, fake_clock, server, frozenset())
    host.round()
    server.publish(PHOTOCRAFT.repo, release(PHOTOCRAFT, "0.6.0", 1))
    host.round()
    paths = [r.path for r in server.requests]
    assert paths and all(path.endswith("/releases/latest") for path in paths)  # today's cost
    assert len(paths) == 2 * len(TWO_APPS)
    assert tags(host.store, "photocraft") == ["v0.6.0", "v0.5.0"]
    server.releases.delete_release(PHOTOCRAFT.repo, "v0.6.0")  # the latest goes back: 0.6.0 is gone
    host.round()
    assert tags(host.store, "photocraft") == ["v0.5.0"]


def test_an_app_that_needs_history_asks_the_list_once_per_interval_with_its_etag(
    state_dir: Path, fake_clock: FakeClock, server: FakeGitHub
) -> None:
    server.releases.publish_prerelease(PHOTOCRAFT.repo, release(PHOTOCRAFT, "0.6.0-rc.1", 1))
    server.releases.add_draft(PHOTOCRAFT.repo, release(PHOTOCRAFT, "0.7.0", 2))
    host = Host(state_dir, fake_clock, server, frozenset({"photocraft"}))
    host.round()
    history = host.store.read().history["photocraft"]
    assert [(r.tag, r.prerelease) for r in history] == [("v0.6.0-rc.1", True), ("v0.5.0", False)]
    lists = [r for r in server.requests if "/releases?" in r.path]
    assert [r.repo for r in lists] == [PHOTOCRAFT.repo] and "per_page=20" in lists[0].path
    assert host.store.read().history_fetches["photocraft"].etag is not None
    assert tags(host.store, "artcraft-launcher") == ["v0.5.0"]  # only what the latest showed

    host.round()  # nothing changed: the list is revalidated, a 304
    lists = [r for r in server.requests if "/releases?" in r.path]
    assert len(lists) == 2 and lists[1].status == 304 and "if-none-match" in lists[1].headers

    server.releases.delete_release(PHOTOCRAFT.repo, "v0.6.0-rc.1")
    host.round()
    assert tags(host.store, "photocraft") == ["v0.5.0"]

    server.releases.publish_prerelease(PHOTOCRAFT.repo, release(PHOTOCRAFT, "0.6.0-rc.2", 3))
    server.publish(PHOTOCRAFT.repo, release(PHOTOCRAFT, "0.6.0", 4))  # overtakes the candidate
    host.round()
    assert tags(host.store, "photocraft") == ["v0.6.0", "v0.6.0-rc.2", "v0.5.0"]
    assert host.store.read().apps["photocraft"].latest_release.tag == "v0.6.0"  # type: ignore[union-attr]
