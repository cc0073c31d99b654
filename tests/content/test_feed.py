"""What one web process serves: the version marker read at most once a second, the items only
when it changed, windows opening and closing with no query, and the last notices when the
database can't be read."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable

import pytest
from django.core.management import call_command

from craft_apps.content.feed import LEFT_OUT, NoticesFeed
from craft_apps.content.items import MAX_SERVED_PER_KIND
from craft_apps.content.models import Alert
from craft_apps.testing.clock import FakeClock
from tests.content.support import (
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
    # the marker, each kind served now and upcoming, the channels, the controls, the policies
    with django_assert_num_queries(12):
        assert titles(feed) == ["first"]
    item.title = "edited"
    item.save()
    with django_assert_num_queries(0):
        for _ in range(100):
            monotonic.advance(0.0099)
            assert titles(feed) == ["first"], "within the second the kept notices stand"
    monotonic.advance(0.02)
    with django_assert_num_queries(12):
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
    with caplog.at_level(logging.INFO, logger="craft_apps.content.feed"), database_unreachable():
        for _ in range(5):
            monotonic.advance(1.0)
            assert titles(feed) == ["kept"]
    lines = [r for r in caplog.records if r.name == "craft_apps.content.feed"]
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
    with caplog.at_level(logging.INFO, logger="craft_apps.content.feed"):
        assert titles(feed) == ["back"]
    assert [r.getMessage() for r in caplog.records] == ["Craft apps notices: the database is readable again"]


@pytest.mark.django_db(transaction=True)
def test_a_process_that_never_read_the_database_serves_no_notices(feed: NoticesFeed):
    alert()
    with database_unreachable():
        assert len(feed.current()) == 0


class Deferred:
    """A looker that keeps the looks it is handed until the test runs them: a look in flight
    as long as the test wants, as a lock on the database makes it."""

    def __init__(self) -> None:
        self.looks: list[Callable[[], None]] = []

    def __call__(self, look: Callable[[], None]) -> None:
        self.looks.append(look)

    def run(self) -> None:
        self.looks.pop(0)()


def test_no_request_waits_for_a_look_and_the_next_is_due_a_second_after_one_ends(
    fake_clock: FakeClock, monotonic: Monotonic, caplog
):
    looker = Deferred()
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=looker, first_look_wait_s=0)
    alert(title="first")
    assert titles(feed) == [], "nothing read yet, and nothing waited for"
    looker.run()
    assert titles(feed) == ["first"]
    Alert.objects.update(title="edited")
    monotonic.advance(1.0)
    with caplog.at_level(logging.INFO, logger="craft_apps.content.feed"):
        for _ in range(40):  # 10 s of requests while the look hangs
            assert titles(feed) == ["first"], "the last notices, at once"
            monotonic.advance(0.25)
        assert len(looker.looks) == 1, "one look in flight, however many requests came"
        looker.run()  # the database answers at last
        assert titles(feed) == ["edited"]
        monotonic.advance(0.99)
        titles(feed)
        assert not looker.looks, "the next look is due a second after the last one ended"
        monotonic.advance(0.01)
        titles(feed)
        assert len(looker.looks) == 1
    messages = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.feed"]
    assert messages == [
        "Craft apps notices: the database hasn't answered for 3 s; serving the last 1 notices and "
        "renames this process had until it does",
        "Craft apps notices: the database is readable again",
    ]


def test_a_process_that_never_read_waits_for_its_first_look_at_most_the_bound(
    fake_clock: FakeClock, monotonic: Monotonic
):
    looker = Deferred()
    waits: list[float | None] = []
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=looker, first_look_wait_s=0.5)
    # The wait is the first look's event; nothing sets it while the look hangs.
    event = feed._first_look
    event.wait = lambda timeout=None: waits.append(timeout) or False  # type: ignore[method-assign,func-returns-value]
    alert()
    assert titles(feed) == []
    monotonic.advance(0.3)
    assert titles(feed) == []
    monotonic.advance(0.3)
    assert titles(feed) == []
    assert waits == [pytest.approx(0.5), pytest.approx(0.2)], "0.5 s in all, then no more waiting"
    looker.run()
    assert len(feed.current().alerts) == 1


def test_at_most_the_bound_of_each_kind_is_served_the_newest_and_one_line_says_what_is_left_out(
    feed: NoticesFeed, monotonic: Monotonic, fake_clock: FakeClock, caplog
):
    Alert.objects.bulk_create(
        [
            Alert(title=f"alert {n}", body="b", published=True, visible_from=ago(10_000 - n))
            for n in range(MAX_SERVED_PER_KIND + 5)
        ]
    )
    ending = alert(title="ends soon", visible_from=ago(1), visible_until=ago(-10))
    with caplog.at_level(logging.INFO, logger="craft_apps.content.feed"):
        served = titles(feed)
        assert len(served) == MAX_SERVED_PER_KIND
        assert served[:2] == ["ends soon", f"alert {MAX_SERVED_PER_KIND + 4}"], "the newest first"
        assert served[-1] == "alert 6"
        for _ in range(3):
            monotonic.advance(1.0)
            titles(feed)
    assert LEFT_OUT._value.get() == 6
    messages = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.feed"]
    assert messages == [
        f"Craft apps notices: 6 renames and notices served now are left out of the answer: at most "
        f"{MAX_SERVED_PER_KIND} of each kind are served, the newest; unpublish or end the old ones"
    ], "once, not at every look"
    fake_clock.advance(10_000)  # "ends soon" ends: the newest one kept back comes in
    monotonic.advance(1.0)
    titles(feed)  # the look that reloads
    served = titles(feed)
    assert served[0] == f"alert {MAX_SERVED_PER_KIND + 4}"
    assert served[-1] == "alert 5"
    assert ending.pk is not None


def test_upcoming_items_past_the_bound_open_in_their_turn(
    feed: NoticesFeed, monotonic: Monotonic, fake_clock: FakeClock
):
    Alert.objects.bulk_create(
        [
            Alert(title=f"soon {n}", body="b", published=True, visible_from=ago(-10 - n))
            for n in range(MAX_SERVED_PER_KIND + 3)
        ]
    )
    assert titles(feed) == []
    fake_clock.advance(10 + MAX_SERVED_PER_KIND + 2)  # every one has opened
    monotonic.advance(1.0)
    titles(feed)
    served = titles(feed)
    assert served[0] == f"soon {MAX_SERVED_PER_KIND + 2}"
    assert len(served) == MAX_SERVED_PER_KIND


def test_craft_apps_status_says_how_many_are_served_and_left_out(settings, state_dir, fake_clock: FakeClock):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": "photocraft=PhotoCraft=storytold/photocraft"}
    Alert.objects.bulk_create(
        [
            Alert(title=f"a{n}", body="b", published=True, visible_from=ago(100 + n))
            for n in range(MAX_SERVED_PER_KIND + 2)
        ]
    )
    announcement()
    out = io.StringIO()
    call_command("craft_apps_status", stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("notices")]
    assert line.split(None, 1)[1] == (
        f"{MAX_SERVED_PER_KIND + 1} renames and notices served now; 2 more left out by the bound "
        f"({MAX_SERVED_PER_KIND} of each kind, the newest)"
    )
    out = io.StringIO()
    call_command("craft_apps_status", "--json", stdout=out)
    assert json.loads(out.getvalue())["notices"] == {
        "problem": None,
        "served": MAX_SERVED_PER_KIND + 1,
        "left_out": 2,
        "max_per_kind": MAX_SERVED_PER_KIND,
    }
