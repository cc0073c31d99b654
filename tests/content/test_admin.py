"""The admin through Django's test client: lists, search, the visibility filter, the JSON
preview, adding, changing, validation messages and the publish actions."""

from __future__ import annotations

import html
import json
from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from craft_apps.content.feed import read_version
from craft_apps.content.models import Alert, AppRename, RepoRename
from tests.content.support import alert, app_rename, repo_rename

pytestmark = pytest.mark.django_db

ADMIN = "/admin/craft_apps"


@pytest.fixture
def admin_client(client: Client, django_user_model) -> Client:
    """A logged-in superuser, without hashing a password (that alone would take most of the time)."""
    client.force_login(
        django_user_model.objects.create(username="operator", is_staff=True, is_superuser=True)
    )
    return client


def ago(seconds: float) -> datetime:
    """The admin judges windows by the real clock."""
    return timezone.now() - timedelta(seconds=seconds)


def results(page: str) -> str:
    return page[page.index('id="result_list"') :]


def form(**fields: str) -> dict[str, str]:
    """An add/change form's fields; split date-times as the admin's widgets post them."""
    base = {
        "published": "on",
        "visible_from_0": "2026-09-01",
        "visible_from_1": "12:00:00",
        "visible_until_0": "",
        "visible_until_1": "",
    }
    return {**base, **fields}


def preview(page: str) -> object:
    """The JSON inside the page's first <pre>."""
    start = page.index("<pre>") + len("<pre>")
    return json.loads(html.unescape(page[start : page.index("</pre>", start)]))


def test_the_list_shows_what_is_served_and_previews_it(admin_client: Client):
    alert(title="Served alert", visible_from=ago(60))
    alert(title="Scheduled alert", visible_from=ago(-3600))
    alert(title="Draft alert", published=False)
    page = admin_client.get(f"{ADMIN}/alert/").content.decode()
    for text in (
        "Served alert",
        "Scheduled alert",
        "Draft alert",
        "served now",
        "scheduled (from",
        "unpublished",
    ):
        assert text in page
    assert "What launchers receive now: 1 served" in page
    served = preview(page)
    assert [a["title"] for a in served["important_notices"]["alerts"]] == ["Served alert"]  # type: ignore[index]


def test_search_and_the_visibility_filter(admin_client: Client):
    alert(title="PhotoCraft layers", visible_from=ago(60))
    alert(title="FilmCraft codecs", visible_from=ago(-3600))
    alert(title="Old news", visible_from=ago(7200), visible_until=ago(3600))
    found = results(admin_client.get(f"{ADMIN}/alert/", {"q": "layers"}).content.decode())
    assert "PhotoCraft layers" in found and "FilmCraft codecs" not in found
    for visibility, shown, hidden in [
        ("scheduled", "FilmCraft codecs", "PhotoCraft layers"),
        ("expired", "Old news", "FilmCraft codecs"),
        ("served", "PhotoCraft layers", "Old news"),
    ]:
        page = admin_client.get(f"{ADMIN}/alert/", {"visibility": visibility}).content.decode()
        listed = results(page)
        assert shown in listed and hidden not in listed, visibility


def test_adding_an_app_rename_derives_the_lowercase_names_and_bumps_the_version(admin_client: Client):
    before = read_version("default")
    response = admin_client.post(
        f"{ADMIN}/apprename/add/",
        form(
            old_name="PdfCraft",
            new_name="DocuCraft",
            description="Renamed.",
            renamed_at_0="",
            renamed_at_1="",
        ),
    )
    assert response.status_code == 302, response.content.decode()
    [rename] = AppRename.objects.all()
    assert (rename.old_name_lower, rename.new_name_lower, rename.published) == ("pdfcraft", "docucraft", True)
    assert read_version("default") != before


def test_changing_an_alert_and_its_page_previews_the_json(admin_client: Client):
    item = alert()
    response = admin_client.post(
        f"{ADMIN}/alert/{item.pk}/change/",
        form(
            title="Edited title",
            body="Edited body",
            maybe_web_link="",
            created_at_0="2026-09-20",
            created_at_1="10:30:00",
        ),
    )
    assert response.status_code == 302, response.content.decode()
    item.refresh_from_db()
    assert (item.title, item.maybe_web_link) == ("Edited title", "")
    page = admin_client.get(f"{ADMIN}/alert/{item.pk}/change/").content.decode()
    assert preview(page) == {
        "app_renames": [],
        "repo_renames": [],
        "important_notices": {
            "announcements": [],
            "alerts": [
                {
                    "title": "Edited title",
                    "body": "Edited body",
                    "maybe_web_link": None,
                    "created_at": "2026-09-20T10:30:00Z",
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"maybe_web_link": "http://example.com"}, "Enter a full https:// address the launcher can open"),
        ({"title": "x" * 121}, "Ensure this value has at most 120 characters (it has 121)."),
        (
            {"visible_until_0": "2026-08-01", "visible_until_1": "00:00:00"},
            "Must be later than “visible from”; leave it empty for no end.",
        ),
    ],
)
def test_an_invalid_alert_is_refused_with_what_to_fix(
    admin_client: Client, fields: dict[str, str], message: str
):
    values = {
        "title": "T",
        "body": "B",
        "maybe_web_link": "",
        "created_at_0": "",
        "created_at_1": "",
        **fields,
    }
    response = admin_client.post(f"{ADMIN}/alert/add/", form(**values))
    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    assert not Alert.objects.exists()


def test_an_invalid_repository_is_refused_with_the_expected_form(admin_client: Client):
    response = admin_client.post(
        f"{ADMIN}/reporename/add/",
        form(old_name="storytold/pdfcraft", new_name="docucraft", renamed_at_0="", renamed_at_1=""),
    )
    assert "Write the repository as organization/project" in html.unescape(response.content.decode())
    assert not RepoRename.objects.exists()


def test_publish_and_unpublish_actions_bump_the_version(admin_client: Client):
    items = [
        repo_rename(published=False),
        repo_rename(old_name="storytold/a", new_name="storytold/b", published=False),
    ]
    for action, published in (("publish", True), ("unpublish", False)):
        before = read_version("default")
        response = admin_client.post(
            f"{ADMIN}/reporename/",
            {"action": action, "_selected_action": [str(i.pk) for i in items]},
        )
        assert response.status_code == 302
        assert {r.published for r in RepoRename.objects.all()} == {published}
        assert read_version("default") != before


def test_every_kind_has_its_pages(admin_client: Client):
    app_rename()
    for model in ("apprename", "reporename", "announcement", "alert"):
        assert admin_client.get(f"{ADMIN}/{model}/").status_code == 200
        assert admin_client.get(f"{ADMIN}/{model}/add/").status_code == 200


def test_the_admin_asks_for_a_login(client: Client):
    response = client.get(f"{ADMIN}/alert/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
