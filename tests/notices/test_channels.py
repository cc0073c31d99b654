"""The channel setting: its validation (the admin's and the import's), the version bump of
every write, the feed serving it with the notices and keeping it while the database can't be
read, the admin's page, and the poller's bounded read (``HistoryApps``)."""

from __future__ import annotations

import logging
import threading

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from craft_apps.notices import channels
from craft_apps.notices.channels import HistoryApps
from craft_apps.notices.feed import NoticesFeed, read_version
from craft_apps.notices.models import AppChannel
from tests.notices.support import Monotonic, database_unreachable

pytestmark = pytest.mark.django_db


def test_every_write_bumps_the_version():
    versions = [read_version("default")]
    row = AppChannel.objects.create(app_key="photocraft", beta=True)
    versions.append(read_version("default"))
    row.beta = False
    row.save()
    versions.append(read_version("default"))
    AppChannel.objects.update(beta=True)
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
        AppChannel(app_key=key, beta=True).full_clean()
    assert field in refused.value.message_dict


def test_a_key_is_kept_lowercase_and_once():
    AppChannel.objects.create(app_key="PhotoCraft", beta=True)
    assert AppChannel.objects.get().app_key == "photocraft"
    with pytest.raises(ValidationError) as refused:
        AppChannel(app_key="PHOTOCRAFT").full_clean()
    assert "app_key" in refused.value.message_dict


@pytest.mark.django_db(transaction=True)
def test_the_feed_serves_the_setting_and_keeps_it_while_the_database_cant_be_read(caplog):
    monotonic = Monotonic()
    feed = NoticesFeed(monotonic=monotonic, runner=lambda look: look())
    assert feed.beta_apps() == frozenset()
    row = AppChannel.objects.create(app_key="photocraft", beta=True)
    AppChannel.objects.create(app_key="paintcraft", beta=False)
    feed.current()
    assert feed.beta_apps() == {"photocraft"}
    row.beta = False
    row.save()
    feed.current()
    assert feed.beta_apps() == {"photocraft"}, "within the second, the kept setting"
    monotonic.advance(1.0)
    feed.current()
    assert feed.beta_apps() == frozenset(), "then the edit"
    row.beta = True
    row.save()
    monotonic.advance(1.0)
    feed.current()
    assert feed.beta_apps() == {"photocraft"}
    with caplog.at_level(logging.WARNING), database_unreachable():
        monotonic.advance(1.0)
        feed.current()
        assert feed.beta_apps() == {"photocraft"}, "the database can't be read: the last setting"
    assert "the database can't be read" in caplog.text
    AppChannel.objects.update(beta=True)  # an edit after: it shows
    monotonic.advance(1.0)
    feed.current()
    assert feed.beta_apps() == {"photocraft", "paintcraft"}


def test_the_admin_lists_edits_and_says_whether_the_key_is_configured(
    client: Client, django_user_model, settings
):
    settings.CRAFT_APPS = {"APPS": "photocraft=PhotoCraft=storytold/photocraft"}
    client.force_login(django_user_model.objects.create(username="op", is_staff=True, is_superuser=True))
    before = read_version("default")
    response = client.post("/admin/craft_apps/appchannel/add/", {"app_key": "photocraft", "beta": "on"})
    assert response.status_code == 302, response.content.decode()
    assert AppChannel.objects.get().beta is True
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
    client.post("/admin/craft_apps/appchannel/", {"action": "beta_off", "_selected_action": ids})
    assert not AppChannel.objects.filter(beta=True).exists()


def test_the_pollers_read_is_bounded_and_keeps_the_last_set(monkeypatch, caplog):
    monotonic = Monotonic()
    beta = HistoryApps(bound_s=0.05, monotonic=monotonic)
    AppChannel.objects.create(app_key="photocraft", beta=True)
    monkeypatch.setattr(channels, "read_history_needs", lambda: {"photocraft": 1})
    assert beta() == {"photocraft"}
    release = threading.Event()

    def hanging() -> dict[str, int]:
        release.wait(10)
        return {"late": 1}

    monkeypatch.setattr(channels, "read_history_needs", hanging)
    assert beta() == {"photocraft"}, "read less than a second ago: no read"
    with caplog.at_level(logging.INFO, logger="craft_apps.notices.channels"):
        monotonic.advance(1.0)
        assert beta() == {"photocraft"}, "the read hangs: the last set, within the bound"
        monotonic.advance(1.0)
        assert beta() == {"photocraft"}, "still hanging: not read twice, not logged twice"
        release.set()
        beta._reading.join(10)  # type: ignore[union-attr]
        monotonic.advance(1.0)
        monkeypatch.setattr(channels, "read_history_needs", lambda: {"photocraft": 1, "new": 2})
        assert beta() == {"photocraft", "new"}
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.notices.channels"]
    assert len(lines) == 2, lines
    assert (
        "can't be read (no answer within 0.05 s); polling on with the last 1 apps that need history"
        in lines[0]
    )
    assert lines[1] == "Craft apps channels: the database is readable again"


@pytest.mark.django_db(transaction=True)
def test_the_pollers_read_of_a_broken_database_logs_once(caplog):
    monotonic = Monotonic()
    beta = HistoryApps(monotonic=monotonic)
    with caplog.at_level(logging.WARNING, logger="craft_apps.notices.channels"), database_unreachable():
        for _ in range(3):
            monotonic.advance(1.0)
            assert beta() == frozenset()
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.notices.channels"]
    assert len(lines) == 1 and "OperationalError" in lines[0] and "\n" not in lines[0], lines


def test_the_apps_that_need_history_are_those_on_beta_and_those_with_a_control() -> None:
    from craft_apps.notices.models import ReleaseControl

    AppChannel.objects.create(app_key="photocraft", beta=True)
    AppChannel.objects.create(app_key="vectorcraft", beta=False)
    ReleaseControl.objects.create(app_key="pdfcraft", action="yank", tag="v1.0.0", reason="broken")
    assert channels.read_history_apps() == {"photocraft", "pdfcraft"}


@pytest.mark.django_db(transaction=True)
def test_the_pollers_read_takes_the_release_controls_too():
    from craft_apps.controls import YANK, Control
    from craft_apps.notices.models import ReleaseControl

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
