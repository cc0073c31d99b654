"""The reference's scheduling rules, with its numbers."""

from __future__ import annotations

import pytest

from craft_apps.kernel.domain import AppState, Backoff
from craft_apps.polling.schedule import (
    BETWEEN_REQUESTS_MS,
    MIN_REQUEST_GAP_MS,
    REFRESH_GAP_MS,
    WAKE_CHECK_MS,
    RoundResult,
    backoff_after,
    is_due,
    jittered,
    last_answer_ms,
    requested_due,
    startup_delay_ms,
    tick_delay_ms,
)
from tests.support import S

NOW = 1_790_000_000_000
INTERVAL = 1800 * S
MAX_BACKOFF = 14_400 * S
NO_BACKOFF = Backoff()


def app(fetched: int | None = None, failed: int | None = None, failures: int = 0) -> AppState:
    return AppState(fetched_ms=fetched, failed_ms=failed, failures=failures)


def wait_after(
    round_result: RoundResult, previous: Backoff = NO_BACKOFF, random_value: float = 0.5
) -> Backoff:
    return backoff_after(
        round_result,
        previous,
        NOW,
        interval_ms=INTERVAL,
        max_backoff_ms=MAX_BACKOFF,
        random_value=random_value,
    )


def within(actual_ms: int, around_ms: int) -> bool:
    return around_ms * 0.89 <= actual_ms <= around_ms * 1.11


class TestFreshness:
    def test_an_app_never_fetched_is_due(self):
        assert is_due(app(), NOW, 120 * S)

    def test_a_fetch_is_fresh_until_the_interval_minus_the_skew_margin(self):
        assert not is_due(app(fetched=NOW - 89 * S), NOW, 120 * S)
        assert is_due(app(fetched=NOW - 90 * S), NOW, 120 * S)
        assert is_due(app(fetched=NOW - 600 * S), NOW, 120 * S)

    def test_a_fetch_from_a_clock_ahead_of_ours_is_fresh(self):
        assert not is_due(app(fetched=NOW + 20 * S), NOW, 120 * S)

    def test_a_failing_app_waits_longer_after_each_failure_up_to_the_interval(self):
        # 1st failure: retry after 60 s less the margin; 2nd: 120 s; 3rd: 240 s.
        assert not is_due(app(failed=NOW - 29 * S, failures=1), NOW, INTERVAL)
        assert is_due(app(failed=NOW - 30 * S, failures=1), NOW, INTERVAL)
        assert not is_due(app(failed=NOW - 89 * S, failures=2), NOW, INTERVAL)
        assert is_due(app(failed=NOW - 90 * S, failures=2), NOW, INTERVAL)
        assert not is_due(app(failed=NOW - 200 * S, failures=3), NOW, INTERVAL)
        assert is_due(app(failed=NOW - 210 * S, failures=3), NOW, INTERVAL)
        # Many failures: never longer than the interval.
        assert is_due(app(failed=NOW - 1770 * S, failures=30), NOW, INTERVAL)
        assert not is_due(app(failed=NOW - 1769 * S, failures=30), NOW, INTERVAL)

    def test_a_failure_older_than_the_last_fetch_is_ignored(self):
        assert is_due(app(fetched=NOW - 200 * S, failed=NOW - 300 * S, failures=5), NOW, 120 * S)

    def test_a_failure_after_a_fresh_fetch_does_not_make_it_due(self):
        assert not is_due(app(fetched=NOW - 10 * S, failed=NOW - 5 * S, failures=1), NOW, INTERVAL)


