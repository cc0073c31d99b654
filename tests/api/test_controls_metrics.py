"""The release controls in GET /v1/craft_apps/metrics: each channel's rollout percentage as the
worker's answers serve it, the controls in force by app and action, and those naming a tag the
host doesn't know; from the feed's last look of a real SQLite database, never waiting on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.content.support import database_unreachable
from tests.ops.controls_support import NOW_MS, create_controls, publish_releases
from tests.support import apps_setting

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(settings, state_dir: Path, monkeypatch, install_runtime) -> Path:
    from craft_apps.content.feed import NoticesFeed

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    clock = FakeClock(NOW_MS)
    install_runtime(
        clock=clock, recheck_s=0.0, feed=NoticesFeed(recheck_s=0.0, clock=clock, runner=lambda look: look())
    )
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting(), "METRICS_TOKEN": TOKEN}
    publish_releases(state_dir)
    return state_dir


def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pairs.items()))


def test_the_rollout_percentages_and_the_controls_show(site: Path, client: Client):
    create_controls()
    samples = scrape(client)
    assert samples["craft_apps_rollout_percentage"] == {
        labels(app="photocraft", channel="stable"): 25,  # the schedule's step an hour ago
        labels(app="photocraft", channel="beta"): 25,
        labels(app="artcraft-launcher", channel="beta"): 20,  # paused
    }
    controls = samples["craft_apps_release_controls"]
    assert {key: value for key, value in controls.items() if value} == {
        labels(app="artcraft-launcher", action="hold"): 1,
        labels(app="artcraft-launcher", action="rollout"): 1,
        labels(app="artcraft-launcher", action="yank"): 1,
        labels(app="oldcraft", action="yank"): 1,  # not in APPS: counted all the same
        labels(app="photocraft", action="rollout"): 1,
        labels(app="photocraft", action="yank"): 1,
    }
    assert controls[labels(app="photocraft", action="hold")] == 0  # every app and action has a series
    assert samples["craft_apps_release_controls_unknown_tag"] == {
        labels(app="artcraft-launcher"): 1,  # v9.9.9
        labels(app="oldcraft"): 1,
        labels(app="photocraft"): 0,
    }


def test_without_controls_no_rollout_and_every_count_is_zero(site: Path, client: Client):
    samples = scrape(client)
    assert samples.get("craft_apps_rollout_percentage", {}) == {}
    assert set(samples["craft_apps_release_controls"].values()) == {0}
    assert len(samples["craft_apps_release_controls"]) == 2 * 3  # two apps, three actions
    assert set(samples["craft_apps_release_controls_unknown_tag"].values()) == {0}


def test_a_rollout_at_100_is_no_longer_counted_nor_offered(site: Path, client: Client):
    from craft_apps.content.models import ReleaseControl

    ReleaseControl.objects.create(app_key="photocraft", action="rollout", tag="v0.6.0", percentage=100)
    samples = scrape(client)
    assert samples.get("craft_apps_rollout_percentage", {}) == {}
    assert samples["craft_apps_release_controls"][labels(app="photocraft", action="rollout")] == 0


def test_the_metrics_read_the_feeds_last_look_while_the_database_cant_be_read(site: Path, client: Client):
    create_controls()
    before = scrape(client)
    with database_unreachable():
        during = scrape(client)
    for name in (
        "craft_apps_rollout_percentage",
        "craft_apps_release_controls",
        "craft_apps_release_controls_unknown_tag",
    ):
        assert during[name] == before[name], name
    failures = "craft_apps_notices_look_failures_total"
    assert sum(during[failures].values()) > sum(before.get(failures, {}).values())  # the look did fail


def test_the_status_says_what_the_endpoint_answers_on_each_channel(site: Path, client: Client):
    import json

    from tests.ops.controls_support import status

    create_controls()
    doc = json.loads(status("--json"))
    for channel in ("stable", "beta"):
        answer = client.get(f"/v1/craft_apps/release_info?channel={channel}").json()["release_info"]["apps"]
        for app in doc["apps"]:
            listed = answer[app["key"]]
            rollout = listed.get("rollout")
            assert app["served"][channel] == {
                "tag": listed["latest_release"]["tag"],
                "rollout": None
                if rollout is None
                else {"tag": rollout["release"]["tag"], "percentage": rollout["percentage"]},
            }, (channel, app["key"])


def test_a_kept_controls_file_that_isnt_ours_is_counted(site: Path, client: Client):
    from craft_apps.controls.kept import FAILURES, FILE_NAME, inspect

    (site / FILE_NAME).write_text("not the controls")
    before = FAILURES.labels("read")._value.get()
    samples = scrape(client)  # the process's first look reads the file before the database
    assert samples["craft_apps_kept_controls_failures_total"][labels(operation="read")] == before + 1
    assert inspect(site).problem is None, "the database's controls (none) replaced it"
