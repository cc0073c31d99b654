"""What one web process serves: the version marker read at most once a second, the items only
when it changed, windows opening and closing with no query, and the last notices when the
database can't be read."""

from __future__ import annotations

import logging

import pytest

from craft_apps.notices.feed import NoticesFeed
from craft_apps.notices.models import Alert
from craft_apps.testing.clock import FakeClock
from tests.notices.support import (
    Monotonic,
    ago,
    alert,
    announcement,
    app_rename,
    database_unreachable,
    repo_rename,
)

pytestmark = pytest.mark.django_db


def titles(feed: NoticesFeed) -> list[str]:
    return [a.title for a in feed.current().alerts]


def test_only_visible_items_are_served_newest_first(feed: NoticesFeed):
    alert(title="older", visible_from=ago(7200))
    alert(title="newer", visible_from=ago(60))
    alert(title="unpublished", published=False)
    alert(title="scheduled", visible_from=ago(-60))
    alert(title="expired", visible_from=ago(7200), visible_until=ago(1))
    app_rename()
    repo_rename()
    announcement()
    notices = feed.current()
    assert [a.title for a in notices.alerts] == ["newer", "older"]
    assert [r.new_name_lower for r in notices.app_renames] == ["docucraft"]
    assert [r.new_name for r in notices.repo_renames] == ["storytold/docucraft"]
    assert len(notices.announcements) == 1


def test_the_database_is_asked_at_most_once_a_second(
    feed: NoticesFeed, monotonic: Monotonic, django_assert_num_queries
):
    item = alert(title="first")
    with django_assert_num_queries(9):  # the marker, then each kind served now and upcoming
        assert titles(feed) == ["first"]
    item.title = "edited"
    item.save()
    with django_assert_num_queries(0):
        for _ in range(100):
            monotonic.advance(0.0099)
            assert titles(feed) == ["first"], "within the second the kept notices stand"
    monotonic.advance(0.02)
    with django_assert_num_queries(9):
        assert titles(feed) == ["edited"], "then the edit shows"
    monotonic.advance(1.0)
    with django_assert_num_queries(1):  # only the marker: nothing changed
        assert titles(feed) == ["edited"]


@pytest.mark.parametrize("edit", ["add", "delete", "unpublish", "move the window"])
def test_every_kind_of_edit_shows_after_the_next_look(feed: NoticesFeed, monotonic: Monotonic, edit: str):
    item = alert(title="one")
    assert titles(feed) == ["one"]
    if edit == "add":
        alert(title="two", visible_from=ago(1))
        expected = ["two", "one"]
    elif edit == "delete":
        item.delete()
        expected = []
    elif edit == "unpublish":
        Alert.objects.filter(pk=item.pk).update(published=False)
        expected = []
    else:
        item.visible_from = ago(-3600)
        item.save()
        expected = []
    monotonic.advance(1.0)
    assert titles(feed) == expected


def test_a_window_opens_and_closes_with_no_edit_and_no_query(
    feed: NoticesFeed, fake_clock: FakeClock, django_assert_num_queries
):
    alert(title="soon", visible_from=ago(-10), visible_until=ago(-20))
    assert titles(feed) == []
    with django_assert_num_queries(0):  # the monotonic clock doesn't move: no look
        fake_clock.advance(9.999)
        assert titles(feed) == []
        fake_clock.advance(0.001)
        assert titles(feed) == ["soon"], "opens at visible_from"
        fake_clock.advance(9.999)
        assert titles(feed) == ["soon"]
        fake_clock.advance(0.001)
        assert titles(feed) == [], "closes at visible_until"


@pytest.mark.django_db(transaction=True)
def test_when_the_database_is_down_the_last_notices_stay_and_one_line_says_so(
    feed: NoticesFeed, monotonic: Monotonic, caplog
):
    alert(title="kept")
    assert titles(feed) == ["kept"]
    with caplog.at_level(logging.INFO, logger="craft_apps.notices.feed"), database_unreachable():
        for _ in range(5):
            monotonic.advance(1.0)
            assert titles(feed) == ["kept"]
    lines = [r for r in caplog.records if r.name == "craft_apps.notices.feed"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    [line] = lines
    assert line.levelno == logging.WARNING
    message = line.getMessage()
    assert "\n" not in message
    assert "the database can't be read (OperationalError" in message
    assert "serving the last 1 notices and renames" in message
    caplog.clear()
    Alert.objects.update(title="back")
    monotonic.advance(1.0)
    with caplog.at_level(logging.INFO, logger="craft_apps.notices.feed"):
        assert titles(feed) == ["back"]
    assert [r.getMessage() for r in caplog.records] == ["Craft apps notices: the database is readable again"]


@pytest.mark.django_db(transaction=True)
def test_a_process_that_never_read_the_database_serves_no_notices(feed: NoticesFeed):
    alert()
    with database_unreachable():
        assert len(feed.current()) == 0
