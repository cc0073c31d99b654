"""A change is purged as soon as every web process of the host serves it: the rule (reports,
the version the change was seen with, now -> ready, wait or unconfirmed), the reports each web
process writes after a look, and the purge thread waiting on them on a fake clock, with the
longest wait logged once and counted when a process never says it serves the change."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from craft_apps.cdn.plan import RELEASE_INFO, PurgeRequest
from craft_apps.cdn.purger import SETTLE_S, Purger
from craft_apps.cdn.readiness import POLL_S, STALE_MS, Readiness, readiness
from craft_apps.conf import PurgeTarget
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.served_versions import (
    FORGET_AFTER_MS,
    ServedReport,
    read_reports,
    reports_dir,
    write_report,
)
from craft_apps.host.counters import CountersUpdate
from craft_apps.testing.clock import FakeClock
from tests.content.support import Monotonic, alert

TARGET = PurgeTarget("http", "http://127.0.0.1:6081{path}", "PURGE", "https://updates.example.com", 1.0)
SEEN = 1_000_000
LONGEST = 2000
V1, V2 = 10, 20


def report(pid: int, version: int | None, at_ms: int = SEEN) -> ServedReport:
    return ServedReport(pid, version, at_ms)


@pytest.mark.parametrize(
    ("reports", "now", "expected"),
    [
        ([report(1, V2), report(2, V2)], SEEN, Readiness.READY),
        ([report(1, V2 + 5), report(2, V2)], SEEN, Readiness.READY),  # a newer version holds it too
        ([report(1, V2), report(2, V1)], SEEN, Readiness.WAIT),  # one still serves the old
        ([report(1, V2), report(2, None)], SEEN, Readiness.WAIT),  # one never read the database
        ([report(1, V2), report(2, V1)], SEEN + LONGEST, Readiness.UNCONFIRMED),
        ([], SEEN, Readiness.WAIT),  # nobody says: wait for the longest
        ([], SEEN + LONGEST, Readiness.UNCONFIRMED),
        # A process whose last word is older than two beats is gone (or its look hangs).
        ([report(1, V2, SEEN + 100), report(2, V1, SEEN + 100 - STALE_MS - 1)], SEEN + 100, Readiness.READY),
        ([report(1, V1, SEEN - STALE_MS - 1)], SEEN, Readiness.WAIT),
    ],
)
def test_ready_once_every_live_web_process_serves_the_change(
    reports: list[ServedReport], now: int, expected: Readiness
):
    assert readiness(reports, V2, now, SEEN, LONGEST) is expected


def test_a_change_made_without_the_database_needs_only_a_live_process():
    assert readiness([report(1, None)], None, SEEN, SEEN, LONGEST) is Readiness.READY


def test_reports_are_read_back_and_the_damaged_and_forgotten_ones_left_out(tmp_path: Path):
    write_report(tmp_path, report(11, V1))
    write_report(tmp_path, report(11, V2, SEEN + 1))  # in place of its last one
    write_report(tmp_path, report(12, None))
    write_report(tmp_path, report(13, V1, SEEN - FORGET_AFTER_MS - 1))
    (reports_dir(tmp_path) / "14.json").write_text("{not json")
    found = sorted(read_reports(tmp_path, SEEN), key=lambda r: r.pid)
    assert found == [report(11, V2, SEEN + 1), report(12, None)]
    assert not (reports_dir(tmp_path) / "13.json").exists()
    assert read_reports(tmp_path / "none", SEEN) == ()


@pytest.mark.django_db
def test_a_web_process_says_which_version_it_serves_after_each_look(
    settings, state_dir: Path, fake_clock: FakeClock
):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir)}
    monotonic = Monotonic()
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=lambda look: look(), report_served=True)
    alert(title="one")
    feed.current()
    (first,) = read_reports(state_dir, fake_clock.now_ms())
    assert first.version == feed.version() and first.version is not None
    alert(title="two")
    monotonic.advance(1)
    fake_clock.advance(1)
    feed.current()
    (second,) = read_reports(state_dir, fake_clock.now_ms())
    assert second.version is not None and second.version == feed.version()
    assert second.version > (first.version or 0)
    assert second.at_ms == fake_clock.now_ms()


class Edge:
    """The CDN: takes every purge request it is sent."""

    def __init__(self) -> None:
        self.sent: list[PurgeRequest] = []

    def __call__(self, request: PurgeRequest) -> None:
        self.sent.append(request)


class Host:
    """The web processes' reports, as the test moves them on; the purge thread reads them."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.reports = {1: V1, 2: V1}
        self.catch_up_at: dict[int, int] = {}  # pid -> when it serves V2
        self.counted: list[CountersUpdate] = []

    def served(self, now_ms: int) -> Sequence[ServedReport]:
        for pid, at in self.catch_up_at.items():
            if now_ms >= at:
                self.reports[pid] = V2
        return [ServedReport(pid, version, now_ms) for pid, version in self.reports.items()]

    def purger(self, answers: dict[str, str], edge: Edge, version: list[int]) -> Purger:
        return Purger(
            TARGET,
            answers=lambda: dict(answers),
            is_leader=lambda: True,
            send=edge,
            record=self.counted.append,
            clock=self.clock,
            version=lambda: version[0],
            served=self.served,
        )


