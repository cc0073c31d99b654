"""The publish-window rule and when the served set changes by itself (no database)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from craft_apps.content.items import AnnouncementItem, Scheduled, Visibility, Window
from tests.content.support import NOW

H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("window", "visibility", "next_change"),
    [
        (Window(False, NOW - H, None), Visibility.UNPUBLISHED, None),
        (Window(False, NOW + H, NOW + 2 * H), Visibility.UNPUBLISHED, None),
        (Window(True, NOW + H, None), Visibility.SCHEDULED, NOW + H),
        (Window(True, NOW, None), Visibility.SERVED, None),  # from is inclusive
        (Window(True, NOW - H, NOW + H), Visibility.SERVED, NOW + H),
        (Window(True, NOW - H, NOW), Visibility.EXPIRED, None),  # until is exclusive
        (Window(True, NOW - 2 * H, NOW - H), Visibility.EXPIRED, None),
    ],
)
def test_the_window_rule(window: Window, visibility: Visibility, next_change):
    assert window.visibility(NOW) is visibility
    assert window.next_change(NOW) == next_change


def item(title: str) -> AnnouncementItem:
    return AnnouncementItem(title=title, body="", created_at=None)


def test_the_served_set_keeps_the_order_and_says_when_it_changes_next():
    scheduled = Scheduled(
        announcements=(
            (Window(True, NOW + 2 * H, None), item("later")),
            (Window(True, NOW - H, NOW + 3 * H), item("now, until +3h")),
            (Window(True, NOW - 2 * H, None), item("now, no end")),
        )
    )
    assert [a.title for a in scheduled.served(NOW).announcements] == ["now, until +3h", "now, no end"]
    assert scheduled.next_change(NOW) == NOW + 2 * H
    at_two = scheduled.served(NOW + 2 * H)
    assert [a.title for a in at_two.announcements] == ["later", "now, until +3h", "now, no end"]
    assert scheduled.next_change(NOW + 2 * H) == NOW + 3 * H
    assert [a.title for a in scheduled.served(NOW + 3 * H).announcements] == ["later", "now, no end"]
    assert scheduled.next_change(NOW + 3 * H) is None


def test_equal_notices_compare_equal_so_the_endpoint_keeps_its_encoded_answer():
    scheduled = Scheduled(announcements=((Window(True, NOW - H, None), item("a")),))
    assert scheduled.served(NOW) == scheduled.served(NOW + H)
    assert scheduled.served(NOW) != Scheduled().served(NOW)
