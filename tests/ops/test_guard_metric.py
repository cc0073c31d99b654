"""The metric of a guarded rollout that paused itself (``craft_apps_release_guard_paused``, in
docs/operations.md): 1 for the paused release, none while its guard lets it move on."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import Health, Mark
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.content.policy_site import NEW, SINCE, clock_fixture, host_fixture  # noqa: F401 (fixtures)

LABELS = (("app", "photocraft"), ("channel", "stable"), ("policy", "guarded"), ("tag", "v0.5.0"))


@pytest.fixture
def metrics(host: Path, clock: FakeClock, settings, monkeypatch) -> Client:
    """The policies' site with its metrics on, an hour and a half after v0.5.0's publication."""
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "METRICS_TOKEN": TOKEN}
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    assert NEW.published_at is not None
    clock.set_ms(datetime_to_ms(NEW.published_at + timedelta(hours=1.5)))
    return Client()


def guarded(clock: FakeClock, paused: bool) -> None:
    row = ReleasePolicy(
        app_key="photocraft", channel="stable", policy="guarded", schedule="+0h 5, +1d 25", reason="guard"
    )
    row.set_marks({"v0.5.0": Mark("v0.5.0", 5, paused, clock.now_ms(), Health(250, 12 if paused else 1))})
    row.save()
    ReleasePolicy.objects.update(effective_from=SINCE)


@pytest.mark.django_db
def test_a_paused_guarded_release_is_1(metrics: Client, clock: FakeClock):
    guarded(clock, paused=True)
    samples = scrape(metrics)
    assert samples["craft_apps_release_guard_paused"] == {LABELS: 1}
    assert samples["craft_apps_release_waiting_percentage"] == {LABELS: 5}


@pytest.mark.django_db
def test_a_moving_guarded_release_is_not_listed(metrics: Client, clock: FakeClock):
    guarded(clock, paused=False)
    samples = scrape(metrics)
    assert samples.get("craft_apps_release_guard_paused", {}) == {}
    assert samples["craft_apps_release_waiting"] == {LABELS: 1}
