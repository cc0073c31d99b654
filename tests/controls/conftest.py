"""The in-process site of the controls' tests: photocraft alone, a state directory of the test's
own, and a web runtime on the test's fake clock whose feed looks at the database on every
request, in the test's thread (so an edit shows at the next request)."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.api.representation import Refiner
from craft_apps.notices.feed import NoticesFeed
from craft_apps.testing.clock import FakeClock
from tests.support import PHOTOCRAFT, apps_setting


@pytest.fixture
def web(state_dir: Path, settings, install_runtime, fake_clock: FakeClock) -> Path:
    settings.CRAFT_APPS = {"APPS": apps_setting((PHOTOCRAFT,)), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, clock=fake_clock, runner=lambda look: look())
    install_runtime(
        clock=fake_clock, recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed
    )
    return state_dir
