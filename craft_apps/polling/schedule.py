"""When to ask GitHub: per-app freshness, retries after failures, and the backoff after a round.

Pure functions of what is known (times in Unix ms, a random number passed in), so the same rules
apply whether a host works from the fleet's state in Redis or alone from its own, and tests run
them on any clock. The invariants: an app is never asked about while fresh (a fetch time in the
future counts as fresh), a failing app never every tick, and GitHub never while backing off.
"""

from __future__ import annotations

from dataclasses import dataclass

from craft_apps.kernel.domain import AppState, Backoff

TICK_MS = 30_000  # every host looks at the state this often, with TICK_JITTER
TICK_JITTER = 0.1
STARTUP_DELAY_MAX_MS = 30_000  # a fleet deploy's first rounds are spread over this window
BETWEEN_REQUESTS_MS = 1_000
# Clocks differ between hosts: a fetch counts as fresh until interval - margin has passed.
CLOCK_SKEW_MARGIN_MS = 30_000
FIRST_FAILURE_RETRY_MS = 60_000  # doubles after each failure, up to the interval
RESET_MARGIN_MS = 60_000  # waited beyond GitHub's announced rate-limit reset
WAIT_JITTER = 0.1
_MAX_DOUBLINGS = 16
# A refresh asked for ahead of schedule (a webhook, craft_apps_refresh): however many arrive,
# the fleet asks GitHub about one app at most once per MIN_REQUEST_GAP_MS. Refreshes start
# requests (and claim, with this window) REFRESH_GAP_MS apart: a claim's request may leave up
# to the pause between requests after it.
MIN_REQUEST_GAP_MS = 10_000
REFRESH_GAP_MS = MIN_REQUEST_GAP_MS + BETWEEN_REQUESTS_MS
WAKE_CHECK_MS = 1_000  # between ticks, a poller looks this often whether a refresh was asked for


@dataclass
class RoundResult:
    """What one round's requests ended in."""

    fetched: int = 0
    unchanged: int = 0
    failed: int = 0
    rate_limited: bool = False
    retry_at_ms: int | None = None  # when GitHub said to come back, if it did

    def requests(self) -> int:
        """Requests that reached a conclusion (a rate limit counts as one)."""
        return self.fetched + self.unchanged + self.failed + int(self.rate_limited)


def is_due(state: AppState, now_ms: int, interval_ms: int) -> bool:
    """Whether to ask GitHub about an app now (see ``due_at_ms``)."""
    due_at = due_at_ms(state, interval_ms)
    return due_at is None or now_ms >= due_at


def due_at_ms(state: AppState, interval_ms: int) -> int | None:
    """When an app is next due; None when it is due whatever the time.

    Due once its last fetch (by any host) is ``interval - margin`` old. A failing app waits 1, 2,
    4, ... minutes (never more than the interval), each less the margin. A fetch time in the
    future keeps it fresh until then plus the wait.
    """
    waits: list[int] = []
    fresh_for = max(0, interval_ms - CLOCK_SKEW_MARGIN_MS)
    if state.fetched_ms is not None and fresh_for > 0:
        waits.append(state.fetched_ms + fresh_for)
    if state.is_failing() and state.failed_ms is not None:
        retry_ms = max(
            0, min(scaled(FIRST_FAILURE_RETRY_MS, state.failures), interval_ms) - CLOCK_SKEW_MARGIN_MS
        )
        if retry_ms > 0:
            waits.append(state.failed_ms + retry_ms)
    return max(waits) if waits else None


def requested_due(
    requested_ms: int | None,
    last_asked_ms: int | None,
    backoff: Backoff,
    now_ms: int,
    last_answer_ms: int | None = None,
) -> bool:
    """Whether a refresh asked for at ``requested_ms`` makes an app due now, ahead of schedule.

    ``last_asked_ms`` is when a request to GitHub about the app last started, by this host or
    (its claim) any other; ``last_answer_ms`` when one last ended in a fetch, a 304 or a failure
    (``last_answer_ms``: the state file's times, which outlive the process). A refresh is
    answered by a request that started at or after it was asked for, and is then no reason to
    ask again. Otherwise the app is due once the last request started, and the last answer came,
    ``REFRESH_GAP_MS`` ago, and never while backing off: a flood of refreshes asks GitHub about
    one app at most once per ``MIN_REQUEST_GAP_MS``, and never past a rate limit, even across a
    restart of the poller. The failure retry waits don't apply: a refresh says there is
    something new to ask about.
    """
    if requested_ms is None or backoff.is_active(now_ms):
        return False
    if last_asked_ms is not None and last_asked_ms >= requested_ms:
        return False
    last = max((t for t in (last_asked_ms, last_answer_ms) if t is not None), default=None)
    return last is None or age_ms(last, now_ms) >= REFRESH_GAP_MS


def last_answer_ms(state: AppState) -> int | None:
    """When GitHub last answered about the app (a fetch, a 304 or a failure), by any host."""
    return max((t for t in (state.fetched_ms, state.failed_ms) if t is not None), default=None)


def backoff_after(
    round_result: RoundResult,
    previous: Backoff,
    now_ms: int,
    *,
    interval_ms: int,
    max_backoff_ms: int,
    random_value: float,
) -> Backoff:
    """The backoff after a round that made requests; a good round clears it.

    A rate limit waits until the announced reset plus a margin or ``interval x 2^(n-1)``,
    whichever is longer, capped at the maximum backoff. A round where every request failed waits
    ``1 min x 2^(n-1)``, capped at the interval. ``n`` counts such rounds in a row.
    """
    if round_result.rate_limited:
        trouble = previous.trouble + 1
        until_reset = 0
        if round_result.retry_at_ms is not None:
            until_reset = max(0, round_result.retry_at_ms - now_ms) + RESET_MARGIN_MS
        wait = min(max(until_reset, scaled(interval_ms, trouble)), max_backoff_ms)
    elif round_result.failed > 0 and round_result.fetched == 0 and round_result.unchanged == 0:
        trouble = previous.trouble + 1
        wait = min(scaled(FIRST_FAILURE_RETRY_MS, trouble), interval_ms)
    else:
        return Backoff()
    return Backoff(until_ms=now_ms + jittered(wait, WAIT_JITTER, random_value), trouble=trouble)


def jittered(base_ms: int, fraction: float, random_value: float) -> int:
    """``base`` +/- ``fraction``, from a uniform ``random_value`` in [0, 1); never negative."""
    factor = 1.0 + fraction * (random_value * 2.0 - 1.0)
    return max(0, round(base_ms * factor))


def scaled(base_ms: int, n: int) -> int:
    """``base x 2^(n-1)``, the exponent bounded so it can't overflow anything downstream."""
    return base_ms * (1 << min(max(n - 1, 0), _MAX_DOUBLINGS))


def age_ms(then_ms: int, now_ms: int) -> int:
    """How long ago ``then`` was; zero when it lies in the future (a clock running ahead)."""
    return max(0, now_ms - then_ms)


def tick_delay_ms(random_value: float) -> int:
    return jittered(TICK_MS, TICK_JITTER, random_value)


def startup_delay_ms(random_value: float) -> int:
    return round(STARTUP_DELAY_MAX_MS * random_value)
