"""``craft_apps_status`` and the metrics show each release policy and each release it keeps
back, with its next step and when: from the site's database (a real SQLite file) and the host's
real state file, at a fake clock's instant."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.ops.controls_support import NOW, NOW_MS, at, status
from tests.support import apps_setting, publish, publish_history, release

NEW = replace(release("0.6.0"), published_at=NOW - timedelta(hours=1))
OLD = replace(release("0.5.0"), published_at=NOW - timedelta(days=30))


@pytest.fixture
def host(settings, state_dir: Path) -> Path:
    """photocraft: v0.6.0 published an hour ago, v0.5.0 a month ago; staged on stable and
    waiting for approval on beta, both since two days ago."""
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting(), "METRICS_TOKEN": TOKEN}
    publish(state_dir, {"photocraft": AppState(latest_release=NEW, fetched_ms=NOW_MS - 60_000)})
    publish_history(state_dir, "photocraft", [NEW, OLD])
    return state_dir


def policies() -> None:
    for channel, kind in (("stable", "staged"), ("beta", "approval")):
        ReleasePolicy.objects.create(
            app_key="photocraft",
            channel=channel,
            policy=kind,
            reason="brakes",
            schedule="+0h 5, +1d 25, +3d 100",
        )
    ReleasePolicy.objects.update(effective_from=NOW - timedelta(days=2))


@pytest.mark.django_db
def test_each_policy_and_each_waiting_release_show_in_the_json_and_the_text(host: Path):
    policies()
    doc = json.loads(status("--json"))
    since = at(days=-2)
    assert doc["release_policies"] == [
        {
            "app": "photocraft",
            "channel": "stable",
            "policy": "staged",
            "schedule": "+0h 5, +1d 25, +3d 100",
            "since": since,
            "approved": [],
        },
        {
            "app": "photocraft",
            "channel": "beta",
            "policy": "approval",
            "schedule": None,
            "since": since,
            "approved": [],
        },
    ]
    assert doc["waiting_releases"] == [
        {
            "app": "photocraft",
            "channel": "stable",
            "tag": "v0.6.0",
            "published_at": at(hours=-1),
            "policy": "staged",
            "percentage": 5,
            "waits_for": "schedule",
            "next_step": {"at": at(hours=23), "percentage": 25},
        },
        {
            "app": "photocraft",
            "channel": "beta",
            "tag": "v0.6.0",
            "published_at": at(hours=-1),
            "policy": "approval",
            "percentage": None,
            "waits_for": "approval",
            "next_step": None,
        },
    ]
    assert doc["release_controls"] == [], "a policy is not listed as a control"
    served = {app["key"]: app["served"] for app in doc["apps"]}["photocraft"]
    assert served == {
        "stable": {"tag": "v0.5.0", "rollout": {"tag": "v0.6.0", "percentage": 5}},
        "beta": {"tag": "v0.5.0", "rollout": None},
    }
    text = status()
    assert f"photocraft  stable v0.6.0: staged at 5 % now, 25 % from {at(hours=23)} (in 23 h)" in text
    assert "photocraft  beta v0.6.0: waits for an approval in the admin" in text
    assert "served now\n  photocraft  stable v0.5.0 + rollout v0.6.0 to 5 %; beta v0.5.0\n" in text


@pytest.mark.django_db
def test_an_approved_release_no_longer_waits(host: Path):
    policies()
    row = ReleasePolicy.objects.get(channel="beta")
    row.approve("v0.6.0")
    row.save()
    doc = json.loads(status("--json"))
    assert [w["channel"] for w in doc["waiting_releases"]] == ["stable"]
    assert doc["release_policies"][1]["approved"] == ["v0.6.0"]


@pytest.mark.django_db(transaction=True)
def test_the_metrics_show_each_waiting_release_and_its_next_step(
    host: Path, client: Client, monkeypatch, install_runtime
):
    from craft_apps.content.feed import NoticesFeed

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    clock = FakeClock(NOW_MS)
    install_runtime(
        clock=clock, recheck_s=0.0, feed=NoticesFeed(recheck_s=0.0, clock=clock, runner=lambda look: look())
    )
    policies()
    samples = scrape(client)
    stable = (("app", "photocraft"), ("channel", "stable"), ("policy", "staged"), ("tag", "v0.6.0"))
    beta = (("app", "photocraft"), ("channel", "beta"), ("policy", "approval"), ("tag", "v0.6.0"))
    assert samples["craft_apps_release_waiting"] == {stable: 1, beta: 1}
    assert samples["craft_apps_release_waiting_percentage"] == {stable: 5}
    step_ms = NOW_MS + 23 * 3600 * 1000
    assert samples["craft_apps_release_waiting_next_step_timestamp_seconds"] == {stable: step_ms / 1000}
    assert samples["craft_apps_release_waiting_next_step_percentage"] == {stable: 25}
    assert samples["craft_apps_rollout_percentage"] == {(("app", "photocraft"), ("channel", "stable")): 5}
