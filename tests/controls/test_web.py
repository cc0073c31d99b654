"""The controls where a web process applies them, on the real site's views: a yank of the
release a rollout is rolling out (the answer, the download redirect and the downloads pages),
and a hold at a release GitHub later deletes, with a real poller keeping the history against the
GitHub stand-in (the app needs it because it has a control: ``HistoryApps`` reads the database)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.channels import HistoryApps
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.controls.support import (
    V110,
    V120,
    V130,
    answer,
    hold,
    host_poller,
    require,
    rollout,
    yank,
    yank_serves_the_one_before,
)
from tests.support import PHOTOCRAFT, publish, publish_history

DOWNLOAD = "/v1/craft_apps/download/photocraft/windows/x64"
PAGES = ("/craft_apps/downloads/", "/craft_apps/downloads/photocraft/")
T0 = 1_790_000_000_000


def nothing_points_at(client: Client, version: str) -> None:
    """The download redirect and the downloads pages serve no file of ``version``."""
    for query in ("", "?channel=beta"):
        location = client.get(DOWNLOAD + query)["Location"]
        assert "/v1.2.0/" in location, location
        for page in PAGES:
            content = client.get(page + query).content.decode()
            assert "1.2.0" in content and version not in content, page + query


@pytest.mark.django_db
def test_a_yank_of_the_release_in_rollout_ends_the_rollout_everywhere(web: Path):
    publish(web, {"photocraft": AppState(latest_release=V130, fetched_ms=T0)})
    publish_history(web, "photocraft", (V130, V120, V110))
    client = Client()
    assert answer(client).latest == "v1.3.0"

    rollout("v1.3.0", 25)
    for query in ("", "?channel=beta"):
        staged = answer(client, query)
        assert (staged.latest, staged.rollout) == ("v1.2.0", ("v1.3.0", 25)), query
    nothing_points_at(client, "1.3.0")  # the downloads serve latest_release, not the rollout

    yank("v1.3.0")
    for query in ("", "?channel=beta"):
        yanked = answer(client, query)
        assert (yanked.latest, yanked.rollout) == ("v1.2.0", None), query
        assert not yanked.mentions("v1.3.0") and b'"rollout"' not in yanked.body
    nothing_points_at(client, "1.3.0")


@pytest.mark.django_db(transaction=True)  # HistoryApps reads the database in a thread of its own
def test_a_hold_at_a_release_github_deletes_serves_the_newest_below_it(
    web: Path, github: FakeGitHub, fake_clock: FakeClock
):
    hold("v1.2.0")
    poller = host_poller(web, github, fake_clock, HistoryApps())
    poller.tick()
    client = Client()
    held = answer(client)
    assert held.latest == "v1.2.0" and not held.mentions("v1.3.0")
    lists = len([r for r in github.requests if "/releases?" in r.path])
    assert lists == 1, "photocraft's history was fetched: it has a control"

    github.releases.delete_release(PHOTOCRAFT.repo, "v1.2.0")
    fake_clock.advance(1801)  # the interval: the latest is asked again, and the list with it
    poller.tick()
    assert len([r for r in github.requests if "/releases?" in r.path]) == 2
    assert [r.tag for r in poller.history["photocraft"]] == ["v1.3.0", "v1.1.0"]
    for query in ("", "?channel=beta"):
        below = answer(client, query)
        assert below.latest == "v1.1.0" and not below.mentions("v1.3.0"), query


@pytest.mark.django_db(transaction=True)
def test_a_yank_of_the_latest_of_an_app_without_history_serves_the_release_before_at_the_next_tick(
    web: Path, github: FakeGitHub, fake_clock: FakeClock
):
    """The host polled photocraft while it needed no history: its history is the one latest it
    saw. Yanked, the release before it is in GitHub's list, which the next tick (30 s) can ask."""
    needs = HistoryApps(monotonic=lambda: fake_clock.now_ms() / 1000)  # its once-a-second read
    poller = host_poller(web, github, fake_clock, needs)
    poller.tick()
    require([r.tag for r in poller.history["photocraft"]] == ["v1.3.0"], "only the latest seen")
    client = Client()
    require(answer(client).latest == "v1.3.0", "served before the yank")
    yank("v1.3.0")
    meanwhile = answer(client)
    require(meanwhile.fetched and not meanwhile.mentions("v1.3.0"), "the yank applies at once")
    fake_clock.advance(31)  # the poller's next tick
    poller.tick()
    assert answer(client).latest == "v1.2.0"


@pytest.mark.django_db(transaction=True)
def test_a_yank_of_the_latest_with_the_poller_stopped_serves_the_release_before_never_null(
    web: Path, github: FakeGitHub, fake_clock: FakeClock
):
    """A poller keeping every app's history asks its release list with its first latest, so an
    app with no control and no beta knows the release before its latest: a yank saved while the
    poller is stopped serves it from the first answer after the save, on every channel."""
    needs = HistoryApps(monotonic=lambda: fake_clock.now_ms() / 1000)
    poller = host_poller(web, github, fake_clock, needs, every_app=True)
    poller.tick()
    require([r.tag for r in poller.history["photocraft"]] == ["v1.3.0", "v1.2.0", "v1.1.0"], "listed")
    del poller  # the poller stops: nothing is asked of GitHub after the yank
    asked = len(github.requests)
    client = Client()
    require(answer(client).latest == "v1.3.0", "served before the yank")
    yank_serves_the_one_before(client, fake_clock)
    assert len(github.requests) == asked


class NeedsSince:
    """What ``HistoryApps`` gives a poller: the apps that need history, and since when."""

    def __init__(self) -> None:
        self.needs: dict[str, int] = {}

    def __call__(self) -> frozenset[str]:
        return frozenset(self.needs)

    def since(self) -> dict[str, int]:
        return dict(self.needs)


def test_a_fleet_asks_the_first_list_of_an_app_that_came_to_need_history_once(
    tmp_path: Path, github: FakeGitHub, fake_clock: FakeClock, redis_client
):
    """Two hosts with a real Redis: the need is a refresh marked at the instant it was written,
    so the first host's claim answers it for both, and GitHub's list is asked once."""
    from craft_apps.fleet.store import SharedStore

    needs = NeedsSince()
    hosts = [
        host_poller(tmp_path / name, github, fake_clock, needs, SharedStore(redis_client, hostname=name))
        for name in ("host-a", "host-b")
    ]
    for host in hosts:
        host.tick()
    require(len([r for r in github.requests if r.path.endswith("/latest")]) == 1, "one latest for the fleet")
    github.reset_requests()
    fake_clock.advance(5)
    needs.needs["photocraft"] = fake_clock.now_ms()  # a control written now
    fake_clock.advance(31)
    for _ in range(3):
        for host in hosts:
            host.tick()
            fake_clock.advance(1)  # the hosts' ticks a second apart, as a fleet's are
        fake_clock.advance(31)
    lists = [r for r in github.requests if "/releases?" in r.path or r.path.endswith("/releases")]
    assert len(lists) == 1, [r.path for r in github.requests]
    assert all(host.history_fetch["photocraft"].fetched_ms is not None for host in hosts), (
        "both hold the list"
    )
