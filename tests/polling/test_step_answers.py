"""``polling.answers.Answers`` on its own: a 200 is kept, written and counted; a 304 moves only
the fetch time; a 404 after a release keeps the release; a failure moves only the failure fields;
a rate limit changes nothing but the round; with the fleet (a real Redis) the answer is shared,
and Redis trouble leaves the round alone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import redis

from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import AppState, PollMode
from craft_apps.kernel.source import Failed, Fetched, NotModified, RateLimited
from craft_apps.polling.state import TickReport
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import Steps, steps, unreachable_redis
from tests.support import PHOTOCRAFT, S, release

KEY = PHOTOCRAFT.key
ALONE = PollMode.STANDALONE


def answered(made: Steps, clock: FakeClock) -> AppState:
    """The app after a first 200 with release 0.5.0 and ETag "e", then a minute."""
    made.answers.take(PHOTOCRAFT, Fetched(release(), '"e"'), ALONE, TickReport(ALONE))
    clock.advance(60)
    return made.state.memory[KEY]


def test_a_release_is_kept_written_counted_and_owes_its_updater_files(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    made = steps(state_dir, fake_clock)
    report = TickReport(ALONE)
    assert made.answers.take(PHOTOCRAFT, Fetched(release(), '"e"'), ALONE, report) is ALONE
    kept = AppState(
        latest_release=release(), etag='"e"', fetched_ms=fake_clock.now_ms(), repo=PHOTOCRAFT.repo
    )
    assert made.state.memory[KEY] == kept
    assert made.store.read().apps[KEY] == kept
    assert (report.round.fetched, report.saved.fetched) == (1, 1)
    assert made.state.history[KEY] == (release(),), "the latest goes into the history"
    assert made.state.updater_owed == {KEY: False}


def test_a_304_moves_only_the_fetch_time(state_dir: Path, fake_clock: FakeClock) -> None:
    made = steps(state_dir, fake_clock)
    before = answered(made, fake_clock)
    report = TickReport(ALONE)
    made.answers.take(PHOTOCRAFT, NotModified(), ALONE, report)
    after = made.state.memory[KEY]
    assert after.fetched_ms == fake_clock.now_ms() != before.fetched_ms
    assert (after.latest_release, after.etag) == (before.latest_release, before.etag)
    assert report.saved.unchanged == 1


def test_a_404_after_a_release_keeps_it_served_and_warns(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    made = steps(state_dir, fake_clock)
    answered(made, fake_clock)
    with caplog.at_level(logging.WARNING):
        made.answers.take(PHOTOCRAFT, Fetched(None, None), ALONE, TickReport(ALONE))
    kept = made.store.read().apps[KEY]
    assert (kept.latest_release, kept.etag, kept.fetched_ms) == (release(), '"e"', fake_clock.now_ms())
    assert any("GitHub answers 404" in r.getMessage() for r in caplog.records)


def test_a_failure_moves_only_the_failure_fields(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    made = steps(state_dir, fake_clock)
    before = answered(made, fake_clock)
    made.state.updater_owed.clear()
    report = TickReport(ALONE)
    with caplog.at_level(logging.WARNING):
        made.answers.take(PHOTOCRAFT, Failed("timed out"), ALONE, report)
        made.answers.take(PHOTOCRAFT, Failed("timed out"), ALONE, report)
    after = made.state.memory[KEY]
    assert (after.failed_ms, after.failures) == (fake_clock.now_ms(), 2)
    assert (after.latest_release, after.etag, after.fetched_ms) == (
        before.latest_release,
        before.etag,
        before.fetched_ms,
    )
    assert report.round.failed == 2 and made.state.updater_owed == {}
    assert any("Couldn't fetch the latest release" in r.getMessage() for r in caplog.records)


def test_a_rate_limit_changes_only_the_round(state_dir: Path, fake_clock: FakeClock) -> None:
    made = steps(state_dir, fake_clock)
    report = TickReport(ALONE)
    retry_at = fake_clock.now_ms() + 600 * S
    assert made.answers.take(PHOTOCRAFT, RateLimited(retry_at), ALONE, report) is ALONE
    assert (report.round.rate_limited, report.round.retry_at_ms) == (True, retry_at)
    assert made.state.memory[KEY] == AppState(repo=PHOTOCRAFT.repo)
    assert made.store.read().apps == {}


def test_with_the_fleet_the_answer_is_shared(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    made = steps(state_dir, fake_clock, redis_client)
    fleet = PollMode.COORDINATED
    assert made.answers.take(PHOTOCRAFT, Fetched(release(), '"e"'), fleet, TickReport(fleet)) is fleet
    entries, _ = SharedStore(redis_client, hostname="host-b").entries.read([KEY])
    shared = entries[0]
    assert shared is not None and shared.fetched is not None
    assert (shared.fetched.latest_release, shared.fetched.etag) == (release(), '"e"')


def test_redis_trouble_leaves_the_round_alone(state_dir: Path, fake_clock: FakeClock) -> None:
    unreachable = unreachable_redis()
    made = steps(state_dir, fake_clock, unreachable)
    fleet = PollMode.COORDINATED
    assert made.answers.take(PHOTOCRAFT, Fetched(release(), '"e"'), fleet, TickReport(fleet)) is ALONE
    assert made.redis_log.is_failing
    assert made.store.read().apps[KEY].latest_release == release(), "served by this host all the same"
