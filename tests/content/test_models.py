"""The tables: derived fields, validation that says what to fix, and the version marker that
every kind of write bumps."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from craft_apps.content.feed import read_version
from craft_apps.content.models import (
    BODY_MAX,
    TITLE_MAX,
    Alert,
    Announcement,
    AppRename,
    NoticesVersion,
)
from tests.content.support import ago, alert, announcement, app_rename, repo_rename

pytestmark = pytest.mark.django_db


def errors(item) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        item.full_clean()
    return caught.value.message_dict


def test_the_lowercase_names_are_derived_never_typed():
    rename = app_rename(old_name="PdfCraft", new_name="DocuCraft Pro")
    rename.refresh_from_db()
    assert (rename.old_name_lower, rename.new_name_lower) == ("pdfcraft", "docucraft pro")
    rename.new_name = "DocuCraft"
    rename.save()
    rename.refresh_from_db()
    assert rename.new_name_lower == "docucraft"
    assert not AppRename._meta.get_field("old_name_lower").editable


def test_a_valid_item_of_every_kind_passes():
    for item in (app_rename(), repo_rename(), announcement(), alert(), alert(maybe_web_link="")):
        item.full_clean()


@pytest.mark.parametrize(
    "link", ["http://example.com/notes", "ftp://example.com/x", "example.com", "https://"]
)
def test_the_alert_link_must_be_an_https_url(link: str):
    assert errors(alert(maybe_web_link=link)) == {
        "maybe_web_link": [
            "Enter a full https:// address the launcher can open, such as https://example.com/notes "
            "(http and other schemes are refused)."
        ]
    }


def test_texts_are_bounded_and_the_message_gives_the_bound():
    too_long = Announcement(
        title="T" * (TITLE_MAX + 1), body="B" * (BODY_MAX + 1)
    )  # PostgreSQL won't store it
    found = errors(too_long)
    assert found["title"] == [
        f"Ensure this value has at most {TITLE_MAX} characters (it has {TITLE_MAX + 1})."
    ]
    assert found["body"] == [f"Ensure this value has at most {BODY_MAX} characters (it has {BODY_MAX + 1})."]


def test_names_and_titles_are_one_line_without_surrounding_spaces():
    assert errors(announcement(title="Two\nlines")) == {
        "title": ["Keep it on one line: remove line breaks and tabs."]
    }
    assert errors(app_rename(new_name=" DocuCraft")) == {
        "new_name": ["Remove the spaces at the start or the end."]
    }


def test_a_repository_is_organization_slash_project():
    found = errors(repo_rename(new_name="https://github.com/storytold/docucraft"))
    assert found == {
        "new_name": [
            "Write the repository as organization/project (letters, digits, '-', '_', '.'), "
            "such as storytold/docucraft."
        ]
    }


def test_a_rename_must_change_the_name():
    assert errors(repo_rename(new_name="storytold/pdfcraft")) == {
        "new_name": ["The new name is the same as the old one; write the new name."]
    }


def test_the_window_must_end_after_it_starts():
    assert errors(alert(visible_from=ago(10), visible_until=ago(20))) == {
        "visible_until": ["Must be later than “visible from”; leave it empty for no end."]
    }


def test_every_write_bumps_the_version_marker():
    seen = [read_version("default")]

    def bumped() -> bool:
        seen.append(read_version("default"))
        return seen[-1] != seen[-2]

    item = alert()
    assert bumped(), "create"
    item.title = "Edited"
    item.save()
    assert bumped(), "save"
    Alert.objects.filter(pk=item.pk).update(published=False)
    assert bumped(), "queryset update"
    Announcement.objects.bulk_create([Announcement(title="Bulk", body="b", visible_from=ago(1))])
    assert bumped(), "bulk create"
    Announcement.objects.all().delete()
    assert bumped(), "queryset delete"
    item.delete()
    assert bumped(), "delete"


def test_a_missing_version_row_is_recreated_without_repeating_an_earlier_number():
    alert()
    before = read_version("default")
    NoticesVersion.objects.all().delete()
    assert read_version("default") is None
    alert()
    after = read_version("default")
    assert after is not None and after != before


def test_the_migrations_match_the_models():
    out = StringIO()
    call_command("makemigrations", "craft_apps", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
