"""The metric of a guarded rollout that paused itself (``craft_apps_release_guard_paused``, in
docs/operations.md): 1 for the paused release, none while its guard lets it move on."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.feed import NoticesFeed
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.kernel.domain import AppState
from craft_apps.kernel.guard import Health, Mark
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.ops.controls_support import NOW, NOW_MS
from tests.support import apps_setting, publish, publish_history, release

NEW = replace(release("0.6.0"), published_at=NOW - timedelta(hours=1))
OLD = replace(release("0.5.0"), published_at=NOW - timedelta(days=30))
PAUSED = (("app", "photocraft"), ("channel", "stable"), ("policy", "guarded"), ("tag", "v0.6.0"))


@pytest.fixture
def host(settings, state_dir: Path, monkeypatch, install_runtime) -> Path:
    """photocraft: v0.6.0 published an hour ago under a guarded policy on stable."""
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting(), "METRICS_TOKEN": TOKEN}
    publish(state_dir, {"photocraft": AppState(latest_release=NEW, fetched_ms=NOW_MS - 60_000)})
    publish_history(state_dir, "photocraft", [NEW, OLD])
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    clock = FakeClock(NOW_MS)
    feed = NoticesFeed(recheck_s=0.0, clock=clock, runner=lambda look: look())
    install_runtime(clock=clock, recheck_s=0.0, feed=feed)
    return state_dir


def guarded(paused: bool) -> None:
    row = ReleasePolicy(
        app_key="photocraft", channel="stable", policy="guarded", schedule="+0h 5, +1d 25", reason="guard"
    )
    row.set_marks({"v0.6.0": Mark("v0.6.0", 5, paused, NOW_MS - 60_000, Health(250, 12 if paused else 1))})
    row.save()
    ReleasePolicy.objects.update(effective_from=NOW - timedelta(days=2))


@pytest.mark.django_db(transaction=True)
def test_a_paused_guarded_release_is_1(host: Path, client: Client):
    guarded(paused=True)
    samples = scrape(client)
    assert samples["craft_apps_release_guard_paused"] == {PAUSED: 1}
    assert samples["craft_apps_release_waiting_percentage"] == {PAUSED: 5}


@pytest.mark.django_db(transaction=True)
def test_a_moving_guarded_release_is_not_listed(host: Path, client: Client):
    guarded(paused=False)
    samples = scrape(client)
    assert samples.get("craft_apps_release_guard_paused", {}) == {}
    assert samples["craft_apps_release_waiting"] == {PAUSED: 1}
