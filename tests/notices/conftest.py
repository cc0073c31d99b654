"""A notices feed on fake time (a fake wall clock for windows, a fake monotonic clock for the
once-a-second look, run at once rather than in the looker thread), installed as the process's
feed so the endpoint uses it too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from craft_apps.api import views
from craft_apps.notices import feed as feed_module
from craft_apps.notices.feed import NoticesFeed
from craft_apps.testing.clock import FakeClock
from tests.notices.support import Monotonic


@pytest.fixture
def monotonic() -> Monotonic:
    return Monotonic()


@pytest.fixture
def feed(monkeypatch, fake_clock: FakeClock, monotonic: Monotonic) -> Iterator[NoticesFeed]:
    # Looks run at once in the test's thread, which holds the test's transaction.
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=lambda look: look())
    monkeypatch.setattr(feed_module, "feed", feed)
    views.answers.clear()
    yield feed
    views.answers.clear()
