"""One host's polling loop: keeps every app fresh, alone or with the fleet through Redis.

Each tick: take the fleet's newer entries into memory (one pipelined Redis round trip), stop if
the fleet or this host is backing off, then ask GitHub about each due app, one at a time with a
second between requests, and stop at the first rate limit. With the fleet, right before asking
about an app it reads the app's entry again and claims it, so hosts ticking together don't all
ask. Every outcome is kept in memory, published to the host's state file (which the endpoint
serves) and shared with the fleet. A refresh asked for ahead of schedule (``requests``, fed by
``wakeup``) makes an app due too, by ``schedule.requested_due``, and is claimed with a shorter
window.

Invariants: per app all or nothing (a release, its ETag and its fetch time change together; a
304 moves only the fetch time; a failure only the failure fields); nothing goes back in time;
Redis trouble never stops the host polling alone with the same rules; nothing raises out of a
tick. Every write to the state file carries the lease's fence, and a refused write ends the
tick with ``fence_lost`` set so the runner steps down. What couldn't be written is kept and
written again, and the round's summary counts only what was saved. ``held_state`` is what the
lease makes the file anew from if it is deleted.

A 404 for an app that had a release keeps that release (and its ETag) served, with its fetch
time moved: GitHub losing a repository (made private, deleted, a token that lost access) must
not empty the launchers' answer; ``drops`` warns once and the health rule ``gone`` reports it.
What each answer dropped or said (assets not served, a rename) goes to ``drops`` too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from enum import Enum
from itertools import chain

from craft_apps.conf import DEFAULT_GITHUB_WEB_URL
from craft_apps.fleet.claims import CLAIM_WINDOW_MS
from craft_apps.fleet.entry import SharedAppEntry
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.host.store import (
    Fence,
    FenceRejected,
    HistoryFetch,
    StateSnapshot,
    StateStore,
    StateUnavailable,
)
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import (
    AppSpec,
    AppState,
    Backoff,
    PollMode,
    Release,
    newer_wins,
    release_page_is_of,
)
from craft_apps.kernel.instants import format_ms
from craft_apps.kernel.source import (
    Failed,
    Fetched,
    FetchOutcome,
    ListFetched,
    ListOutcome,
    NotModified,
    RateLimited,
    ReleaseListSource,
    ReleaseRules,
    ReleaseSource,
    Source,
    UpdaterSource,
)
from craft_apps.polling import history
from craft_apps.polling.controls_relay import ControlsRelay
from craft_apps.polling.drops import DropLog
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.schedule import (
    BETWEEN_REQUESTS_MS,
    REFRESH_GAP_MS,
    RoundResult,
    backoff_after,
    is_due,
    last_answer_ms,
)
from craft_apps.polling.updater import READERS, RELEASES_PER_ROUND, UpdaterKeeper

logger = logging.getLogger(__name__)


class Turn(Enum):
    """What the fleet's entry and a claim say about asking GitHub for an app right now."""

    ASK = "ask"  # claimed: this host asks
    SKIP = "skip"  # not due, or another host claimed it
    STOP = "stop"  # the fleet is backing off: end the round


@dataclass(frozen=True)
class PollConfig:
    apps: tuple[AppSpec, ...]
    interval_ms: int
    max_backoff_ms: int
    web_url: str = DEFAULT_GITHUB_WEB_URL  # where release pages and files must be (``GITHUB_WEB_URL``)
    history_depth: int = history.DEFAULT_DEPTH  # releases kept per app; the list's per_page
    # Every app's release list, once per new release and at start-up (``history.ListsOwed``);
    # off, only the apps that need history have it.
    history_for_every_app: bool = False


@dataclass
class TickReport:
    mode: PollMode
    round: RoundResult = field(default_factory=RoundResult)  # what GitHub answered
    saved: RoundResult = field(default_factory=RoundResult)  # of those, what the state file took
    backing_off: bool = False

    def unsaved(self) -> int:
        """Answers the host's state file did not take (they stay in memory, written later)."""
        answered = self.round.fetched + self.round.unchanged + self.round.failed
        return answered - self.saved.requests()