class TestBackoff:
    def test_a_good_round_clears_the_backoff(self):
        round_result = RoundResult(fetched=1, unchanged=3, failed=1)
        assert wait_after(round_result, Backoff(until_ms=NOW, trouble=3)) == Backoff()

    def test_a_rate_limit_backs_off_until_after_the_reset(self):
        round_result = RoundResult(rate_limited=True, retry_at_ms=NOW + 50 * 60 * S)
        backoff = wait_after(round_result)
        assert backoff.trouble == 1
        assert backoff.is_active(NOW + 45 * 60 * S)
        assert not backoff.is_active(NOW + 57 * 60 * S)
        assert backoff.until_ms == NOW + 51 * 60 * S  # random 0.5: no jitter

    def test_rate_limits_back_off_further_each_time_up_to_the_maximum(self):
        no_reset = RoundResult(rate_limited=True)
        first = wait_after(no_reset)
        second = wait_after(no_reset, first)
        third = wait_after(no_reset, second)
        assert (first.trouble, second.trouble, third.trouble) == (1, 2, 3)
        assert first.until_ms == NOW + 1800 * S
        assert second.until_ms == NOW + 3600 * S
        assert third.until_ms == NOW + 7200 * S
        backoff = third
        for _ in range(10):
            backoff = wait_after(no_reset, backoff, random_value=0.999)
            assert backoff.until_ms is not None
            assert backoff.until_ms - NOW <= MAX_BACKOFF * 1.1

    def test_a_reset_further_than_the_maximum_is_capped(self):
        backoff = wait_after(RoundResult(rate_limited=True, retry_at_ms=NOW + 10 * 3600 * S))
        assert backoff.until_ms == NOW + MAX_BACKOFF

    def test_a_reset_in_the_past_still_waits_the_interval(self):
        backoff = wait_after(RoundResult(rate_limited=True, retry_at_ms=NOW - 60 * S))
        assert backoff.until_ms == NOW + INTERVAL

    def test_trouble_carries_over_between_rounds_and_hosts(self):
        all_failed = RoundResult(failed=2)
        first = wait_after(all_failed, random_value=0.0)
        second = wait_after(all_failed, first, random_value=0.0)
        assert (first.trouble, second.trouble) == (1, 2)
        assert second.until_ms is not None
        assert second.until_ms - NOW >= 107 * S

    def test_a_round_where_everything_failed_retries_sooner_but_never_in_a_tight_loop(self):
        all_failed = RoundResult(failed=13)
        backoff = wait_after(all_failed)
        assert backoff.until_ms == NOW + 60 * S
        backoff = wait_after(all_failed, backoff)
        assert backoff.until_ms == NOW + 120 * S
        for random_value in (0.0, 0.999) * 10:
            backoff = wait_after(all_failed, backoff, random_value=random_value)
            assert backoff.until_ms is not None
            assert 53 * S <= backoff.until_ms - NOW <= INTERVAL * 1.11

    def test_an_expired_backoff_is_not_active(self):
        assert not Backoff().is_active(NOW)
        assert not Backoff(until_ms=NOW - 1, trouble=4).is_active(NOW)
        assert not Backoff(until_ms=NOW, trouble=4).is_active(NOW)
        assert Backoff(until_ms=NOW + 1, trouble=4).is_active(NOW)


class TestJitter:
    @pytest.mark.parametrize("random_value", [0.0, 0.25, 0.5, 0.75, 0.999999])
    def test_every_wait_gets_ten_percent_jitter(self, random_value):
        assert within(jittered(INTERVAL, 0.1, random_value), INTERVAL)

    def test_the_extremes_are_ten_percent_either_way(self):
        assert jittered(1000, 0.1, 0.0) == 900
        assert jittered(1000, 0.1, 0.5) == 1000
        assert jittered(1000, 0.1, 0.9999999) == 1100

    def test_a_tick_is_thirty_seconds_plus_or_minus_ten_percent(self):
        assert tick_delay_ms(0.0) == 27 * S
        assert tick_delay_ms(0.5) == 30 * S
        assert tick_delay_ms(0.9999999) == 33 * S

    def test_the_startup_delay_is_up_to_thirty_seconds(self):
        assert startup_delay_ms(0.0) == 0
        assert startup_delay_ms(0.5) == 15 * S
        assert startup_delay_ms(0.9999999) == 30 * S


