"""What the purge thread compares (``cdn.wiring.answer_etags``): each channel's ETag as this
host's web processes serve it, through a runtime of its own on a fake clock whose feed looks
at the database at once. A cold host has nothing a cache keeps; a yank and a notice change both
channels; a rollout's step changes the answer with no edit at all; turning the beta channel on
changes the beta answer alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.api.representation import Refiner
from craft_apps.api.runtime import Runtime
from craft_apps.cdn.plan import RELEASE_INFO, changed_paths
from craft_apps.cdn.wiring import answer_etags
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import AppChannel
from craft_apps.controls.rules import Step
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import FakeClock
from tests.content.support import alert
from tests.controls.support import rollout, yank
from tests.support import PHOTOCRAFT, S, apps_setting, publish, publish_history, release

pytestmark = pytest.mark.django_db

BETA = RELEASE_INFO + "?channel=beta"


@pytest.fixture
def runtime(state_dir: Path, settings, fake_clock: FakeClock):
    settings.CRAFT_APPS = {"APPS": apps_setting((PHOTOCRAFT,)), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, clock=fake_clock, runner=lambda look: look())
    made = Runtime(
        clock=fake_clock, recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed
    )
    yield made
    made.close()


def test_a_cold_host_has_nothing_to_purge_then_both_channels_are_watched(runtime: Runtime, state_dir: Path):
    publish(state_dir, {"photocraft": AppState(fetched_ms=None)})
    assert answer_etags(runtime) == {}
    publish(state_dir, {"photocraft": AppState(latest_release=release("1.0.0"), fetched_ms=1)})
    assert set(answer_etags(runtime)) == {RELEASE_INFO, BETA}


def test_a_yank_changes_both_channels(runtime: Runtime, state_dir: Path):
    publish(state_dir, {"photocraft": AppState(latest_release=release("1.1.0"), fetched_ms=1)})
    publish_history(state_dir, "photocraft", [release("1.1.0"), release("1.0.0")])
    before = answer_etags(runtime)
    yank(release("1.1.0").tag)
    assert changed_paths(before, answer_etags(runtime)) == (RELEASE_INFO, BETA)


def test_turning_beta_on_changes_the_beta_answer_alone(runtime: Runtime, state_dir: Path):
    prerelease = replace(release("1.2.0-beta.1"), prerelease=True)
    publish(state_dir, {"photocraft": AppState(latest_release=release("1.1.0"), fetched_ms=1)})
    publish_history(state_dir, "photocraft", [prerelease, release("1.1.0")])
    before = answer_etags(runtime)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    assert changed_paths(before, answer_etags(runtime)) == (BETA,)


def test_a_rollouts_step_changes_the_answer_when_its_time_comes(
    runtime: Runtime, state_dir: Path, fake_clock: FakeClock
):
    publish(state_dir, {"photocraft": AppState(latest_release=release("1.1.0"), fetched_ms=1)})
    publish_history(state_dir, "photocraft", [release("1.1.0"), release("1.0.0")])
    rollout(release("1.1.0").tag, 10, schedule=Step(fake_clock.now_ms() + 60 * S, 50).line())
    before = answer_etags(runtime)
    fake_clock.advance(59)
    assert answer_etags(runtime) == before, "before the step: nothing to purge"
    fake_clock.advance(1)
    assert RELEASE_INFO in changed_paths(before, answer_etags(runtime)), "the step, with no edit"


def test_a_notice_changes_both_channels(runtime: Runtime, state_dir: Path):
    publish(state_dir, {"photocraft": AppState(latest_release=release("1.1.0"), fetched_ms=1)})
    before = answer_etags(runtime)
    alert()
    assert changed_paths(before, answer_etags(runtime)) == (RELEASE_INFO, BETA)
    assert b"PhotoCraft 0.5.0 may lose layers" in runtime.answers.answer().body
