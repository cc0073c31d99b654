"""What each tick adds to the host's counters, and what ``--once`` exits with.

After every tick the runner hands the tick's report here: its requests by outcome, the Redis
errors and the Redis keys refused as unreadable since the last tick, the mode, the tick's time,
GitHub's last quota and the reads of updater files (``tauri.file_reads``) go to the state file's
counters (``craft_apps.host.counters``) in one small transaction. When the state file can't be
written the numbers are kept and added at the next tick that can, and the trouble is logged
once, not every tick.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from craft_apps.host.counters import MAX_FAILURE_CHARS, CountersUpdate, record
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppState, Backoff, GitHubQuota, PollMode
from craft_apps.kernel.instants import format_duration, format_ms
from craft_apps.kernel.text import one_line
from craft_apps.polling.poller import Poller, TickReport
from craft_apps.polling.schedule import age_ms, due_at_ms
from craft_apps.tauri.file_reads import UpdaterTally

logger = logging.getLogger(__name__)

EXIT_STALE = 3  # --once: requests failed or were refused and some app is older than the interval


class Tally:
    """Adds each tick's numbers to the host's counters."""

    def __init__(self, host: StateStore, clock: Clock) -> None:
        self._host = host
        self._clock = clock
        self._pending = CountersUpdate()
        # Running totals of objects that may be replaced (a new custody's trouble log) or outlive
        # a custody (the shared store): each counted from where it was last seen.
        self._redis_errors = _Since()
        self._unreadable_keys = _Since()
        self._trouble: str | None = None

    def after_tick(self, report: TickReport, poller: Poller, github: object) -> None:
        pending = self._pending
        result = report.round
        for outcome, count in (
            ("fetched", result.fetched),
            ("not_modified", result.unchanged),
            ("failed", result.failed),
            ("rate_limited", int(result.rate_limited)),
        ):
            pending.requests[outcome] = pending.requests.get(outcome, 0) + count
        pending.redis_errors += self._redis_errors.added(poller.redis_log, poller.redis_log.errors)
        if poller.shared is not None:
            pending.redis_unreadable += self._unreadable_keys.added(
                poller.shared.reads, poller.shared.reads.unreadable
            )
        pending.mode = report.mode.value
        pending.tick_ms = self._clock.now_ms()
        quota = getattr(github, "last_quota", None)  # GitHubClient's; a stand-in may have none
        if isinstance(quota, GitHubQuota):
            pending.quota = quota
        _add_updater(pending, poller.updater_files.take_tally())
        self._flush()

    def stopped(self) -> None:
        """Notes a clean stop, so the health rules know since when no poller has been active."""
        self._pending.stopped_ms = self._clock.now_ms()
        self._flush()

    def _flush(self) -> None:
        try:
            record(self._host, self._pending)
        except StateUnavailable as err:
            if self._trouble != str(err):
                self._trouble = str(err)
                logger.warning("Craft app releases: couldn't add to the host's counters (kept): %s", err)
            return
        self._pending = CountersUpdate()
        self._trouble = None


def _add_updater(pending: CountersUpdate, tally: UpdaterTally) -> None:
    for outcome, count in (("fetched", tally.fetched), ("refused", tally.refused), ("failed", tally.failed)):
        pending.updater[outcome] = pending.updater.get(outcome, 0) + count
    pending.updater_downloads += tally.downloads
    if tally.last_failure is not None:
        pending.updater_failure = one_line(tally.last_failure, MAX_FAILURE_CHARS)
        pending.updater_failure_ms = tally.last_failure_ms


class _Since:
    """What a running total of one object added since it was last seen; a new object counts
    from zero."""

    def __init__(self) -> None:
        self._of: object | None = None
        self._seen = 0

    def added(self, of: object, total: int) -> int:
        seen = self._seen if of is self._of else 0
        self._of, self._seen = of, total
        return total - seen


def stale_after_trouble(
    report: TickReport, states: Mapping[str, AppState], now_ms: int, interval_ms: int
) -> list[str]:
    """The apps older than the interval (or never fetched) when the round had failed or
    rate-limited requests, didn't run for a backoff, or left such an app waiting for its next
    try after failures; empty otherwise."""
    stale = sorted(
        key
        for key, state in states.items()
        if state.fetched_ms is None or age_ms(state.fetched_ms, now_ms) > interval_ms
    )
    troubled = (
        report.round.failed > 0
        or report.round.rate_limited
        or report.backing_off
        or any(states[key].is_failing() for key in stale)
    )
    return stale if troubled else []


def once_trouble(
    report: TickReport,
    states: Mapping[str, AppState],
    backoff: Backoff,
    now_ms: int,
    interval_ms: int,
) -> str | None:
    """``--once``'s one line when it exits ``EXIT_STALE`` (None when it exits 0): what the round
    did, the backoff or the per-app waits that kept it from asking, each with when it ends, and
    the apps older than the interval."""
    stale = stale_after_trouble(report, states, now_ms, interval_ms)
    if not stale:
        return None
    whose = "the fleet's" if report.mode is PollMode.COORDINATED else "this host's"
    result = report.round
    if report.backing_off:
        what = [f"asked GitHub nothing: {whose} backoff {_backoff_end(backoff, now_ms)}"]
    elif result.requests() > 0:
        outcome = f"{result.failed} requests failed" if result.failed else "no request failed"
        what = [outcome + (", rate limited" if result.rate_limited else "")]
        if backoff.is_active(now_ms):
            what.append(f"{whose} backoff now {_backoff_end(backoff, now_ms)}")
    else:
        what = ["asked GitHub nothing"]
    # An app's own wait is named when it is what kept it from being asked: nothing was asked,
    # and the wait ends after any backoff.
    waited_until = backoff.until_ms if backoff.is_active(now_ms) and backoff.until_ms is not None else now_ms
    for key in stale if result.requests() == 0 else ():
        state = states[key]
        due = due_at_ms(state, interval_ms)
        if state.is_failing() and due is not None and due > waited_until:
            what.append(
                f"{key} waits for its next try until {format_ms(due)} (in {format_duration(due - now_ms)})"
                f" after {state.failures} failures"
            )
    return (
        f"Craft app releases: {'; '.join(what)}; {len(stale)} apps are older than the interval: "
        f"{', '.join(stale)}."
    )


def _backoff_end(backoff: Backoff, now_ms: int) -> str:
    if backoff.until_ms is None or not backoff.is_active(now_ms):
        return "has ended"
    return (
        f"lasts until {format_ms(backoff.until_ms)} (in {format_duration(backoff.until_ms - now_ms)}), "
        f"after {backoff.trouble} troubled rounds in a row"
    )
