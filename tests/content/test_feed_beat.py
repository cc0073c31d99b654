"""An idle web process looks at the database once a second, not every other second: its beat
comes four times per recheck, so a look starts within a quarter of a second of being due even
though the last look ended after the beat that started it (driven on fake time)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from craft_apps.content.feed import RECHECK_S, NoticesFeed
from craft_apps.testing.clock import FakeClock
from tests.content.support import Monotonic

pytestmark = pytest.mark.django_db

LOOK_TAKES_S = 0.02


def test_an_idle_process_looks_again_within_a_quarter_of_a_second_of_the_look_being_due(
    monotonic: Monotonic,
):
    started: list[float] = []

    def runner(look: Callable[[], None]) -> None:  # the look runs at once and takes 20 ms
        started.append(monotonic.now)
        monotonic.advance(LOOK_TAKES_S)
        look()

    feed = NoticesFeed(
        monotonic=monotonic,
        clock=FakeClock(),
        runner=runner,
        pace=True,
        keep_controls=False,
        report_served=False,
    )
    pacer = feed.pacer
    assert pacer is not None
    first = monotonic.now
    for beat in range(round(6 / pacer.period_s)):  # six seconds of beats, no request
        monotonic.now = first + beat * pacer.period_s  # the beat's own time: the look runs beside it
        feed._beat()
    gaps = [later - earlier for earlier, later in itertools.pairwise(started)]
    assert len(gaps) >= 4
    assert max(gaps) <= RECHECK_S + LOOK_TAKES_S + RECHECK_S / 4 + 1e-9, gaps
