"""Takes GitHub's answer about an app's latest release: into memory, the state file, the fleet.

``Answers(state, lists, updater_files, drops, publisher, shares, redis_log, clock)``:
``take(app, outcome, mode, report)`` keeps the answer all or nothing (a release, its ETag and
its fetch time change together; a 304 moves only the fetch time; a failure only the failure
fields; a 404 after a release keeps that release), publishes it, counts it in the report and
shares it, or marks it to be shared with its updater files; it returns the round's mode.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppSpec, PollMode
from craft_apps.kernel.instants import format_ms
from craft_apps.kernel.source import Failed, Fetched, FetchOutcome, NotModified, RateLimited
from craft_apps.polling.drops import DropLog
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.polling.history_lists import HistoryLists
from craft_apps.polling.publish import Publisher
from craft_apps.polling.state import POLLER_LOG, PollState, TickReport, count
from craft_apps.tauri.file_reads import UpdaterKeeper

logger = logging.getLogger(POLLER_LOG)


class Answers:
    """Takes each answer GitHub gives in a round: into memory, the state file and the fleet."""

    def __init__(
        self,
        state: PollState,
        lists: HistoryLists,
        updater_files: UpdaterKeeper,
        drops: DropLog,
        publisher: Publisher,
        shares: FleetShares | None,
        redis_log: RedisTroubleLog,
        clock: Clock,
    ) -> None:
        self.state = state
        self.lists = lists
        self.updater_files = updater_files
        self.drops = drops
        self.publisher = publisher
        self.shares = shares
        self.redis_log = redis_log
        self.clock = clock

    def take(self, app: AppSpec, outcome: FetchOutcome, mode: PollMode, report: TickReport) -> PollMode:
        now_ms = self.clock.now_ms()
        count(report.round, outcome)
        if isinstance(outcome, RateLimited):
            report.round.rate_limited = True
            report.round.retry_at_ms = outcome.retry_at_ms
            logger.warning(
                "GitHub rate limit reached asking about %s; retry after %s.",
                app.repo,
                format_ms(outcome.retry_at_ms) if outcome.retry_at_ms else "an unannounced time",
            )
            return mode
        self._remember(app, outcome, now_ms)
        if not isinstance(outcome, Failed):
            self.state.updater_owed.setdefault(app.key, False)
        self.state.unwritten.add(app.key)
        self.publisher.publish()
        if app.key not in self.state.unwritten:
            count(report.saved, outcome)
        if mode is not PollMode.COORDINATED or self.shares is None:
            return mode
        latest = self.state.memory[app.key].latest_release
        if isinstance(outcome, Fetched | NotModified) and latest and self.updater_files.due(latest, now_ms):
            self.state.share_owed[app.key] = outcome  # shared with its updater files, after the round
            return mode
        try:
            self.shares.answer(app.key, outcome, now_ms)
        except RedisTrouble as err:
            self.redis_log.failed(err, now_ms)
            return PollMode.STANDALONE
        self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        return mode

    def _remember(self, app: AppSpec, outcome: Fetched | NotModified | Failed, now_ms: int) -> None:
        """Takes an answer into memory, all or nothing per app (see the module)."""
        state = self.state.memory[app.key]
        if isinstance(outcome, Fetched):
            release, etag = outcome.release, outcome.etag
            if release is None and state.latest_release is not None:  # a 404 after a release
                release, etag = state.latest_release, state.etag
            if release is not None:
                release = self.updater_files.carried(release)
            self.state.memory[app.key] = replace(
                state, latest_release=release, etag=etag, fetched_ms=now_ms, repo=app.repo
            )
            self.lists.see_latest(app.key, release)
            self.drops.observed(app, outcome, release, now_ms)
        elif isinstance(outcome, NotModified):
            self.state.memory[app.key] = replace(state, fetched_ms=now_ms)
            self.drops.observed(app, outcome, state.latest_release, now_ms)
        else:
            failures = state.failures + 1 if state.is_failing() else 1
            self.state.memory[app.key] = replace(state, failed_ms=now_ms, failures=failures)
            logger.warning("Couldn't fetch the latest release of %s: %s", app.repo, outcome.reason)
            self.drops.observed(app, outcome, state.latest_release, now_ms)  # for want of credentials?
