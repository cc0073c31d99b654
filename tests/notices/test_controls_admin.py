"""The release controls' admin through Django's test client, on a state file of the test's own:
the model's permissions, each bad control refused with what to change (the tag checked against
the releases the host knows), a good one saved with who and why (in the admin's log too), the
list's percentage now, what each channel serves now, and the pause and resume actions."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.test import Client

from craft_apps.api.representation import Refiner
from craft_apps.host.schema import DB_FILENAME
from craft_apps.notices.feed import NoticesFeed, read_version
from craft_apps.notices.models import ReleaseControl
from tests.notices.controls_support import control, publish_host
from tests.support import apps_setting

pytestmark = pytest.mark.django_db

ADMIN = "/admin/craft_apps/releasecontrol"


@pytest.fixture
def host(state_dir: Path, settings, install_runtime) -> Path:
    """Two apps; photocraft fetched with its release list (v0.4.0, v0.5.0), artcraft-launcher
    fetched without one (its tags can't be checked). The runtime looks at the state file and
    the database on every request."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    publish_host(state_dir)
    return state_dir


@pytest.fixture
def admin_client(client: Client, django_user_model, host: Path) -> Client:
    operator = django_user_model.objects.create(username="operator", is_staff=True, is_superuser=True)
    client.force_login(operator)
    return client


def form(**fields: str) -> dict[str, str]:
    base = {
        "app_key": "photocraft",
        "action": "rollout",
        "tag": "v0.5.0",
        "channel": "",
        "percentage": "25",
        "schedule": "",
        "reason": "Crashes on start for some; watch the reports.",
    }
    return {**base, **fields}


def text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize(
    ("existing", "fields", "message"),
    [
        (
            {"action": "yank"},
            {"action": "hold", "percentage": ""},
            "v0.5.0 of photocraft is yanked: hold at another tag, or delete the yank first.",
        ),
        (None, {"percentage": "150"}, "Give a percentage from 0 to 100, not 150."),
        (None, {"percentage": "-5"}, "Give a percentage from 0 to 100, not -5."),
        (
            None,
            {"schedule": "2026-12-02T09:00Z 50\n2026-12-03T09:00Z 25"},
            "Line 2: the percentage goes back from 50 to 25; a schedule only goes up",
        ),
        (
            None,
            {"schedule": "2026-12-03T09:00Z 25\n2026-12-02T09:00Z 50"},
            "is not later than line 1's instant; list the steps in time order.",
        ),
        (
            None,
            {"action": "yank", "channel": "stable", "percentage": ""},
            "A yank applies on every channel: leave the channel empty.",
        ),
        (
            {"action": "hold", "tag": "v0.4.0", "channel": "stable"},
            {"action": "hold", "tag": "v0.5.0", "channel": "stable", "percentage": ""},
            "photocraft already has a hold on the stable channel (v0.4.0): change that one, or scope "
            "this one to another channel.",
        ),
        (
            None,
            {"tag": "v9.9.9"},
            "photocraft has no release tagged v9.9.9 that this host knows (it knows v0.4.0, v0.5.0); "
            "check the tag's spelling.",
        ),
        (None, {"reason": ""}, "This field is required."),
    ],
)
def test_a_bad_control_is_refused_with_what_to_change(
    admin_client: Client, existing: dict[str, object] | None, fields: dict[str, str], message: str
):
    if existing is not None:
        control(**existing)
    before = (ReleaseControl.objects.count(), read_version("default"))
    response = admin_client.post(f"{ADMIN}/add/", form(**fields))
    assert response.status_code == 200
    assert message in text(response)
    assert (ReleaseControl.objects.count(), read_version("default")) == before, "nothing written"


def test_a_good_control_saves_with_who_and_why_in_the_admins_log(admin_client: Client):
    before = read_version("default")
    response = admin_client.post(f"{ADMIN}/add/", form())
    assert response.status_code == 302, text(response)
    [saved] = ReleaseControl.objects.all()
    assert (saved.action, saved.tag, saved.percentage) == ("rollout", "v0.5.0", 25)
    assert saved.changed_by == "operator"
    assert read_version("default") != before
    [entry] = LogEntry.objects.filter(object_id=str(saved.pk))
    assert (entry.action_flag, entry.user.username) == (ADDITION, "operator")
    assert entry.get_change_message() == "Added. Reason: Crashes on start for some; watch the reports."

    edited = form(percentage="50", reason="No new reports.")
    changed = admin_client.post(f"{ADMIN}/{saved.pk}/change/", edited)
    assert changed.status_code == 302, text(changed)
    entry = LogEntry.objects.filter(object_id=str(saved.pk), action_flag=CHANGE).get()
    assert entry.get_change_message() == "Changed Percentage and Reason. Reason: No new reports."


def test_an_app_whose_release_list_this_host_never_fetched_keeps_its_tag(admin_client: Client):
    response = admin_client.post(
        f"{ADMIN}/add/", form(app_key="artcraft-launcher", action="hold", tag="v0.9.0", percentage="")
    )
    assert response.status_code == 302, text(response)
    assert ReleaseControl.objects.get().tag == "v0.9.0"


def test_an_unreadable_state_file_skips_the_tag_check_and_says_so(admin_client: Client, host: Path):
    (host / DB_FILENAME).write_bytes(b"not a database" * 100)
    response = admin_client.post(f"{ADMIN}/add/", form(tag="v9.9.9"), follow=True)
    assert response.status_code == 200
    assert "The tag wasn&#x27;t checked against the releases this host knows" in response.content.decode()
    assert ReleaseControl.objects.get().tag == "v9.9.9"


def test_only_users_with_the_models_permissions_see_the_controls(client: Client, django_user_model, host):
    staff = django_user_model.objects.create(username="staff", is_staff=True)
    client.force_login(staff)
    assert client.get(f"{ADMIN}/").status_code == 403
    assert client.post(f"{ADMIN}/add/", form()).status_code == 403
    assert "releasecontrol" not in client.get("/admin/").content.decode()
    assert not ReleaseControl.objects.exists()

    trusted = django_user_model.objects.create(username="release-manager", is_staff=True)
    trusted.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="craft_apps", codename__in=["view_releasecontrol", "add_releasecontrol"]
        )
    )
    client.force_login(trusted)
    assert client.get(f"{ADMIN}/").status_code == 200
    assert "Served now on this host" in text(client.get(f"{ADMIN}/add/"))
    assert client.post(f"{ADMIN}/add/", form()).status_code == 302
    assert ReleaseControl.objects.get().changed_by == "release-manager"
    saved = ReleaseControl.objects.get()
    deleting = client.post(f"{ADMIN}/{saved.pk}/delete/", {"post": "yes"})
    assert deleting.status_code == 403, "no delete permission"


