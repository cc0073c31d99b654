"""A notices feed on fake time (a fake wall clock for windows, a fake monotonic clock for the
once-a-second look, run at once rather than in the looker thread), in the web runtime of the
test (``install_runtime``) so the endpoint uses it too."""

from __future__ import annotations

import pytest

from craft_apps.content.feed import NoticesFeed
from craft_apps.testing.clock import FakeClock
from tests.content.support import Monotonic


@pytest.fixture
def monotonic() -> Monotonic:
    return Monotonic()


@pytest.fixture
def feed(install_runtime, fake_clock: FakeClock, monotonic: Monotonic) -> NoticesFeed:
    # Looks run at once in the test's thread, which holds the test's transaction.
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=lambda look: look())
    install_runtime(feed=feed)
    return feed