class Poller:
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
        self.lister: ReleaseListSource = github  # the release list: the apps' history
        self.needs_history = needs_history  # apps whose list is asked every round (beta, a control)
        self.history: dict[str, tuple[Release, ...]] = {}
        self.history_fetch: dict[str, HistoryFetch] = {}
        self._history_unpublished: set[str] = set()
        self.lists = history.ListsOwed()  # every app's list, once per new release (polling.history)
        self.rules: ReleaseRules = github  # judges stored releases again (``_rejudged``)
        self.host = host
        self.controls_relay = ControlsRelay(host.state_dir)  # the controls, for the whole fleet
        self.fence = fence
        self.clock = clock
        self.shared = shared
        self.still_leader = still_leader
        self.on_asked = on_asked  # told (apps done, apps due) after each app of a round (a terminal's)
        self.memory: dict[str, AppState] = {app.key: AppState(repo=app.repo) for app in config.apps}
        self._repos = {app.key: app.repo for app in config.apps}
        self.backoff = Backoff()
        self.redis_log = RedisTroubleLog()
        self.fence_lost = False
        self.requests = RefreshRequests()  # refreshes asked for ahead of schedule (polling.wakeup)
        self.drops = DropLog(host, config.web_url)  # what answers dropped, said once (polling.drops)
        # Each release's Tauri updater files, read once per release (polling.updater).
        self.updater_files = UpdaterKeeper(
            github if isinstance(github, UpdaterSource) else None, config.interval_ms, config.max_backoff_ms
        )
        self._unpublished: set[str] = set()
        # Apps whose updater files are read after the round (True: with history), then shared.
        self._updater_owed: dict[str, bool] = {}
        self._share_owed: dict[str, Fetched | NotModified] = {}
        self._backoff_unpublished = False
        self._write_trouble = False  # logged once until a write succeeds again
        self._foreign_reported: dict[str, str | None] = {}  # app key -> the other repository logged

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
                own = self._own(key, stored, "the host's state file")
                if own != stored:
                    self._unpublished.add(key)  # written back: recorded, or replaced by nothing
                self.memory[key] = self._rejudged(key, own)
            if key in snapshot.history:
                self._take_history(key, snapshot.history[key], snapshot.history_fetches.get(key))
        self.backoff = snapshot.backoff

    def held_state(self) -> StateSnapshot:
        """Everything this poller knows about the apps and the backoff (memory holds the fleet's
        entries too, merged every tick): what a deleted state file is made anew from. Safe to
        call from the lease keeper's thread (a copy of a dict of frozen values)."""
        known = {
            key: state for key, state in dict(self.memory).items() if state != AppState(repo=self._repos[key])
        }
        return StateSnapshot(0, known, self.backoff, dict(self.history), dict(self.history_fetch))

    def warm_start(self) -> bool:
        """Takes the fleet's entries into memory and publishes them, without asking GitHub."""
        return self._refresh_from_shared(every_history=True)

    # -- one tick -------------------------------------------------------------------------

    def tick(self) -> TickReport:
        shared_readable = self._refresh_from_shared()
        mode = PollMode.choose(self.shared is not None, shared_readable)
        report = TickReport(mode=mode)
        self._publish()
        now_ms = self.clock.now_ms()
        if self.fence_lost:
            return report
        if self.backoff.is_active(now_ms):
            report.backing_off = True
            return report
        self._ask_first_lists(now_ms)
        due = [app for app in self.config.apps if self._is_due(app.key, now_ms)]
        if not due:
            return report
        report.mode = self._poll_round(due, mode, report)
        if report.round.requests() == 0 or self.fence_lost:
            return report
        self._update_backoff(report.round, report.mode)
        logger.log(
            logging.WARNING if report.unsaved() else logging.INFO, "%s", _summary(report, self.backoff)
        )
        return report

    def _poll_round(self, due: Sequence[AppSpec], mode: PollMode, report: TickReport) -> PollMode:
        result = report.round
        lists: list[AppSpec] = []  # the apps whose release list is asked after the round's latests
        for done, app in enumerate(due, 1):
            if self.fence_lost or not self.still_leader():
                break
            if mode is PollMode.COORDINATED:
                try:
                    turn = self._check_shared(app.key)
                except RedisTrouble as err:
                    self.redis_log.failed(err, self.clock.now_ms())
                    mode = PollMode.STANDALONE
                    turn = Turn.ASK if self._is_due(app.key, self.clock.now_ms()) else Turn.SKIP
                if turn is Turn.SKIP:
                    continue
                if turn is Turn.STOP:
                    break
            if result.requests() > 0 and not self.clock.sleep(BETWEEN_REQUESTS_MS / 1000):
                break  # asked to stop
            self.requests.started(app.key, self.clock.now_ms())
            outcome = self.github.fetch_latest_release(app.repo, self.memory[app.key].etag)
            mode = self._take_outcome(app, outcome, mode, report)
            if self.on_asked is not None:
                self.on_asked(done, len(due))
            if isinstance(outcome, RateLimited):
                break  # the rest of the round would be refused too
            if self._owes_list(app.key):
                lists.append(app)
        return self._ask_lists(lists, mode, report)

    def _ask_lists(self, apps: Sequence[AppSpec], mode: PollMode, report: TickReport) -> PollMode:
        """Asks the release lists the round's apps owe once every due app's latest is served
        and its updater files read, so a host's first round serves every latest as fast as one
        without lists; then the listed releases' updater files, but not those of an app whose
        latest's read failed this round (its history is shared without them)."""
        now_ms = self.clock.now_ms()
        reading = [app.key for app in apps if self._latest_files(app.key, now_ms)]
        mode = self._read_updater_files(mode)
        if report.round.rate_limited:
            return mode
        for app in apps:
            if not self._ask_list(app, mode, report):
                break
        for key in reading:
            failed = self._latest_files(key, None) and self._updater_owed.pop(key, None) is not None
            if failed and mode is PollMode.COORDINATED and self.shared is not None:
                self._share_history(self.shared, key, now_ms)
        return self._read_updater_files(mode)

    def _latest_files(self, key: str, now_ms: int | None) -> bool:
        """Whether the app's latest release has updater files not read yet (due at ``now_ms``)."""
        latest = self.memory[key].latest_release
        if latest is None:
            return False
        return self.updater_files.needs(latest) if now_ms is None else self.updater_files.due(latest, now_ms)

    def _ask_first_lists(self, now_ms: int) -> None:
        """An app with a release whose history never came from GitHub's list (here or from the
        fleet) is asked for at once, as a refresh marked at this poller's first tick is: the
        fleet's claim makes one host ask its latest and its list, now rather than at its next
        due round, so a host that started recently knows the releases a yank falls back to. An
        app that came to need history (a release control, beta turned on) is marked at the
        instant its need was written, when ``needs_history`` gives them with its ``since`` (the
        database's ``HistoryApps`` does)."""
        started_ms = self.lists.started_ms(now_ms)
        marks = {key: started_ms for key in self._repos if self._owes_list(key, needs=frozenset())}
        since = getattr(self.needs_history, "since", None)
        if callable(since):
            self.needs_history()  # reads anew when its last read is old, as every round's ask
            marks.update(since())
        for key, needed_ms in marks.items():
            repo = self._repos.get(key)
            if repo is None or not history.never_listed(self.history_fetch.get(key), repo):
                continue
            # As a refresh marked at the instant the need was written: a request about the app
            # started since, by any host (its claim), answers it; one host of the fleet asks.
            self.requests.take(key, needed_ms, now_ms)

    def _ask_list(self, app: AppSpec, mode: PollMode, report: TickReport) -> bool:
        """Asks GitHub's release list of an app that owes one (``_owes_list``), after the
        round's latests; False to end the round."""
        if self.fence_lost or not self.still_leader() or not self.clock.sleep(BETWEEN_REQUESTS_MS / 1000):
            return False
        fetch = self.history_fetch.get(app.key)
        etag = (
            fetch.etag if fetch is not None and fetch.repo == app.repo and app.key in self.history else None
        )
        outcome = self.lister.fetch_releases(app.repo, etag, per_page=self.config.history_depth)
        now_ms = self.clock.now_ms()
        _count(report.round, outcome)
        if isinstance(outcome, RateLimited):
            report.round.rate_limited = True
            report.round.retry_at_ms = outcome.retry_at_ms
            logger.warning("GitHub rate limit reached asking for the releases of %s.", app.repo)
            return False
        if isinstance(outcome, Failed):
            logger.warning("Couldn't fetch the release list of %s: %s", app.repo, outcome.reason)
            _count(report.saved, outcome)
            return True
        if isinstance(outcome, ListFetched):
            for listed in outcome.releases:
                self.drops.observed_listed(app, listed.release, listed.dropped, now_ms)
            for line in outcome.refused:
                self.drops.refused_listed(app, line)
            listed_releases = [listed.release for listed in outcome.releases]
            self.history[app.key] = history.from_list(
                listed_releases, self.memory[app.key].latest_release, self.config.history_depth
            )
            self.history_fetch[app.key] = HistoryFetch(outcome.etag, now_ms, app.repo)
        else:
            self.history_fetch[app.key] = replace(self.history_fetch[app.key], fetched_ms=now_ms)
        self.lists.listed(app.key)
        self._filled_history(app.key)
        self._updater_owed[app.key] = True
        self._history_unpublished.add(app.key)
        self._publish()
        if app.key not in self._history_unpublished:
            _count(report.saved, outcome)
        reads_due = any(self.updater_files.due(r, now_ms) for r in self.history.get(app.key, ()))
        if mode is PollMode.COORDINATED and self.shared is not None and not reads_due:
            self._share_history(self.shared, app.key, now_ms)  # else after its updater files
        return True

    def _share_history(self, shared: SharedStore, key: str, now_ms: int) -> None:
        fetch = self.history_fetch.get(key, HistoryFetch(repo=self._repos[key]))
        try:
            shared.histories.write(key, self.history.get(key, ()), fetch)
        except RedisTrouble as err:
            self.redis_log.failed(err, now_ms)
        else:
            self.redis_log.succeeded(RedisOperation.WRITE, now_ms)

    def _take_history(self, key: str, releases: tuple[Release, ...], fetch: HistoryFetch | None) -> bool:
        """Takes a stored or shared history when it is the app's repository's (by its record,
        or else by every release's page), each release judged by today's rules."""
        repo = self._repos[key]
        if fetch is not None and fetch.repo is not None:
            if fetch.repo.lower() != repo.lower():
                return False
        elif not all(release_page_is_of(r, repo, self.config.web_url) for r in releases):
            return False
        judged = tuple(
            self.updater_files.carried(j)
            for r in releases
            if (j := self.rules.rejudge(r, repo, self.config.web_url)) is not None
        )
        self.history[key] = judged
        self.history_fetch[key] = replace(fetch or HistoryFetch(), repo=repo)
        if judged != releases:
            self._history_unpublished.add(key)
        return True

    def _owes_list(self, key: str, needs: frozenset[str] | None = None) -> bool:
        """Whether the app's release list is asked this round: it needs history (``needs``,
        ``needs_history()`` when not given), or it owes one (``history.ListsOwed``)."""
        if key in (self.needs_history() if needs is None else needs):
            return True
        if not self.config.history_for_every_app:
            return False
        fetch = self.history_fetch.get(key) if key in self.history else None
        return self.lists.owes(key, self.memory[key].latest_release, fetch, self._repos[key])

    def _see_latest(self, key: str, release: Release | None) -> None:
        """Every release seen through ``/releases/latest`` goes into the app's history."""
        if release is None:
            return
        before = self.history.get(key, ())
        if all(known.tag != release.tag for known in before):
            self.lists.saw_new(key, self.memory[key].fetched_ms)
        after = history.with_latest(before, release, self.config.history_depth)
        if after != before:
            self.history[key] = after
            self.history_fetch.setdefault(key, HistoryFetch(repo=self._repos[key]))
            self._history_unpublished.add(key)

    def _check_shared(self, key: str) -> Turn:
        """Right before asking GitHub: the app's latest shared entry, then a claim."""
        assert self.shared is not None
        entries, backoff = self.shared.entries.read([key])
        now_ms = self.clock.now_ms()
        self.redis_log.succeeded(RedisOperation.READ, now_ms)
        foreign = self._merge_entry(key, entries[0])
        self._publish()  # another host's answer read here is served now, even if this host skips
        self.backoff = backoff
        if self.fence_lost or backoff.is_active(now_ms):
            return Turn.STOP
        requested = self._requested_due(key, now_ms)
        if not requested and not self._is_due(key, now_ms):
            return Turn.SKIP
        # A claim by a host that shares another repository's fetch for this key (other APPS)
        # says nothing about ours: ask at once rather than wait out its window.
        window = 0 if foreign else REFRESH_GAP_MS if requested else CLAIM_WINDOW_MS
        claimed = self.shared.claims.claim(key, now_ms, window)
        self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        if not claimed and requested:
            self.requests.claimed_elsewhere(key, now_ms)
        return Turn.ASK if claimed else Turn.SKIP

    def _take_outcome(
        self, app: AppSpec, outcome: FetchOutcome, mode: PollMode, report: TickReport
    ) -> PollMode:
        now_ms = self.clock.now_ms()
        _count(report.round, outcome)
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
            self._updater_owed.setdefault(app.key, False)
        self._unpublished.add(app.key)
        self._publish()
        if app.key not in self._unpublished:
            _count(report.saved, outcome)
        if mode is not PollMode.COORDINATED or self.shared is None:
            return mode
        latest = self.memory[app.key].latest_release
        if isinstance(outcome, Fetched | NotModified) and latest and self.updater_files.due(latest, now_ms):
            self._share_owed[app.key] = outcome  # shared with its updater files, after the round
            return mode
        try:
            self._share(self.shared, app.key, outcome, now_ms)
        except RedisTrouble as err:
            self.redis_log.failed(err, now_ms)
            return PollMode.STANDALONE
        self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        return mode

    def _remember(self, app: AppSpec, outcome: Fetched | NotModified | Failed, now_ms: int) -> None:
        """Takes an answer into memory, all or nothing per app (see the module's invariants)."""
        state = self.memory[app.key]
        if isinstance(outcome, Fetched):
            release, etag = outcome.release, outcome.etag
            if release is None and state.latest_release is not None:  # a 404 after a release
                release, etag = state.latest_release, state.etag
            if release is not None:
                release = self.updater_files.carried(release)
            self.memory[app.key] = replace(
                state, latest_release=release, etag=etag, fetched_ms=now_ms, repo=app.repo
            )
            self._see_latest(app.key, release)
            self.drops.observed(app, outcome, release, now_ms)
        elif isinstance(outcome, NotModified):
            self.memory[app.key] = replace(state, fetched_ms=now_ms)
            self.drops.observed(app, outcome, state.latest_release, now_ms)
        else:
            failures = state.failures + 1 if state.is_failing() else 1
            self.memory[app.key] = replace(state, failed_ms=now_ms, failures=failures)
            logger.warning("Couldn't fetch the latest release of %s: %s", app.repo, outcome.reason)
            self.drops.observed(app, outcome, state.latest_release, now_ms)  # for want of credentials?

    def _carry_updater(self, key: str) -> bool:
        """Gives the app's latest release the updater files read for it (``polling.updater``);
        True when it got them now."""
        release = self.memory[key].latest_release
        carried = None if release is None else self.updater_files.carried(release)
        if carried is None or carried == release:
            return False
        self.memory[key] = replace(self.memory[key], latest_release=carried)
        self._see_latest(key, carried)
        return True

    def _filled_history(self, key: str) -> None:
        """The app's history with the updater files read for each release."""
        releases = tuple(self.updater_files.carried(release) for release in self.history.get(key, ()))
        if key in self.history and releases != self.history[key]:
            self.history[key] = releases
            self._history_unpublished.add(key)

    def _read_updater_files(self, mode: PollMode) -> PollMode:
        """Reads the updater files of the apps the round answered, once every answer is
        published, each app's in a thread of its own (``updater.READERS`` at once), so a
        stalled download holds back no other app: each app is served, and with the fleet
        shared, as soon as its own files are read. Every thread has ended when this returns."""
        owed, self._updater_owed = self._updater_owed, {}
        shares, self._share_owed = self._share_owed, {}
        if not owed or self.fence_lost or not self.still_leader():
            return mode
        now_ms = self.clock.now_ms()
        reads = {key: self._updater_reads(key, with_history, now_ms) for key, with_history in owed.items()}
        with ThreadPoolExecutor(min(READERS, len(owed)), thread_name_prefix="craft-apps-updater") as pool:
            running = {
                pool.submit(self._read_releases, key, releases, now_ms): key
                for key, releases in reads.items()
                if releases
            }
            ready = [key for key, releases in reads.items() if not releases]
            for key in chain(ready, (running[future] for future in as_completed(running))):
                if self.fence_lost or not self.still_leader():
                    for future in running:
                        future.cancel()  # the reads not started yet; the running ones end
                    break
                mode = self._took_reads(key, owed[key], shares.get(key), mode)
        return mode

    def _updater_reads(self, key: str, with_history: bool, now_ms: int) -> list[Release]:
        """The app's releases whose updater files are read this round, in order: its latest
        when due, then (when its list was asked) up to ``RELEASES_PER_ROUND`` of its history."""
        latest = self.memory[key].latest_release
        reads = [latest] if latest is not None and self.updater_files.due(latest, now_ms) else []
        if with_history:
            tags = {release.tag for release in reads}
            due = [
                r
                for r in self.history.get(key, ())
                if r.tag not in tags and self.updater_files.due(r, now_ms)
            ]
            reads += due[:RELEASES_PER_ROUND]
        return reads

    def _read_releases(self, key: str, releases: Sequence[Release], now_ms: int) -> None:
        """Reads the releases' updater files one after another, up to the first that fails
        (in a reader thread: it touches ``updater_files`` only)."""
        try:
            for release in releases:
                if self.updater_files.fill(key, release, now_ms) is None:
                    return
        except Exception:  # nothing raises out of a tick; the release is served without them
            logger.exception("Craft app releases: reading the updater files of %s failed unexpectedly.", key)

    def _took_reads(
        self, key: str, with_history: bool, outcome: Fetched | NotModified | None, mode: PollMode
    ) -> PollMode:
        """Serves the app with the updater files just read, then shares it with the fleet."""
        if self._carry_updater(key):
            self._unpublished.add(key)
        self._filled_history(key)
        self._publish()
        return self._share_read(key, outcome, with_history, mode)

    def _share_read(
        self, key: str, outcome: Fetched | NotModified | None, with_history: bool, mode: PollMode
    ) -> PollMode:
        """Shares what waited for the app's updater files: its answer and its history."""
        if mode is not PollMode.COORDINATED or self.shared is None:
            return mode
        now_ms = self.clock.now_ms()
        if outcome is not None:
            try:
                answered_ms = self.memory[key].fetched_ms or now_ms
                self._share(self.shared, key, outcome, answered_ms, filled=True)
            except RedisTrouble as err:
                self.redis_log.failed(err, now_ms)
                return PollMode.STANDALONE
            self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        if with_history:
            self._share_history(self.shared, key, now_ms)
        return mode

    def _share(
        self,
        shared: SharedStore,
        key: str,
        outcome: Fetched | NotModified | Failed,
        now_ms: int,
        *,
        filled: bool = False,
    ) -> None:
        """Shares an answer just taken into memory with the fleet. A 200 or a 304 goes with what
        this host holds now, the store deciding how much of it to write (after a 304, the whole
        entry only when Redis has none it can read, or after the release's updater files were
        read); a failure with its count in a row."""
        kept = self.memory[key]
        if isinstance(outcome, Fetched) or filled:
            shared.entries.write_fetched(key, kept.latest_release, kept.etag, now_ms, self._repos[key])
        elif isinstance(outcome, NotModified):
            shared.entries.write_unchanged(key, kept.latest_release, kept.etag, now_ms, self._repos[key])
        else:
            shared.entries.write_failure(key, failed_ms=now_ms, failures=kept.failures)

    def _update_backoff(self, result: RoundResult, mode: PollMode) -> None:
        previous = self.backoff
        self.backoff = backoff_after(
            result,
            previous,
            self.clock.now_ms(),
            interval_ms=self.config.interval_ms,
            max_backoff_ms=self.config.max_backoff_ms,
            random_value=self.clock.random(),
        )
        if self.backoff == previous:
            return
        self._backoff_unpublished = True
        self._publish()
        if mode is PollMode.COORDINATED and self.shared is not None:
            try:
                self.shared.entries.write_backoff(self.backoff)
            except RedisTrouble as err:
                self.redis_log.failed(err, self.clock.now_ms())
            else:
                self.redis_log.succeeded(RedisOperation.BACKOFF, self.clock.now_ms())

    # -- memory, the fleet and the host's state file -----------------------------------------

    def _is_due(self, key: str, now_ms: int) -> bool:
        return is_due(self.memory[key], now_ms, self.config.interval_ms) or self._requested_due(key, now_ms)

    def _requested_due(self, key: str, now_ms: int) -> bool:
        last_claim = self.shared.claims.last_ms(key) if self.shared is not None else None
        # The last answer's time outlives a restart (the state file), the requests' don't.
        return self.requests.due(key, last_claim, self.backoff, now_ms, last_answer_ms(self.memory[key]))

    def _refresh_from_shared(self, *, every_history: bool = False) -> bool:
        """Takes the fleet's newer entries and backoff, and the newer histories of the apps
        that need history (of every app with ``every_history``, at start-up); False when there
        is no fleet or Redis couldn't be read (the tick then works alone)."""
        if self.shared is None:
            return False
        keys = [app.key for app in self.config.apps]
        try:
            entries, backoff = self.shared.entries.read(keys)
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())
            return False
        self.redis_log.succeeded(RedisOperation.READ, self.clock.now_ms())
        for key, entry in zip(keys, entries, strict=True):
            self._merge_entry(key, entry)
        needs = self.needs_history()
        self._merge_shared_histories([key for key in keys if every_history or self._owes_list(key, needs)])
        if backoff != self.backoff:
            self.backoff = backoff
            self._backoff_unpublished = True
        self._relay_controls()  # before the publish: the web processes apply them to what it brings
        self._publish()
        return True

    def _relay_controls(self) -> None:
        read = getattr(self.needs_history, "controls_read", None)
        if read is None:
            return
        try:
            self.controls_relay.relay(read, self.shared, self.clock.now_ms())
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())

    def _merge_shared_histories(self, keys: list[str]) -> None:
        """Takes the fleet's histories whose list fetch is newer than this host's (``newer_wins``),
        so a host started after the others knows them without asking GitHub."""
        assert self.shared is not None
        try:
            shared = self.shared.histories.read(keys)
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())
            return
        for key, found in zip(keys, shared, strict=True):
            if found is None:
                continue
            releases, fetch = found
            mine = self.history_fetch.get(key)
            held = mine is not None and key in self.history
            if held and mine is not None and not newer_wins(mine.fetched_ms, fetch.fetched_ms, min_gap_ms=1):
                continue
            if self._take_history(key, releases, fetch):
                self.lists.listed(key, fetch.fetched_ms)
                self._history_unpublished.add(key)
                self._see_latest(key, self.memory[key].latest_release)

    def _merge_entry(self, key: str, entry: SharedAppEntry | None) -> bool:
        """Takes what is newer in the app's fleet entry; True when its fetch is of another (or an
        unrecorded, unproven) repository, which is left out."""
        if entry is None:
            return False
        fetched = entry.fetched
        foreign = False
        if fetched is not None:
            shared = AppState(latest_release=fetched.latest_release, etag=fetched.etag, repo=fetched.repo)
            foreign = not shared.fetch_is_of(self._repos[key], self.config.web_url)
            if foreign:
                self._report_foreign(key, fetched.repo, "Redis")
                entry = replace(entry, fetched=None)  # its failure fields are still the app's
        merged = merge_shared(self.memory[key], entry)
        if merged is not None:
            self.memory[key] = self._rejudged(key, replace(merged, repo=self._repos[key]))
            self._unpublished.add(key)
            self._see_latest(key, self.memory[key].latest_release)
        return foreign

    def _own(self, key: str, state: AppState, where: str) -> AppState:
        """``state`` as the app's (``AppState.as_state_of``): a fetch of another repository, or
        of an unrecorded one whose release doesn't show it is the app's, is dropped, so the app
        is asked about at once and without that fetch's ETag. Logged once per other repository."""
        repo = self._repos[key]
        own = state.as_state_of(repo, self.config.web_url)
        if own == AppState(repo=repo) and state.has_fetch():
            self._report_foreign(key, state.repo, where)
        return own

    def _report_foreign(self, key: str, other: str | None, where: str) -> None:
        if key in self._foreign_reported and self._foreign_reported[key] == other:
            return
        self._foreign_reported[key] = other
        repo = self._repos[key]
        if other is None:  # written by 0.2 or a reference pod, and its release doesn't show whose
            logger.warning(
                "Craft app releases: %s holds a fetch for %s that records no repository and "
                "can't be shown to be of %s; not serving or sharing it as %s's, asking GitHub "
                "about %s.",
                where,
                key,
                repo,
                key,
                repo,
            )
            return
        logger.warning(
            "Craft app releases: %s holds a release of %s for %s, not of %s (APPS changed, or a "
            "host with other APPS shares this Redis); not serving or sharing it as %s's, "
            "asking GitHub about %s.",
            where,
            other,
            key,
            repo,
            key,
            repo,
        )

    def _rejudged(self, key: str, state: AppState) -> AppState:
        """``state`` whose release passes today's rules (the source's ``rejudge``); one they
        refuse whole is served as none and asked about again without an ETag. A state that
        changed is marked to be written back, so the endpoint serves it too."""
        release = state.latest_release
        if release is None:
            return state
        carried = self.updater_files.carried(release)
        if carried is not release:
            self._unpublished.add(key)
            state, release = replace(state, latest_release=carried), carried
        judged = self.rules.rejudge(
            release, self.drops.moved_to(key) or self._repos[key], self.config.web_url
        )
        if judged == release:
            return state
        logger.warning("Craft app releases: %s's stored release broke a rule and was mended.", key)
        self._unpublished.add(key)
        if judged is None:
            return replace(state, latest_release=None, etag=None)
        return replace(state, latest_release=judged)

    def _publish(self) -> None:
        """Writes what changed to the host's state file; what couldn't be written is retried on
        the next call. A refused fence means another poller took over: stop writing."""
        if self.fence_lost:
            return
        try:
            # The histories before the apps: a reader between the two writes never sees an app
            # fetched without the releases its controls fall back to (a new host's first answer).
            for key in sorted(self._history_unpublished):
                fetch = self.history_fetch.get(key, HistoryFetch())
                self.host.put_history(
                    key,
                    self.history.get(key, ()),
                    fence=self.fence,
                    etag=fetch.etag,
                    fetched_ms=fetch.fetched_ms,
                    repo=self._repos[key],
                )
                self._history_unpublished.discard(key)
            for key in sorted(self._unpublished):
                self.host.put_app(key, self.memory[key], fence=self.fence)
                self._unpublished.discard(key)
            if self._backoff_unpublished:
                self.host.put_backoff(self.backoff, fence=self.fence)
                self._backoff_unpublished = False
        except FenceRejected as err:
            self.fence_lost = True
            logger.error("Craft app releases: another poller took over this state directory: %s", err)
        except StateUnavailable as err:
            if not self._write_trouble:
                self._write_trouble = True
                logger.warning(
                    "Craft app releases: couldn't write the host's state file (kept in memory, "
                    "written again at every change until it works): %s",
                    err,
                )
        else:
            if self._write_trouble:
                self._write_trouble = False
                logger.info("Craft app releases: the host's state file is written again: %s", self.host.path)


def merge_shared(state: AppState, entry: SharedAppEntry) -> AppState | None:
    """``state`` with what is newer in a fleet entry, or None when nothing is."""
    merged = state
    fetched = entry.fetched
    if fetched is not None and newer_wins(state.fetched_ms, fetched.fetched_ms, min_gap_ms=1):
        merged = replace(
            merged,
            latest_release=fetched.latest_release,
            etag=fetched.etag,
            fetched_ms=fetched.fetched_ms,
        )
    failure = entry.failure
    if failure is not None and newer_wins(state.failed_ms, failure.failed_ms, min_gap_ms=1):
        merged = replace(merged, failed_ms=failure.failed_ms, failures=failure.failures)
    return None if merged is state else merged


def _count(result: RoundResult, outcome: FetchOutcome | ListOutcome) -> None:
    if isinstance(outcome, Fetched | ListFetched):
        result.fetched += 1
    elif isinstance(outcome, NotModified):
        result.unchanged += 1
    elif isinstance(outcome, Failed):
        result.failed += 1


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
