"""A guarded rollout that paused itself in the admin: a banner on the release controls' list and
on the page of a control of that app (and on the policies' list), none for other apps; taking a
guarded rollout over keeps what launchers see, paused where its guard paused it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.models import ReleaseControl
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import Health, Mark
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.testing.clock import FakeClock
from tests.content.policy_site import ADMIN, NEW, SINCE, admin_client_fixture, clock_fixture, host_fixture  # noqa: F401
from tests.controls.support import served
from tests.support import RELEASE_INFO_URL

pytestmark = pytest.mark.django_db

CONTROLS = "/admin/craft_apps/releasecontrol"
SCHEDULE = "+0h 5, +1h 25, +2h 100"
BANNER = "v0.5.0 on stable: the guarded rollout paused itself at 25 %"


def guarded(mark: Mark | None = None) -> ReleasePolicy:
    row = ReleasePolicy(app_key="photocraft", channel="stable", policy="guarded", schedule=SCHEDULE)
    row.reason = "guard it"
    row.full_clean()
    if mark is not None:
        row.set_marks({mark.tag: mark})
    row.save()
    ReleasePolicy.objects.filter(pk=row.pk).update(effective_from=SINCE)
    return row


def paused_at_25(clock: FakeClock) -> Mark:
    return Mark("v0.5.0", 25, True, clock.now_ms(), Health(250, 12))


def at(clock: FakeClock, hours: float) -> None:
    assert NEW.published_at is not None
    clock.set_ms(datetime_to_ms(NEW.published_at + timedelta(hours=hours)))


def control(app_key: str) -> ReleaseControl:
    made = ReleaseControl(app_key=app_key, action="hold", tag="v9.0.0", reason="held")
    made.full_clean()
    made.save()
    return made


def rollout(client: Client) -> tuple[str, int] | None:
    return served(client.get(RELEASE_INFO_URL).content).rollout


def test_the_controls_list_and_a_control_of_the_app_show_the_pause(
    host: Path, clock: FakeClock, admin_client: Client
):
    at(clock, 1.5)
    guarded(paused_at_25(clock))
    ours, other = control("photocraft"), control("artcraft")
    for page in (f"{CONTROLS}/", f"{CONTROLS}/{ours.pk}/change/", f"{ADMIN}/"):
        text = admin_client.get(page).content.decode()
        assert BANNER in text and "12 of 250 installs failing (4.8 %), over 2 %" in text, page
    assert BANNER not in admin_client.get(f"{CONTROLS}/{other.pk}/change/").content.decode()


def test_no_banner_while_the_guard_lets_it_move_on(host: Path, clock: FakeClock, admin_client: Client):
    at(clock, 1.5)
    guarded(Mark("v0.5.0", 25, False, clock.now_ms(), Health(250, 1)))
    ours = control("photocraft")
    for page in (f"{CONTROLS}/", f"{CONTROLS}/{ours.pk}/change/"):
        assert "paused itself" not in admin_client.get(page).content.decode()


def test_taking_over_a_paused_guarded_rollout_keeps_it_paused_where_it_stood(
    host: Path, clock: FakeClock, admin_client: Client
):
    at(clock, 1.5)
    row = guarded(paused_at_25(clock))
    assert rollout(admin_client) == ("v0.5.0", 25)
    admin_client.post(f"{ADMIN}/", {"action": "take_over", "_selected_action": [row.pk]})
    made = ReleaseControl.objects.get(action="rollout")
    assert (made.tag, made.channel, made.percentage, made.paused) == ("v0.5.0", "stable", 25, True)
    assert made.schedule.splitlines() == ["2026-10-01T12:00:00Z 100"]
    assert "Taken over from the guarded policy at 25 %, paused by its guard" in made.reason
    at(clock, 30)
    assert rollout(admin_client) == ("v0.5.0", 25), "paused: the later step waits for the operator"


def test_taking_over_a_moving_guarded_rollout_follows_its_later_steps(
    host: Path, clock: FakeClock, admin_client: Client
):
    at(clock, 0.5)
    row = guarded()
    assert rollout(admin_client) == ("v0.5.0", 5)
    admin_client.post(f"{ADMIN}/", {"action": "take_over", "_selected_action": [row.pk]})
    made = ReleaseControl.objects.get(action="rollout")
    assert (made.percentage, made.paused) == (5, False)
    assert made.schedule.splitlines() == ["2026-10-01T11:00:00Z 25", "2026-10-01T12:00:00Z 100"]
    assert rollout(admin_client) == ("v0.5.0", 5)
    at(clock, 1.5)
    assert rollout(admin_client) == ("v0.5.0", 25), "the operator's rollout: no health gate"