def test_the_purge_waits_for_the_last_web_process_then_a_tenth_of_a_second(fake_clock: FakeClock):
    host, edge, answers, version = Host(fake_clock), Edge(), {RELEASE_INFO: 'W/"1"'}, [V1]
    purger = host.purger(answers, edge, version)
    purger.look()
    answers[RELEASE_INFO], version[0] = 'W/"2"', V2  # a yank
    seen = fake_clock.now_ms()
    host.catch_up_at = {1: seen, 2: seen + 600}
    assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
    assert len(edge.sent) == 1
    assert fake_clock.sleeps == [POLL_S] * 12 + [0.1]  # until 0.6 s, then the answer's recheck
    assert not any(update.purges.get("unconfirmed") for update in host.counted)


def test_a_process_that_never_catches_up_is_waited_for_at_most_the_settle_said_once(
    fake_clock: FakeClock, caplog
):
    host, edge, answers, version = Host(fake_clock), Edge(), {RELEASE_INFO: 'W/"1"'}, [V1]
    purger = host.purger(answers, edge, version)
    purger.look()
    with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
        for n, etag in enumerate(('W/"2"', 'W/"3"')):
            answers[RELEASE_INFO], version[0] = etag, V2 + n
            started = fake_clock.now_ms()
            assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
            assert fake_clock.now_ms() - started == SETTLE_S * 1000  # then sent all the same
        host.catch_up_at = {1: 0, 2: 0}  # both serve the next change at once
        answers[RELEASE_INFO], version[0] = 'W/"4"', V2
        assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
    assert len(edge.sent) == 3
    lines = [r.getMessage() for r in caplog.records if "web process" in r.getMessage()]
    assert lines == [
        "Craft apps CDN purge: 2 of 2 web processes and other hosts didn't serve it yet 2 s after "
        "the change; purging all the same.",
        "Craft apps CDN purge: every web process and other host says it serves each change again.",
    ]
    assert sum(update.purges.get("unconfirmed", 0) for update in host.counted) == 2


def test_no_web_process_saying_anything_waits_the_settle(fake_clock: FakeClock, caplog):
    host, edge, answers, version = Host(fake_clock), Edge(), {RELEASE_INFO: 'W/"1"'}, [V1]
    host.reports = {}
    purger = host.purger(answers, edge, version)
    purger.look()
    answers[RELEASE_INFO], version[0] = 'W/"2"', V2
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
    assert len(edge.sent) == 1
    assert "no web process of this host said which version it serves 2 s after the change" in caplog.text
