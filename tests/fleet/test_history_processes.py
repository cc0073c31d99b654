"""The shared release history and the warm start with real processes: two ``poll_craft_releases
--once`` hosts of the demo site, one real redis-server, the local GitHub stand-in, and the beta
channel turned on in the site's database."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.models import AppChannel
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.hosts import ROOT, finish, poller_env, start_once
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT, RELEASE_INFO_URL, TWO_APPS, apps_setting, stand_in

DAY = datetime(2026, 10, 8, tzinfo=UTC)
STABLE = {"photocraft": "v0.5.0", "artcraft-launcher": "v0.5.0"}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """A stable 0.5.0 of each app and a newer photocraft prerelease, 0.6.0-rc.1."""
    with stand_in(TWO_APPS) as server:
        server.releases.publish_prerelease(
            PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0-rc.1", DAY + timedelta(days=1))
        )
        yield server


def manage(env: dict[str, str], *args: str) -> None:
    """One ``manage.py`` command of the demo site, which must succeed."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()


def latest_tags(response) -> dict[str, str | None]:
    apps = json.loads(response.content)["release_info"]["apps"]
    return {key: (app.get("latest_release") or {}).get("tag") for key, app in apps.items()}


@pytest.mark.slow
@ONE_AT_A_TIME
@pytest.mark.django_db
def test_a_host_started_later_takes_the_history_from_redis_and_serves_the_prerelease_on_beta(
    tmp_path: Path, github: FakeGitHub, fresh_redis_server: RedisServer, settings, install_runtime
) -> None:
    env = {
        **poller_env(github, fresh_redis_server.url, TWO_APPS),
        "DJANGO_DB_NAME": str(tmp_path / "site.sqlite3"),
    }
    manage(env, "migrate", "--verbosity=0")
    manage(
        env,
        "shell",
        "-c",
        "from craft_apps.content.models import AppChannel; "
        "AppChannel.objects.create(app_key='photocraft', channels=['beta'])",
    )

    finish(start_once(env, tmp_path / "host-a", 0))
    asked = sorted((r.repo, r.path.split("?")[0].rsplit("/", 1)[-1]) for r in github.requests)
    assert asked == [
        ("storytold/craft-launcher", "latest"),
        ("storytold/craft-launcher", "releases"),
        ("storytold/photocraft", "latest"),
        ("storytold/photocraft", "releases"),
    ], "host A asks each app's list with its first latest"
    shared = fresh_redis_server.client()
    assert shared.exists("craftApps:releases:history:photocraft")
    github.reset_requests()

    finish(start_once(env, tmp_path / "host-b", 1))
    assert github.requests == [], "host B took the entries and the history from Redis"
    state = StateStore(tmp_path / "host-b").read()
    assert [(r.tag, r.prerelease) for r in state.history["photocraft"]] == [
        ("v0.6.0-rc.1", True),
        ("v0.5.0", False),
    ]
    served = {k: s.latest_release.tag if s.latest_release else None for k, s in state.apps.items()}
    assert served == STABLE

    # What host B's web processes serve from that state file, beta read from the database.
    from craft_apps.api.representation import Refiner
    from craft_apps.content.feed import NoticesFeed

    settings.CRAFT_APPS = {"APPS": apps_setting(TWO_APPS), "STATE_DIR": str(tmp_path / "host-b")}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    beta = client.get(RELEASE_INFO_URL + "?channel=beta")
    assert beta.status_code == 200
    assert latest_tags(beta) == {"photocraft": "v0.6.0-rc.1", "artcraft-launcher": "v0.5.0"}
    assert latest_tags(client.get(RELEASE_INFO_URL)) == STABLE, "the stable channel is unchanged"
