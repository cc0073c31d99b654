"""The release policies' admin through Django's test client, on a state file of the test's own:
the model's permissions, a bad schedule refused with what to change, a save with who and why
(in the admin's log too), the list's waiting releases with their next step, and the actions:
approve, approve as a staged rollout, take over a staged rollout."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.test import Client

from craft_apps.api.runtime import runtime
from craft_apps.content.feed import read_version
from craft_apps.content.models import ReleaseControl
from craft_apps.content.policy_models import ReleasePolicy
from tests.content.policy_site import (  # noqa: F401 (fixtures)
    ADMIN,
    SINCE,
    admin_client_fixture,
    clock_fixture,
    fake_now_fixture,
    host_fixture,
)

pytestmark = pytest.mark.django_db


def policy(kind: str, schedule: str = "+0h 5, +24h 25, +72h 100") -> ReleasePolicy:
    made = ReleasePolicy(
        app_key="photocraft", channel="stable", policy=kind, schedule=schedule, reason="Brakes first."
    )
    made.full_clean()
    made.save()
    ReleasePolicy.objects.filter(pk=made.pk).update(effective_from=SINCE)
    made.refresh_from_db()
    return made


def served() -> tuple[str | None, tuple[str, int] | None]:
    app = runtime().answers.answer("stable").release_info.apps["photocraft"]
    rollout = None if app.rollout is None else (app.rollout.release.tag, app.rollout.percentage)
    return (None if app.latest_release is None else app.latest_release.tag), rollout


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_a_staff_user_without_the_models_permissions_gets_403_and_no_link(
    client: Client, django_user_model, host
):
    staff = django_user_model.objects.create(username="staff", is_staff=True)
    client.force_login(staff)
    assert client.get(f"{ADMIN}/").status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_releasepolicy"))
    assert client.get(f"{ADMIN}/").status_code == 200
    assert client.post(f"{ADMIN}/add/", {}).status_code == 403


def test_the_app_is_chosen_from_the_configured_apps(admin_client: Client):
    page = text(admin_client.get(f"{ADMIN}/add/"))
    assert '<select name="app_key"' in page and '<option value="photocraft">photocraft (PhotoCraft)' in page


def test_a_bad_schedule_is_refused_with_what_to_change(admin_client: Client):
    before = read_version("default")
    fields = {"app_key": "photocraft", "channel": "stable", "policy": "staged", "reason": "Brakes."}
    response = admin_client.post(f"{ADMIN}/add/", {**fields, "schedule": "+24h 25, +0h 50"})
    assert response.status_code == 200
    assert "each step comes later than the one before" in text(response)
    assert read_version("default") == before and not ReleasePolicy.objects.exists()
    response = admin_client.post(f"{ADMIN}/add/", {**fields, "schedule": "+0h 5", "reason": ""})
    assert "This field is required." in text(response)


def test_a_good_policy_saves_with_who_and_why_and_a_second_one_on_the_channel_is_refused(
    admin_client: Client,
):
    fields = {"app_key": "PhotoCraft", "channel": "stable", "policy": "staged", "reason": "Brakes first."}
    response = admin_client.post(f"{ADMIN}/add/", {**fields, "schedule": "+0h 5,+1d 25"})
    assert response.status_code == 302
    saved = ReleasePolicy.objects.get()
    assert (saved.app_key, saved.schedule, saved.changed_by) == ("photocraft", "+0h 5, +1d 25", "operator")
    assert saved.effective_from is not None, "took effect when saved"
    entry = LogEntry.objects.get()
    assert entry.get_change_message().endswith("Reason: Brakes first.")
    again = admin_client.post(f"{ADMIN}/add/", {**fields, "schedule": "+0h 5"})
    assert again.status_code == 200 and ReleasePolicy.objects.count() == 1


def test_the_list_shows_each_waiting_release_with_its_next_step(admin_client: Client, fake_now):
    policy("staged")
    fake_now(SINCE + timedelta(hours=11))
    page = text(admin_client.get(f"{ADMIN}/"))
    assert "v0.5.0: staged at 5 %, 25 % from 2026-10-02T10:00:00Z" in page
    assert served() == ("v0.4.0", ("v0.5.0", 5))


def test_approve_serves_the_release_and_logs_the_reason(admin_client: Client, fake_now):
    row = policy("approval")
    fake_now(SINCE + timedelta(hours=11))
    assert "v0.5.0: waits for an approval" in text(admin_client.get(f"{ADMIN}/"))
    assert served() == ("v0.4.0", None)
    response = admin_client.post(
        f"{ADMIN}/", {"action": "approve", "_selected_action": [row.pk]}, follow=True
    )
    assert "Approved photocraft v0.5.0 on stable" in text(response)
    row.refresh_from_db()
    assert row.approved_tags() == ["v0.5.0"] and row.changed_by == "operator"
    entry = LogEntry.objects.get(action_flag=CHANGE)
    assert entry.get_change_message() == "Approved v0.5.0 with the list's action. Reason: Brakes first."
    assert served() == ("v0.5.0", None)


def test_approve_as_staged_makes_a_hand_made_rollout_from_now(admin_client: Client, fake_now):
    row = policy("approval")
    fake_now(SINCE + timedelta(hours=11))
    admin_client.post(f"{ADMIN}/", {"action": "approve_staged", "_selected_action": [row.pk]})
    made = ReleaseControl.objects.get()
    assert (made.action, made.tag, made.channel, made.changed_by) == (
        "rollout",
        "v0.5.0",
        "stable",
        "operator",
    )
    assert made.schedule.splitlines()[0] == "2026-10-01T11:00:00Z 5"
    assert served() == ("v0.4.0", ("v0.5.0", 5))


def test_taking_over_changes_nothing_served_until_the_rollout_is_edited(admin_client: Client, fake_now):
    row = policy("staged")
    fake_now(SINCE + timedelta(hours=40))
    assert served() == ("v0.4.0", ("v0.5.0", 25))
    admin_client.post(f"{ADMIN}/", {"action": "take_over", "_selected_action": [row.pk]})
    made = ReleaseControl.objects.get()
    assert made.schedule.splitlines() == [
        "2026-10-01T10:00:00Z 5",
        "2026-10-02T10:00:00Z 25",
        "2026-10-04T10:00:00Z 100",
    ]
    assert served() == ("v0.4.0", ("v0.5.0", 25))
    made.paused, made.paused_at = True, SINCE + timedelta(hours=40)  # as the admin, on the test's clock
    made.save()
    fake_now(SINCE + timedelta(days=10))
    assert served() == ("v0.4.0", ("v0.5.0", 25)), "paused where it stood, the policy no longer moves it"
