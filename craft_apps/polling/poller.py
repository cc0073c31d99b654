"""One host's polling tick (``Poller``): keeps every app fresh, alone or with the fleet in Redis.

``Poller(config, github, host, fence, clock, shared, ...)``: ``tick()`` runs one round of named
steps and returns a ``TickReport``: take the fleet's newer entries (``fleet_merge``), stop while
backing off, ask each due app's latest (``due_apps``, ``answers``), then the release lists and
updater files owed (``history_lists``, ``updater_reads``), and set the backoff. Each step writes
to the host's state file through ``publish`` and shares with the fleet through ``fleet_shares``.
``load_host_state`` reads the state file back at start; ``held_state`` is what a deleted one is made from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from craft_apps.controls.relay import ControlsRelay
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.host.store import Fence, StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppSpec, AppState, Backoff, PollMode
from craft_apps.kernel.instants import format_ms
from craft_apps.kernel.source import RateLimited, ReleaseSource, Source, UpdaterSource
from craft_apps.polling.answers import Answers
from craft_apps.polling.drops import DropLog
from craft_apps.polling.due_apps import DueApps, Turn
from craft_apps.polling.fleet_merge import FleetMerge
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.polling.history_lists import HistoryLists
from craft_apps.polling.publish import Publisher
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.schedule import BETWEEN_REQUESTS_MS, backoff_after
from craft_apps.polling.state import POLLER_LOG, PollConfig, PollState, TickReport
from craft_apps.polling.state_checks import StateChecks
from craft_apps.polling.updater_reads import UpdaterReads
from craft_apps.tauri.file_reads import UpdaterKeeper

__all__ = ["PollConfig", "Poller", "TickReport"]

logger = logging.getLogger(POLLER_LOG)


class Poller:
    """Each tick: take the fleet's newer entries into memory (one pipelined Redis round trip),
    stop if the fleet or this host is backing off, then ask GitHub about each due app, one at a
    time with a second between requests, and stop at the first rate limit. With the fleet, right
    before asking about an app it reads the app's entry again and claims it, so hosts ticking
    together don't all ask. Every outcome is kept in memory, published to the host's state file
    (which the endpoint serves) and shared with the fleet. A refresh asked for ahead of schedule
    (``requests``, fed by ``wakeup``) makes an app due too, by ``schedule.requested_due``, and
    is claimed with a shorter window.

    Invariants: per app all or nothing (a release, its ETag and its fetch time change together;
    a 304 moves only the fetch time; a failure only the failure fields); nothing goes back in
    time; Redis trouble never stops the host polling alone with the same rules; nothing raises
    out of a tick. Every write to the state file carries the lease's fence, and a refused write
    ends the tick with ``fence_lost`` set so the runner steps down. What couldn't be written is
    kept and written again, and the round's summary counts only what was saved. ``held_state``
    is what the lease makes the file anew from if it is deleted.

    A 404 for an app that had a release keeps that release (and its ETag) served, with its fetch
    time moved: GitHub losing a repository (made private, deleted, a token that lost access)
    must not empty the launchers' answer; ``drops`` warns once and the health rule ``gone``
    reports it. What each answer dropped or said (assets not served, a rename) goes to ``drops``.
    """

    def __init__(
        self,
        *,
        config: PollConfig,
        github: Source,
        host: StateStore,
        fence: Fence,
        clock: Clock,
        shared: SharedStore | None = None,
        still_leader: Callable[[], bool] = lambda: True,
        needs_history: Callable[[], frozenset[str]] = lambda: frozenset(),
        on_asked: Callable[[int, int], None] | None = None,
    ) -> None:
        self.config = config
        self.github: ReleaseSource = github  # asked every round (tests wrap it to watch or delay it)
        self.host = host
        self.fence = fence
        self.clock = clock
        self.shared = shared
        self.on_asked = on_asked  # told (apps done, apps due) after each app of a round (a terminal's)
        self.state = PollState.of(config, still_leader)
        self.memory = self.state.memory
        self.history = self.state.history
        self.history_fetch = self.state.history_fetch
        self.redis_log = RedisTroubleLog()
        self.requests = RefreshRequests()  # refreshes asked for ahead of schedule (polling.wakeup)
        self.drops = DropLog(host, config.web_url)  # what answers dropped, said once (polling.drops)
        # Each release's Tauri updater files, read once per release (tauri.file_reads).
        self.updater_files = UpdaterKeeper(
            github if isinstance(github, UpdaterSource) else None, config.interval_ms, config.max_backoff_ms
        )
        self._make_steps(github, needs_history)

    def _make_steps(self, github: Source, needs_history: Callable[[], frozenset[str]]) -> None:
        """The round's steps, each handed the state and the parts it uses."""
        state, config, clock, log = self.state, self.config, self.clock, self.redis_log
        files, drops, shared, requests = self.updater_files, self.drops, self.shared, self.requests
        self.publisher = publisher = Publisher(self.host, self.fence, state)
        self.shares = shares = None if shared is None else FleetShares(shared, state, log)
        self.checks = checks = StateChecks(state, config, github, files, drops)
        self.lists = lists = HistoryLists(
            state, config, github, github, files, drops, requests, publisher, shares, clock, needs_history
        )
        relay = ControlsRelay(self.host.state_dir)  # the controls, for the whole fleet
        self.fleet = FleetMerge(state, config, shared, checks, lists, publisher, relay, log, clock)
        self.due = DueApps(state, config, shared, requests, self.fleet, publisher, log, clock)
        self.answers = Answers(state, lists, files, drops, publisher, shares, log, clock)
        self.updater_reads = UpdaterReads(state, files, lists, publisher, shares, log, clock)

    @property
    def needs_history(self) -> Callable[[], frozenset[str]]:
        """The apps whose release list is asked every round (beta, a release control)."""
        return self.lists.needs_history

    @needs_history.setter
    def needs_history(self, needs: Callable[[], frozenset[str]]) -> None:
        self.lists.needs_history = needs

    @property
    def backoff(self) -> Backoff:
        return self.state.backoff

    @property
    def fence_lost(self) -> bool:
        """Another poller took the state directory over: the runner steps down."""
        return self.state.fence_lost

    # -- start-up -------------------------------------------------------------------------

    def load_host_state(self) -> None:
        """Takes back what this host knew before a restart: ETags, fetch times, failures and the
        backoff, so a restarted poller revalidates instead of fetching and skips fresh apps."""
        self.drops.load()  # first: a renamed repository's stored release is judged as the new one's
        try:
            snapshot = self.host.read()
        except StateUnavailable as err:
            logger.warning("Craft app releases: starting without the host's state: %s", err)
            return
        for key in self.memory:
            if key in snapshot.apps:
                stored = snapshot.apps[key]
                own = self.checks.own(key, stored, "the host's state file")
                if own != stored:
                    self.state.unwritten.add(key)  # written back: recorded, or replaced by nothing
                self.memory[key] = self.checks.checked(key, own)
            if key in snapshot.history:
                self.lists.take(key, snapshot.history[key], snapshot.history_fetches.get(key))
        self.state.backoff = snapshot.backoff

    def held_state(self) -> StateSnapshot:
        """Everything this poller knows about the apps and the backoff (memory holds the fleet's
        entries too, merged every tick): what a deleted state file is made anew from. Safe to
        call from the lease keeper's thread (a copy of a dict of frozen values)."""
        repos = self.state.repos
        known = {key: state for key, state in dict(self.memory).items() if state != AppState(repo=repos[key])}
        return StateSnapshot(0, known, self.backoff, dict(self.history), dict(self.history_fetch))

    def warm_start(self) -> bool:
        """Takes the fleet's entries into memory and publishes them, without asking GitHub."""
        return self.fleet.refresh(every_history=True)

    # -- one tick -------------------------------------------------------------------------

    def tick(self) -> TickReport:
        shared_readable = self.fleet.refresh()
        mode = PollMode.choose(self.shared is not None, shared_readable)
        report = TickReport(mode=mode)
        self.publisher.publish()
        now_ms = self.clock.now_ms()
        if self.fence_lost:
            return report
        if self.backoff.is_active(now_ms):
            report.backing_off = True
            return report
        self.lists.ask_first(now_ms)
        due = [app for app in self.config.apps if self.due.is_due(app.key, now_ms)]
        if not due:
            return report
        report.mode = self._poll_round(due, mode, report)
        if report.round.requests() == 0 or self.fence_lost:
            return report
        self._update_backoff(report)
        logger.log(
            logging.WARNING if report.unsaved() else logging.INFO, "%s", _summary(report, self.backoff)
        )
        return report

    def _poll_round(self, due: Sequence[AppSpec], mode: PollMode, report: TickReport) -> PollMode:
        lists: list[AppSpec] = []  # the apps whose release list is asked after the round's latests
        for done, app in enumerate(due, 1):
            if self.state.stopped():
                break
            turn, mode = self.due.turn(app.key, mode)
            if turn is Turn.SKIP:
                continue
            if turn is Turn.STOP:
                break
            if report.round.requests() > 0 and not self.clock.sleep(BETWEEN_REQUESTS_MS / 1000):
                break  # asked to stop
            self.requests.started(app.key, self.clock.now_ms())
            outcome = self.github.fetch_latest_release(app.repo, self.memory[app.key].etag)
            mode = self.answers.take(app, outcome, mode, report)
            if self.on_asked is not None:
                self.on_asked(done, len(due))
            if isinstance(outcome, RateLimited):
                break  # the rest of the round would be refused too
            if self.lists.owes(app.key):
                lists.append(app)
        return self._ask_lists(lists, mode, report)

    def _ask_lists(self, apps: Sequence[AppSpec], mode: PollMode, report: TickReport) -> PollMode:
        """Asks the release lists the round's apps owe once every due app's latest is served
        and its updater files read, so a host's first round serves every latest as fast as one
        without lists; then the listed releases' updater files, but not those of an app whose
        latest's read failed this round (its history is shared without them)."""
        now_ms = self.clock.now_ms()
        reading = [app.key for app in apps if self.updater_reads.unread(app.key, now_ms)]
        mode = self.updater_reads.read(mode)
        if report.round.rate_limited:
            return mode
        for app in apps:
            if not self.lists.ask(app, mode, report):
                break
        for key in reading:
            failed = (
                self.updater_reads.unread(key, None) and self.state.updater_owed.pop(key, None) is not None
            )
            if failed and mode is PollMode.COORDINATED and self.shares is not None:
                self.shares.history(key, now_ms)
        return self.updater_reads.read(mode)

    def _update_backoff(self, report: TickReport) -> None:
        previous = self.backoff
        self.state.backoff = backoff_after(
            report.round,
            previous,
            self.clock.now_ms(),
            interval_ms=self.config.interval_ms,
            max_backoff_ms=self.config.max_backoff_ms,
            random_value=self.clock.random(),
        )
        if self.backoff == previous:
            return
        self.state.backoff_unwritten = True
        self.publisher.publish()
        if report.mode is PollMode.COORDINATED and self.shared is not None:
            try:
                self.shared.entries.write_backoff(self.backoff)
            except RedisTrouble as err:
                self.redis_log.failed(err, self.clock.now_ms())
            else:
                self.redis_log.succeeded(RedisOperation.BACKOFF, self.clock.now_ms())


def _summary(report: TickReport, backoff: Backoff) -> str:
    """The round in one line, counting only the answers the host's state file took."""
    result, saved = report.round, report.saved
    text = (
        f"Craft app releases ({report.mode.value}): {saved.fetched} fetched, "
        f"{saved.unchanged} unchanged, {saved.failed} failed"
    )
    if report.unsaved():
        text += f", {report.unsaved()} not saved (the host's state file can't be written; kept in memory)"
    if result.rate_limited:
        text += ", rate limited"
    if backoff.until_ms is not None:
        text += f"; backing off until {format_ms(backoff.until_ms)}"
    return text + "."
