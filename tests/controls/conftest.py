"""The in-process site of the controls' tests: photocraft alone, a state directory of the test's
own, and a web runtime on the test's fake clock whose feed looks at the database on every
request, in the test's thread (so an edit shows at the next request); and the GitHub stand-in
with photocraft's three releases."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed
from craft_apps.kernel.compat import UTC
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import PHOTOCRAFT, apps_setting


@pytest.fixture
def web(state_dir: Path, settings, install_runtime, fake_clock: FakeClock) -> Path:
    settings.CRAFT_APPS = {"APPS": apps_setting((PHOTOCRAFT,)), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, clock=fake_clock, runner=lambda look: look())
    install_runtime(
        clock=fake_clock, recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed
    )
    return state_dir


DAY = datetime(2026, 10, 8, tzinfo=UTC)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """photocraft's v1.1.0, v1.2.0 and v1.3.0, the latest."""
    with FakeGitHub() as server:
        for day, version in enumerate(("1.1.0", "1.2.0", "1.3.0")):
            server.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, version, DAY + timedelta(days=day)))
        yield server
