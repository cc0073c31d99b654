"""The channel setting: its validation (the admin's and the import's), the version bump of
every write, the feed serving it with the notices and keeping it while the database can't be
read, the admin's page, and the poller's bounded read (``HistoryApps``)."""

from __future__ import annotations

import logging
import threading
import warnings

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from craft_apps.content import channels
from craft_apps.content.channels import HistoryApps
from craft_apps.content.feed import NoticesFeed, read_version
from craft_apps.content.models import AppChannel
from craft_apps.kernel.domain import Channel
from tests.content.support import Monotonic, database_unreachable

pytestmark = pytest.mark.django_db


def test_every_write_bumps_the_version():
    versions = [read_version("default")]
    row = AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    versions.append(read_version("default"))
    row.channels = []
    row.save()
    versions.append(read_version("default"))
    AppChannel.objects.update(channels=["beta"])
    versions.append(read_version("default"))
    row.delete()
    versions.append(read_version("default"))
    assert len(set(versions)) == len(versions), versions


@pytest.mark.parametrize(
    ("key", "field"),
    [("", "app_key"), ("photo craft", "app_key"), ("x" * 65, "app_key"), ("photo\x00", "app_key")],
)
def test_a_bad_key_is_refused_with_what_to_fix(key: str, field: str):
    with pytest.raises(ValidationError) as refused:
        AppChannel(app_key=key, channels=["beta"]).full_clean()
    assert field in refused.value.message_dict


@pytest.mark.parametrize(
    ("channels", "message"),
    [
        (["gamma"], "No channel is named 'gamma'; the channels are beta."),
        (["stable"], "No channel is named 'stable'; the channels are beta."),
        (["beta", "beta"], "Name each channel once."),
        ([7], "No channel is named 7; the channels are beta."),
        ("beta", "Write a list of channel names (beta), not 'beta'."),
        (None, "Write a list of channel names (beta), not null."),
    ],
)
def test_the_channels_are_a_list_of_names_each_once(channels: object, message: str):
    """A channel is named as ``domain.Channel`` names it; stable is every app's already."""
    with pytest.raises(ValidationError) as refused:
        AppChannel(app_key="photocraft", channels=channels).full_clean()
    assert refused.value.message_dict == {"channels": [message]}


def test_an_app_on_no_channel_beyond_stable_is_valid_and_reads_so():
    row = AppChannel(app_key="photocraft")
    row.full_clean()
    assert row.channels == [] and row.served_channels() == () and str(row) == "photocraft: stable only"
    row.channels = ["beta"]
    assert row.serves(Channel.BETA) and row.serves(Channel.STABLE) and str(row) == "photocraft: beta"


def test_a_key_is_kept_lowercase_and_once():
    AppChannel.objects.create(app_key="PhotoCraft", channels=["beta"])
    assert AppChannel.objects.get().app_key == "photocraft"
    with pytest.raises(ValidationError) as refused:
        AppChannel(app_key="PHOTOCRAFT").full_clean()
    assert "app_key" in refused.value.message_dict


@pytest.mark.django_db(transaction=True)
def test_the_feed_serves_the_setting_and_keeps_it_while_the_database_cant_be_read(caplog):
    monotonic = Monotonic()
    feed = NoticesFeed(monotonic=monotonic, runner=lambda look: look())
    assert feed.channel_apps().apps_on(Channel.BETA) == frozenset()
    row = AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    AppChannel.objects.create(app_key="paintcraft", channels=[])
    feed.current()
    assert feed.channel_apps().apps_on(Channel.BETA) == {"photocraft"}
    row.channels = []
    row.save()
    feed.current()
    assert feed.channel_apps().apps_on(Channel.BETA) == {"photocraft"}, "within the second, the kept setting"
    monotonic.advance(1.0)
    feed.current()
    assert feed.channel_apps().apps_on(Channel.BETA) == frozenset(), "then the edit"
    row.channels = ["beta"]
    row.save()
    monotonic.advance(1.0)
    feed.current()
    assert feed.channel_apps().apps_on(Channel.BETA) == {"photocraft"}
    with caplog.at_level(logging.WARNING), database_unreachable():
        monotonic.advance(1.0)
        feed.current()
        assert feed.channel_apps().apps_on(Channel.BETA) == {"photocraft"}, (
            "the database can't be read: the last setting"
        )
    assert "the database can't be read" in caplog.text
    AppChannel.objects.update(channels=["beta"])  # an edit after: it shows
    monotonic.advance(1.0)
    feed.current()
    assert feed.channel_apps().apps_on(Channel.BETA) == {"photocraft", "paintcraft"}


