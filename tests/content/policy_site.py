"""The release policies' admin on a state file of the test's own, on a fake clock: the
``host`` (photocraft with v0.4.0 before the policies and v0.5.0 after), its ``clock`` and a
superuser's ``admin_client``; the tests import these fixtures (``*_fixture``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.testing.clock import FakeClock
from tests.support import apps_setting, publish, publish_history, release

ADMIN = "/admin/craft_apps/releasepolicy"
SINCE = datetime(2026, 10, 1, tzinfo=UTC)
OLD = replace(release("0.4.0"), published_at=SINCE - timedelta(days=3))
NEW = replace(release("0.5.0"), published_at=SINCE + timedelta(hours=10))
FETCHED_MS = 1_790_000_000_000


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    return FakeClock(datetime_to_ms(SINCE))


@pytest.fixture(name="fake_now")
def fake_now_fixture(clock: FakeClock) -> Callable[[datetime], None]:
    return lambda at: clock.set_ms(datetime_to_ms(at))


@pytest.fixture(name="host")
def host_fixture(state_dir: Path, settings, install_runtime, clock: FakeClock) -> Path:
    """photocraft fetched with its release list: v0.4.0 before the policies took effect,
    v0.5.0 after. The runtime looks at the state file and the database on every request, on
    the test's clock."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look(), clock=clock)
    refiner = Refiner(start=lambda job: job(), after_s=0.0)
    install_runtime(recheck_s=0.0, refiner=refiner, feed=feed, clock=clock)
    publish(state_dir, {"photocraft": AppState(latest_release=NEW, fetched_ms=FETCHED_MS)})
    publish_history(state_dir, "photocraft", (NEW, OLD), fetched_ms=FETCHED_MS)
    return state_dir


@pytest.fixture(name="admin_client")
def admin_client_fixture(client: Client, django_user_model, host: Path) -> Client:
    operator = django_user_model.objects.create(username="operator", is_staff=True, is_superuser=True)
    client.force_login(operator)
    return client
