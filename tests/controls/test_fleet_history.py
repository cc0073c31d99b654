"""Two hosts on one real redis-server, their pollers keeping every app's history (as the
settings' poller does) in this process against the GitHub stand-in: the host that fetches a new
release asks its release list and shares it; the other takes it from Redis without asking GitHub,
so a yank of the new latest saved while its poller is stopped serves the release before on its
web side, never ``latest_release: null``. photocraft has no control and no beta before the yank."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.test import Client

from craft_apps.content.channels import HistoryApps
from craft_apps.fleet.store import SharedStore
from craft_apps.polling.poller import Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.controls.conftest import DAY
from tests.controls.support import answer, host_poller, require, yank_serves_the_one_before
from tests.support import PHOTOCRAFT


def asked(github: FakeGitHub) -> list[str]:
    """What GitHub was asked, in order: ``latest`` or ``releases`` (the list)."""
    return [r.path.split("?")[0].rsplit("/", 1)[-1] for r in github.requests]


def tags(poller: Poller) -> list[str]:
    return [release.tag for release in poller.history["photocraft"]]


@pytest.mark.django_db(transaction=True)  # HistoryApps reads the database in a thread of its own
def test_a_new_release_listed_by_one_host_lets_the_other_serve_the_one_before_a_yank_of_it(
    web: Path, tmp_path: Path, github: FakeGitHub, fake_clock: FakeClock, redis_client: redis.Redis
):
    github.releases.delete_release(PHOTOCRAFT.repo, "v1.3.0")  # not published yet: v1.2.0 is the latest
    needs = HistoryApps(monotonic=lambda: fake_clock.now_ms() / 1000)
    host_a, host_b = (
        host_poller(
            state_dir, github, fake_clock, needs, SharedStore(redis_client, hostname=name), every_app=True
        )
        for state_dir, name in ((tmp_path / "host-a", "host-a"), (web, "host-b"))
    )
    host_a.tick()
    require(asked(github) == ["latest", "releases"], "host A lists photocraft with its first latest")
    fake_clock.advance(1)
    host_b.tick()
    require(asked(github) == ["latest", "releases"], "host B took the entry and the list from Redis")

    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.3.0", DAY + timedelta(days=2)))
    github.reset_requests()
    fake_clock.advance(1800)  # the interval: host A asks first
    host_a.tick()
    assert asked(github) == ["latest", "releases"], "a new release: its latest, then one list"
    assert tags(host_a) == ["v1.3.0", "v1.2.0", "v1.1.0"]
    fake_clock.advance(1)
    host_b.tick()
    assert asked(github) == ["latest", "releases"], "host B asked GitHub nothing, not the list either"
    assert tags(host_b) == ["v1.3.0", "v1.2.0", "v1.1.0"]
    assert host_b.history_fetch["photocraft"] == host_a.history_fetch["photocraft"], "host A's list"

    del host_b  # host B's poller stops: nothing is asked of GitHub after the yank
    client = Client()  # host B's web side (``web`` is its state directory)
    require(answer(client).latest == "v1.3.0", "host B serves the new release before the yank")
    yank_serves_the_one_before(client, fake_clock)
    assert asked(github) == ["latest", "releases"]