class TestRequestedRefresh:
    """``requested_due``: a refresh asked for ahead of schedule, within the quota's limits."""

    def test_a_refresh_no_request_answered_yet_is_due_at_once(self):
        assert requested_due(NOW, None, NO_BACKOFF, NOW)
        assert requested_due(NOW - 5 * S, NOW - 60 * S, NO_BACKOFF, NOW)

    def test_nothing_asked_for_is_never_due(self):
        assert not requested_due(None, None, NO_BACKOFF, NOW)

    def test_a_request_started_since_answers_it(self):
        assert not requested_due(NOW - 5 * S, NOW - 5 * S, NO_BACKOFF, NOW)
        assert not requested_due(NOW - 5 * S, NOW - 1, NO_BACKOFF, NOW + 60 * S)

    def test_one_app_is_asked_about_at_most_once_per_gap(self):
        last = NOW - REFRESH_GAP_MS + 1
        assert not requested_due(NOW, last, NO_BACKOFF, NOW)
        assert requested_due(NOW, last, NO_BACKOFF, NOW + 1)
        assert not requested_due(NOW, NOW + 3 * S, NO_BACKOFF, NOW), "a last request ahead of our clock"

    def test_the_gap_is_also_counted_from_the_last_answer_a_new_process_reads_back(self):
        """A restarted poller knows no request of its own: the state file's last answer (a
        fetch, a 304 or a failure) keeps the gap, whichever of the two times is the later."""
        answered = NOW - REFRESH_GAP_MS + 1
        assert not requested_due(NOW, None, NO_BACKOFF, NOW, last_answer_ms=answered)
        assert requested_due(NOW, None, NO_BACKOFF, NOW + 1, last_answer_ms=answered)
        asked_long_ago = NOW - 60 * S
        assert not requested_due(NOW, asked_long_ago, NO_BACKOFF, NOW, last_answer_ms=answered)
        assert requested_due(NOW, asked_long_ago, NO_BACKOFF, NOW + 1, last_answer_ms=answered)
        # The later request governs when the answer is the older time.
        assert not requested_due(NOW, NOW - 2 * S, NO_BACKOFF, NOW + 1, last_answer_ms=NOW - 60 * S)
        assert requested_due(NOW, None, NO_BACKOFF, NOW, last_answer_ms=NOW - REFRESH_GAP_MS)
        assert not requested_due(NOW, None, NO_BACKOFF, NOW, last_answer_ms=NOW + 3 * S), "ahead of our clock"

    def test_a_request_started_since_answers_it_whatever_the_last_answer(self):
        assert not requested_due(
            NOW - 5 * S, NOW - 5 * S, NO_BACKOFF, NOW + 60 * S, last_answer_ms=NOW - 90 * S
        )

    def test_last_answer_is_the_later_of_the_fetch_and_the_failure(self):
        assert last_answer_ms(app()) is None
        assert last_answer_ms(app(fetched=NOW - 5 * S)) == NOW - 5 * S
        assert last_answer_ms(app(fetched=NOW - 5 * S, failed=NOW - 2 * S, failures=1)) == NOW - 2 * S
        assert last_answer_ms(app(fetched=NOW, failed=NOW - 90 * S, failures=1)) == NOW
        assert last_answer_ms(app(failed=NOW - 7 * S, failures=2)) == NOW - 7 * S

    def test_never_during_a_backoff(self):
        assert not requested_due(NOW, None, Backoff(until_ms=NOW + 1, trouble=1), NOW)
        assert requested_due(NOW, None, Backoff(until_ms=NOW, trouble=1), NOW)

    def test_refreshes_start_requests_the_gap_and_the_pause_before_a_request_apart(self):
        assert REFRESH_GAP_MS == MIN_REQUEST_GAP_MS + BETWEEN_REQUESTS_MS
        assert MIN_REQUEST_GAP_MS == 10 * S and WAKE_CHECK_MS == S
