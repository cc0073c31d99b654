"""The endpoint with renames and notices: the contract's shape, the ETag following an edit, no
database query per request, and the releases still served when the database is down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from craft_apps.api.runtime import runtime
from craft_apps.content.feed import NoticesFeed
from craft_apps.kernel.domain import AppState
from tests.content.support import (
    Monotonic,
    ago,
    alert,
    announcement,
    app_rename,
    database_unreachable,
    repo_rename,
)
from tests.support import RELEASE_INFO_URL as URL
from tests.support import publish

FETCHED_MS = 1_790_000_000_000

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(state_dir: Path, settings, feed: NoticesFeed, monkeypatch) -> Path:
    monkeypatch.setattr(runtime().answers, "recheck_s", 0.0)  # the state file on every request
    settings.CRAFT_APPS = {"APPS": "photocraft=PhotoCraft=storytold/photocraft", "STATE_DIR": str(state_dir)}
    publish(state_dir, {"photocraft": AppState(fetched_ms=FETCHED_MS)})
    return state_dir


def body(client: Client) -> Any:
    return json.loads(client.get(URL).content)


def test_renames_and_notices_in_the_contracts_shape(site: Path, client: Client):
    app_rename()
    repo_rename()
    announcement(created_at=None)
    alert(maybe_web_link="")
    alert(title="Newest", visible_from=ago(5), body="b", maybe_web_link="https://example.com/a?b=1")
    answer = body(client)
    assert answer["success"] is True
    assert answer["release_info"]["apps"]["photocraft"]["app_last_fetched"] == "2026-09-21T14:13:20Z"
    assert {key: answer[key] for key in ("app_renames", "repo_renames", "important_notices")} == {
        "app_renames": [
            {
                "old_name": "PdfCraft",
                "old_name_lower": "pdfcraft",
                "new_name": "DocuCraft",
                "new_name_lower": "docucraft",
                "description": "PdfCraft is now DocuCraft: same app, new name.",
                "renamed_at": "2026-09-01T08:00:00.250Z",
            }
        ],
        "repo_renames": [
            {"old_name": "storytold/pdfcraft", "new_name": "storytold/docucraft", "renamed_at": None}
        ],
        "important_notices": {
            "announcements": [{"title": "FilmCraft 2 is out", "body": "Faster exports.", "created_at": None}],
            "alerts": [
                {
                    "title": "Newest",
                    "body": "b",
                    "maybe_web_link": "https://example.com/a?b=1",
                    "created_at": "2026-09-20T10:30:00Z",
                },
                {
                    "title": "PhotoCraft 0.5.0 may lose layers",
                    "body": "Update to 0.5.1 before saving.",
                    "maybe_web_link": None,
                    "created_at": "2026-09-20T10:30:00Z",
                },
            ],
        },
    }


def test_an_edit_changes_the_etag_so_launchers_revalidate_with_changes(
    site: Path, client: Client, monotonic: Monotonic
):
    item = alert()
    first = client.get(URL)
    assert client.get(URL, headers={"If-None-Match": first["ETag"]}).status_code == 304
    item.body = "Update to 0.5.2 instead."
    item.save()
    monotonic.advance(1.0)
    after = client.get(URL, headers={"If-None-Match": first["ETag"]})
    assert after.status_code == 200
    assert after["ETag"] != first["ETag"]
    assert b"Update to 0.5.2 instead." in after.content


def test_requests_between_looks_query_no_database(
    site: Path, client: Client, monotonic: Monotonic, django_assert_num_queries
):
    alert()
    client.get(URL)
    with django_assert_num_queries(0):
        for _ in range(50):
            monotonic.advance(0.019)
            assert client.get(URL).status_code == 200
    monotonic.advance(0.1)
    with django_assert_num_queries(1):
        assert client.get(URL).status_code == 200


def test_a_state_file_that_cant_be_read_still_carries_the_notices(
    state_dir: Path, settings, feed: NoticesFeed, client: Client
):
    settings.CRAFT_APPS = {"APPS": "photocraft=PhotoCraft=storytold/photocraft", "STATE_DIR": str(state_dir)}
    state_dir.mkdir(mode=0o700)
    (state_dir / "craft_apps_state.sqlite3").write_bytes(b"not a database" * 100)
    alert()
    answer = body(client)
    assert answer["release_info"]["last_fetched"] is None
    assert len(answer["important_notices"]["alerts"]) == 1


@pytest.mark.django_db(transaction=True)
def test_with_the_database_down_the_releases_come_with_the_last_notices(
    site: Path, client: Client, monotonic: Monotonic
):
    alert()
    good = client.get(URL)
    with database_unreachable():
        publish(site, {"photocraft": AppState(fetched_ms=FETCHED_MS + 1000)})
        monotonic.advance(1.0)
        during = client.get(URL)
    assert during.status_code == 200
    answer = json.loads(during.content)
    assert answer["release_info"]["last_fetched"] == "2026-09-21T14:13:21Z", "the new release info shows"
    assert answer["important_notices"] == json.loads(good.content)["important_notices"]


def test_the_answers_reuse_window_counts_from_the_end_of_its_look(
    site: Path, feed: NoticesFeed, monkeypatch, install_runtime
):
    clock = Monotonic()
    looks: list[float] = []
    current = feed.current

    def slow_current() -> Any:  # a look that takes 2 s, as a slow disk or database can
        looks.append(clock())
        clock.advance(2.0)
        return current()

    monkeypatch.setattr(feed, "current", slow_current)
    cache = install_runtime(monotonic=clock, feed=feed).answers
    first = cache.answer()
    assert cache.answer() is first
    assert len(looks) == 1, "the request after a slow look reuses its answer"
    clock.advance(cache.recheck_s)
    cache.answer()
    assert len(looks) == 2