def test_the_list_shows_each_rollouts_percentage_now(admin_client: Client):
    control(action="rollout", percentage=5, schedule="2020-01-01T00:00Z 40\n9999-01-01T00:00Z 60")
    control(action="hold", tag="v0.4.0", channel="beta")
    page = text(admin_client.get(f"{ADMIN}/"))
    assert "40 %" in page, "the step reached counts"
    assert "every channel" in page and "Loses layers on save." in page
    filtered = text(admin_client.get(f"{ADMIN}/", {"action__exact": "hold"}))
    assert "40 %" not in filtered[filtered.index('id="result_list"') :]


def test_the_page_shows_what_each_channel_serves_now_on_this_host(admin_client: Client):
    rollout = control(action="rollout", percentage=25, channel="stable")
    page = text(admin_client.get(f"{ADMIN}/{rollout.pk}/change/"))
    assert "Served now on this host" in page
    assert "stable: latest_release v0.4.0; rollout of v0.5.0 to 25 %" in page
    assert "beta: latest_release v0.5.0\n" in page or "beta: latest_release v0.5.0<" in page


def test_pause_and_resume_keep_the_reason_and_log_each_rollout(admin_client: Client):
    rollout = control(action="rollout", percentage=25, schedule="9999-01-01T00:00Z 60")
    hold = control(action="hold", tag="v0.4.0")
    selected = [str(rollout.pk), str(hold.pk)]
    before = read_version("default")
    response = admin_client.post(f"{ADMIN}/", {"action": "pause", "_selected_action": selected}, follow=True)
    assert "Paused 1 rollout(s); 1 not a rollout, left as it was." in text(response)
    rollout.refresh_from_db()
    assert rollout.paused and rollout.paused_at is not None and rollout.changed_by == "operator"
    assert read_version("default") != before
    [entry] = LogEntry.objects.filter(object_id=str(rollout.pk), action_flag=CHANGE)
    assert entry.get_change_message().endswith("Reason: Loses layers on save.")
    assert not ReleaseControl.objects.get(pk=hold.pk).paused

    admin_client.post(f"{ADMIN}/", {"action": "resume", "_selected_action": selected})
    resumed = ReleaseControl.objects.get(pk=rollout.pk)
    assert (resumed.paused, resumed.paused_at) == (False, None)
    assert LogEntry.objects.filter(object_id=str(rollout.pk), action_flag=CHANGE).count() == 2


def test_a_tag_the_control_already_had_is_not_checked_again(admin_client: Client):
    hold = control(action="hold", tag="v0.3.0")  # its release deleted on GitHub since
    url = f"{ADMIN}/{hold.pk}/change/"
    kept = admin_client.post(url, form(action="hold", tag="v0.3.0", percentage="", reason="Still."))
    assert kept.status_code == 302, text(kept)
    assert ReleaseControl.objects.get().reason == "Still."
    typo = admin_client.post(url, form(action="hold", tag="v0.3.1", percentage=""))
    assert "photocraft has no release tagged v0.3.1 that this host knows" in text(typo)
    assert ReleaseControl.objects.get().tag == "v0.3.0"
