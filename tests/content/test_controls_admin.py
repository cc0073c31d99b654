"""The release controls' admin through Django's test client, on a state file of the test's own:
the model's permissions, each bad control refused with what to change, a tag the host knows no
release of saved with a warning naming the ones it knows, a good one saved with who and why (in
the admin's log too), the list's percentage now, what each channel serves now, and the pause
and resume actions."""

from __future__ import annotations

import html
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed, read_version
from craft_apps.content.models import ReleaseControl
from craft_apps.host.schema import DB_FILENAME
from tests.content.controls_support import BAD_TAGS, control, publish_host
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


def test_a_tag_not_published_yet_is_saved_with_a_warning_naming_the_tags_the_host_knows(
    admin_client: Client,
):
    """Not a refusal: a rollout prepared for a release not published yet is kept (applied the
    moment it appears); the warning shows a typo, for every app, with or without a release list."""
    response = admin_client.post(f"{ADMIN}/add/", form(tag="v0.6.1"), follow=True)
    assert response.status_code == 200
    assert (
        # The admin's message list capitalises the first letter.
        "Photocraft has no release tagged v0.6.1 that this host knows (it knows v0.5.0, v0.4.0): "
        "the control is kept, and applied the moment the release appears." in text(response)
    )
    assert ReleaseControl.objects.get().tag == "v0.6.1"
    other = admin_client.post(
        f"{ADMIN}/add/",
        form(app_key="artcraft-launcher", action="hold", tag="v0.9.0", percentage=""),
        follow=True,
    )
    assert "Artcraft-launcher has no release tagged v0.9.0 that this host knows" in text(other)
    assert ReleaseControl.objects.filter(app_key="artcraft-launcher", tag="v0.9.0").exists()


def test_a_known_tag_is_saved_without_a_warning(admin_client: Client):
    response = admin_client.post(f"{ADMIN}/add/", form(tag="v0.5.0"), follow=True)
    assert "was added successfully" in text(response)
    assert "that this host knows" not in text(response)


def test_a_state_file_never_read_skips_the_comparison_and_says_so(admin_client: Client, host: Path):
    (host / DB_FILENAME).write_bytes(b"not a database" * 100)
    response = admin_client.post(f"{ADMIN}/add/", form(tag="v9.9.9"), follow=True)
    assert response.status_code == 200
    assert "the tag wasn't compared with the releases this host knows" in text(response)
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
    assert '<select name="app_key"' in text(client.get(f"{ADMIN}/add/"))
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


def test_a_control_whose_release_is_gone_stays_editable(admin_client: Client):
    hold = control(action="hold", tag="v0.3.0")  # its release deleted on GitHub since
    url = f"{ADMIN}/{hold.pk}/change/"
    edited = form(action="hold", tag="v0.3.0", percentage="", reason="Still.")
    kept = admin_client.post(url, edited, follow=True)
    assert kept.status_code == 200
    assert ReleaseControl.objects.get().reason == "Still."
    assert "Photocraft has no release tagged v0.3.0 that this host knows" in text(kept)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        # artcraft-launcher: the host has no list of its tags, so only the tag rule can refuse.
        *(
            ({"app_key": "artcraft-launcher", "action": "yank", "tag": tag, "percentage": ""}, said)
            for tag, said in BAD_TAGS.items()
        ),
        ({"percentage": "12.7"}, "Enter a whole number."),
        ({"percentage": "true"}, "Enter a whole number."),
        ({"reason": "  \n "}, "This field is required."),
    ],
    ids=ascii,
)
def test_the_admin_refuses_what_the_import_refuses(
    admin_client: Client, fields: dict[str, str], message: str
):
    """The values the import refuses (``test_controls_transfer``): a tag git refuses (ESC and
    BEL were taken), a percentage that isn't a whole number, a reason of only spaces."""
    before = (ReleaseControl.objects.count(), read_version("default"))
    response = admin_client.post(f"{ADMIN}/add/", form(**fields))
    assert response.status_code == 200
    assert message in text(response)
    assert (ReleaseControl.objects.count(), read_version("default")) == before, "nothing written"


def test_a_pause_is_never_later_than_when_it_is_made(admin_client: Client):
    """The admin's form has no ``paused_at``: it sets it when a rollout is paused, so the rule
    the import applies to it (not in the future) holds here by construction; a control a
    program hands one in the future is refused by the model all the same."""
    response = admin_client.post(f"{ADMIN}/add/", form(paused="on"))
    assert response.status_code == 302, text(response)
    saved = ReleaseControl.objects.get()
    assert saved.paused_at is not None and saved.paused_at <= timezone.now()
    saved.paused_at = timezone.now() + timedelta(days=1)
    with pytest.raises(ValidationError) as refused:
        saved.full_clean()
    assert "is later than now" in " ".join(refused.value.message_dict["paused_at"])


def test_the_app_is_chosen_from_the_configured_apps_and_the_tag_offers_the_known_ones(
    admin_client: Client,
):
    page = text(admin_client.get(f"{ADMIN}/add/"))
    select = page[
        page.index('<select name="app_key"') : page.index("</select>", page.index('name="app_key"'))
    ]
    assert 'value="photocraft"' in select and 'value="artcraft-launcher"' in select
    assert (
        '<datalist id="craft-apps-tags-photocraft"><option value="v0.5.0"></option><option value="v0.4.0">'
        in page
    )
    assert '<datalist id="craft-apps-tags-artcraft-launcher"><option value="v1.0.0">' in page


def test_a_row_whose_key_no_configured_app_has_stays_editable(admin_client: Client):
    kept = control(app_key="inkcraft", action="hold", tag="v2.0.0")
    url = f"{ADMIN}/{kept.pk}/change/"
    page = text(admin_client.get(url))
    assert '<option value="inkcraft" selected>inkcraft (no configured app has this key' in page
    edited = form(app_key="inkcraft", action="hold", tag="v2.0.0", percentage="", reason="Until it ships.")
    assert admin_client.post(url, edited).status_code == 302
    assert ReleaseControl.objects.get().reason == "Until it ships."


def test_the_change_page_starts_with_what_is_served_now(admin_client: Client):
    rollout = control(action="rollout", percentage=25)
    page = text(admin_client.get(f"{ADMIN}/{rollout.pk}/change/"))
    assert page.index("Served now on this host") < page.index('name="app_key"')


def test_the_list_shows_the_reason_and_who_changed_it(admin_client: Client):
    control(reason="x" * 300, changed_by="on-call")
    control(action="hold", tag="v0.6.1", channel="beta")
    page = text(admin_client.get(f"{ADMIN}/"))
    assert "v0.6.1<br><small>waiting for its release</small>" in page
    assert page.count("waiting for its release") == 1, "v0.5.0 is known"
    assert f'title="{"x" * 300}">{"x" * 119}…</span>' in page
    assert 'on-call<br><span style="white-space: nowrap">' in page


def test_the_admin_index_names_the_section_as_the_docs_do(admin_client: Client):
    page = text(admin_client.get("/admin/"))
    assert ">Craft apps<" in page and "Release controls" in page