def test_the_admin_lists_edits_and_says_whether_the_key_is_configured(
    client: Client, django_user_model, settings
):
    settings.CRAFT_APPS = {"APPS": "photocraft=PhotoCraft=storytold/photocraft"}
    client.force_login(django_user_model.objects.create(username="op", is_staff=True, is_superuser=True))
    before = read_version("default")
    response = client.post("/admin/craft_apps/appchannel/add/", {"app_key": "photocraft", "channels": "beta"})
    assert response.status_code == 302, response.content.decode()
    assert AppChannel.objects.get().channels == ["beta"]
    assert read_version("default") != before
    AppChannel.objects.create(app_key="gonecraft")
    page = client.get("/admin/craft_apps/appchannel/").content.decode()
    assert "PhotoCraft" in page and "no configured app has this key" in page
    refused = client.post("/admin/craft_apps/appchannel/add/", {"app_key": "photo craft"})
    assert (
        refused.status_code == 200
        and "Write the app&#x27;s key as the APPS setting names it" in refused.content.decode()
    )
    ids = [str(pk) for pk in AppChannel.objects.values_list("pk", flat=True)]
    on_beta = client.get("/admin/craft_apps/appchannel/?channel=beta").content.decode()
    assert "PhotoCraft" in page and "gonecraft" in page
    assert "photocraft" in on_beta and "gonecraft" not in on_beta, "the list filter: apps on beta"
    client.post("/admin/craft_apps/appchannel/", {"action": "beta_off", "_selected_action": ids})
    assert [row.channels for row in AppChannel.objects.all()] == [[], []]
    client.post("/admin/craft_apps/appchannel/", {"action": "beta_on", "_selected_action": ids})
    assert [row.channels for row in AppChannel.objects.all()] == [["beta"], ["beta"]]


def test_the_channel_actions_are_on_the_list_alone_and_django_warns_of_nothing(
    client: Client, django_user_model, settings
):
    """Django 6.1 asks for a page's actions by its place and warns when get_actions can't
    take it; the change form has no list to act on."""
    settings.CRAFT_APPS = {"APPS": "photocraft=PhotoCraft=storytold/photocraft"}
    client.force_login(django_user_model.objects.create(username="op", is_staff=True, is_superuser=True))
    row = AppChannel.objects.create(app_key="photocraft")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Overriding get_actions")
        listed = client.get("/admin/craft_apps/appchannel/").content.decode()
        form = client.get(f"/admin/craft_apps/appchannel/{row.pk}/change/").content.decode()
    assert 'value="beta_on"' in listed and 'value="beta_off"' in listed
    assert "beta_on" not in form


def test_the_pollers_read_is_bounded_and_keeps_the_last_set(monkeypatch, caplog):
    monotonic = Monotonic()
    history = HistoryApps(bound_s=0.05, monotonic=monotonic)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    monkeypatch.setattr(channels, "read_history_needs", lambda: {"photocraft": 1})
    assert history() == {"photocraft"}
    release = threading.Event()

    def hanging() -> dict[str, int]:
        release.wait(10)
        return {"late": 1}

    monkeypatch.setattr(channels, "read_history_needs", hanging)
    assert history() == {"photocraft"}, "read less than a second ago: no read"
    with caplog.at_level(logging.INFO, logger="craft_apps.content.channels"):
        monotonic.advance(1.0)
        assert history() == {"photocraft"}, "the read hangs: the last set, within the bound"
        monotonic.advance(1.0)
        assert history() == {"photocraft"}, "still hanging: not read twice, not logged twice"
        release.set()
        history._reading.join(10)  # type: ignore[union-attr]
        monotonic.advance(1.0)
        monkeypatch.setattr(channels, "read_history_needs", lambda: {"photocraft": 1, "new": 2})
        assert history() == {"photocraft", "new"}
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.channels"]
    assert len(lines) == 2, lines
    assert (
        "can't be read (no answer within 0.05 s); polling on with the last 1 apps that need history"
        in lines[0]
    )
    assert lines[1] == "Craft apps channels: the database is readable again"


@pytest.mark.django_db(transaction=True)
def test_the_pollers_read_of_a_broken_database_logs_once(caplog):
    monotonic = Monotonic()
    history = HistoryApps(monotonic=monotonic)
    with caplog.at_level(logging.WARNING, logger="craft_apps.content.channels"), database_unreachable():
        for _ in range(3):
            monotonic.advance(1.0)
            assert history() == frozenset()
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.channels"]
    assert len(lines) == 1 and "OperationalError" in lines[0] and "\n" not in lines[0], lines


def test_the_apps_that_need_history_are_those_on_beta_and_those_with_a_control() -> None:
    from craft_apps.content.models import ReleaseControl

    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    AppChannel.objects.create(app_key="vectorcraft", channels=[])
    ReleaseControl.objects.create(app_key="pdfcraft", action="yank", tag="v1.0.0", reason="broken")
    assert channels.read_history_apps() == {"photocraft", "pdfcraft"}


@pytest.mark.django_db(transaction=True)
def test_the_pollers_read_takes_the_release_controls_too():
    from craft_apps.content.models import ReleaseControl
    from craft_apps.controls.rules import YANK, Control

    monotonic = Monotonic()
    needs = HistoryApps(monotonic=monotonic)
    assert needs.controls() is None, "before a read: unknown, not none"
    ReleaseControl.objects.create(app_key="photocraft", action=YANK, tag="v0.5.0", reason="Loses layers.")
    assert needs() == {"photocraft"}
    assert needs.controls() == (Control("photocraft", YANK, "v0.5.0"),)
    with database_unreachable():
        monotonic.advance(1.0)
        assert needs() == {"photocraft"}
    assert needs.controls() == (Control("photocraft", YANK, "v0.5.0"),), "a failed read keeps the last"
