"""``craft_apps_status`` shows each guarded release's counts against its rule: installs and
failing ones since its last resume, the threshold, and whether its guard paused it."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import Health, Mark
from craft_apps.kernel.domain import AppState
from craft_apps.reports.counts import Counted
from craft_apps.reports.file_counts import FileCounts
from tests.ops.controls_support import NOW, NOW_MS, status
from tests.support import apps_setting, publish, publish_history, release

NEW = replace(release("0.6.0"), published_at=NOW - timedelta(hours=1))
OLD = replace(release("0.5.0"), published_at=NOW - timedelta(days=30))


@pytest.fixture
def host(settings, state_dir: Path) -> Path:
    """photocraft: v0.6.0 published an hour ago under a guarded policy on stable, 300 installs
    reported, 15 of them failed."""
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting()}
    publish(state_dir, {"photocraft": AppState(latest_release=NEW, fetched_ms=NOW_MS - 60_000)})
    publish_history(state_dir, "photocraft", [NEW, OLD])
    for outcome, count in (("installed", 285), ("failed", 15)):
        found = [
            Counted("photocraft", "0.6.0", outcome, h, h) for h in (uuid.uuid4().hex for _ in range(count))
        ]
        FileCounts(state_dir).add(found, NOW_MS)
    return state_dir


def guarded(mark: Mark | None) -> None:
    row = ReleasePolicy(
        app_key="photocraft", channel="stable", policy="guarded", schedule="+0h 5, +1d 25", reason="guard"
    )
    row.min_installs, row.max_failing_percent = 200, 2
    if mark is not None:
        row.set_marks({"v0.6.0": mark})
    row.save()
    ReleasePolicy.objects.update(effective_from=NOW - timedelta(days=2))


@pytest.mark.django_db
def test_a_paused_release_shows_its_counts_and_threshold(host: Path) -> None:
    guarded(Mark("v0.6.0", 5, True, NOW_MS - 60_000, Health(300, 15)))
    line = (
        "  guarded photocraft v0.6.0 on stable at 5 %: paused by its guard; 15 of 300 installs failing "
        "(5.0 %); threshold 2 % from 200 installs"
    )
    assert line in status().splitlines()
    [item] = json.loads(status("--json"))["reports"]["guarded"]
    assert item == {
        "app": "photocraft",
        "channel": "stable",
        "tag": "v0.6.0",
        "percentage": 5,
        "paused": True,
        "installs": 300,
        "failing": 15,
        "failing_percent": 5.0,
        "min_installs": 200,
        "max_failing_percent": 2.0,
    }


@pytest.mark.django_db
def test_after_a_resume_the_counts_are_those_since(host: Path) -> None:
    guarded(Mark("v0.6.0", 5, False, NOW_MS - 60_000, base=Health(280, 14)))
    line = (
        "  guarded photocraft v0.6.0 on stable at 5 %: moving while healthy; 1 of 20 installs failing "
        "(5.0 %); threshold 2 % from 200 installs"
    )
    assert line in status().splitlines()


@pytest.mark.django_db
def test_no_guarded_release_no_line(host: Path) -> None:
    assert json.loads(status("--json"))["reports"]["guarded"] == []
    assert "guarded photocraft" not in status()
