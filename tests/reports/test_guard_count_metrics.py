"""The metrics of a guarded release's counts (``craft_apps_release_guard_installs`` and
``…_failing_installs``, in docs/operations.md): the fleet's counts of each guarded release waiting."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.feed import NoticesFeed
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.kernel.domain import AppState
from craft_apps.reports.counts import Counted
from craft_apps.reports.file_counts import FileCounts
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.ops.controls_support import NOW, NOW_MS
from tests.support import apps_setting, publish, publish_history, release

NEW = replace(release("0.6.0"), published_at=NOW - timedelta(hours=1))
OLD = replace(release("0.5.0"), published_at=NOW - timedelta(days=30))
LABELS = (("app", "photocraft"), ("channel", "stable"), ("policy", "guarded"), ("tag", "v0.6.0"))


@pytest.fixture
def host(settings, state_dir: Path, monkeypatch, install_runtime) -> Path:
    """photocraft: v0.6.0 published an hour ago; 40 installs reported, 3 of them crashed."""
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting(), "METRICS_TOKEN": TOKEN}
    publish(state_dir, {"photocraft": AppState(latest_release=NEW, fetched_ms=NOW_MS - 60_000)})
    publish_history(state_dir, "photocraft", [NEW, OLD])
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    clock = FakeClock(NOW_MS)
    install_runtime(
        clock=clock, recheck_s=0.0, feed=NoticesFeed(recheck_s=0.0, clock=clock, runner=lambda look: look())
    )
    for outcome, count in (("installed", 37), ("crashed", 3)):
        found = [
            Counted("photocraft", "0.6.0", outcome, h, h) for h in (uuid.uuid4().hex for _ in range(count))
        ]
        FileCounts(state_dir).add(found, NOW_MS)
    return state_dir


def policy(kind: str) -> None:
    ReleasePolicy(
        app_key="photocraft", channel="stable", policy=kind, schedule="+0h 5, +1d 25", reason="r"
    ).save()
    ReleasePolicy.objects.update(effective_from=NOW - timedelta(days=2))


@pytest.mark.django_db(transaction=True)
def test_a_guarded_release_shows_its_counts(host: Path, client: Client) -> None:
    policy("guarded")
    samples = scrape(client)
    assert samples["craft_apps_release_guard_installs"] == {LABELS: 40}
    assert samples["craft_apps_release_guard_failing_installs"] == {LABELS: 3}


@pytest.mark.django_db(transaction=True)
def test_a_staged_release_has_none(host: Path, client: Client) -> None:
    policy("staged")
    samples = scrape(client)
    assert "craft_apps_release_guard_installs" not in samples
