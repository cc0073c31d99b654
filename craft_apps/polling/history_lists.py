"""Each app's release history as this host holds it, and GitHub's release list asked for it.

``HistoryLists(state, config, lister, rules, ...)``: ``ask`` asks an app's release list and
keeps it (True to go on with the round), ``ask_first`` makes the apps whose history never came
from a list due at once, ``take`` and ``take_shared`` keep a history read back from the host's
state file or the fleet, ``see_latest`` adds a latest release, ``owes`` says whose list is asked
this round. The rules for a history itself are ``polling.history``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppSpec, HistoryFetch, PollMode, Release, newer_wins, release_page_is_of
from craft_apps.kernel.source import (
    Failed,
    ListFetched,
    ListOutcome,
    RateLimited,
    ReleaseListSource,
    ReleaseRules,
)
from craft_apps.polling import history
from craft_apps.polling.drops import DropLog
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.polling.publish import Publisher
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.schedule import BETWEEN_REQUESTS_MS
from craft_apps.polling.state import POLLER_LOG, PollConfig, PollState, TickReport, count
from craft_apps.tauri.file_reads import UpdaterKeeper

logger = logging.getLogger(POLLER_LOG)


class HistoryLists:
    def __init__(
        self,
        state: PollState,
        config: PollConfig,
        lister: ReleaseListSource,
        rules: ReleaseRules,
        updater_files: UpdaterKeeper,
        drops: DropLog,
        requests: RefreshRequests,
        publisher: Publisher,
        shares: FleetShares | None,
        clock: Clock,
        needs_history: Callable[[], frozenset[str]],
    ) -> None:
        self.state = state
        self.config = config
        self.lister = lister
        self.rules = rules  # judges stored releases again
        self.updater_files = updater_files
        self.drops = drops
        self.requests = requests
        self.publisher = publisher
        self.shares = shares
        self.clock = clock
        self.needs_history = needs_history  # apps whose list is asked every round (beta, a control)
        self.owed = history.ListsOwed()  # every app's list, once per new release (polling.history)

    def ask_first(self, now_ms: int) -> None:
        """An app with a release whose history never came from GitHub's list (here or from the
        fleet) is asked for at once, as a refresh marked at this poller's first tick is: the
        fleet's claim makes one host ask its latest and its list, now rather than at its next
        due round, so a host that started recently knows the releases a yank falls back to. An
        app that came to need history (a release control, beta turned on) is marked at the
        instant its need was written, when ``needs_history`` gives them with its ``since`` (the
        database's ``HistoryApps`` does)."""
        started_ms = self.owed.started_ms(now_ms)
        marks = {key: started_ms for key in self.state.repos if self.owes(key, needs=frozenset())}
        since = getattr(self.needs_history, "since", None)
        if callable(since):
            self.needs_history()  # reads anew when its last read is old, as every round's ask
            marks.update(since())
        for key, needed_ms in marks.items():
            repo = self.state.repos.get(key)
            if repo is None or not history.never_listed(self.state.history_fetch.get(key), repo):
                continue
            # As a refresh marked at the instant the need was written: a request about the app
            # started since, by any host (its claim), answers it; one host of the fleet asks.
            self.requests.take(key, needed_ms, now_ms)

    def ask(self, app: AppSpec, mode: PollMode, report: TickReport) -> bool:
        """Asks GitHub's release list of an app that owes one (``owes``), after the round's
        latests; False to end the round."""
        if self.state.stopped() or not self.clock.sleep(BETWEEN_REQUESTS_MS / 1000):
            return False
        fetch = self.state.history_fetch.get(app.key)
        held = fetch is not None and fetch.repo == app.repo and app.key in self.state.history
        etag = fetch.etag if held and fetch is not None else None
        outcome = self.lister.fetch_releases(app.repo, etag, per_page=self.config.history_depth)
        now_ms = self.clock.now_ms()
        count(report.round, outcome)
        if isinstance(outcome, RateLimited):
            report.round.rate_limited = True
            report.round.retry_at_ms = outcome.retry_at_ms
            logger.warning("GitHub rate limit reached asking for the releases of %s.", app.repo)
            return False
        if isinstance(outcome, Failed):
            logger.warning("Couldn't fetch the release list of %s: %s", app.repo, outcome.reason)
            count(report.saved, outcome)
            return True
        self._keep(app, outcome, now_ms)
        self.publisher.publish()
        if app.key not in self.state.unwritten_histories:
            count(report.saved, outcome)
        reads_due = any(self.updater_files.due(r, now_ms) for r in self.state.history.get(app.key, ()))
        if mode is PollMode.COORDINATED and self.shares is not None and not reads_due:
            self.shares.history(app.key, now_ms)  # else after its updater files
        return True

    def _keep(self, app: AppSpec, outcome: ListOutcome, now_ms: int) -> None:
        """Keeps a list GitHub gave (or a 304's fetch time), its updater files read next."""
        if isinstance(outcome, ListFetched):
            for listed in outcome.releases:
                self.drops.observed_listed(app, listed.release, listed.dropped, now_ms)
            for line in outcome.refused:
                self.drops.refused_listed(app, line)
            listed_releases = [listed.release for listed in outcome.releases]
            self.state.history[app.key] = history.from_list(
                listed_releases, self.state.memory[app.key].latest_release, self.config.history_depth
            )
            self.state.history_fetch[app.key] = HistoryFetch(outcome.etag, now_ms, app.repo)
        else:
            self.state.history_fetch[app.key] = replace(self.state.history_fetch[app.key], fetched_ms=now_ms)
        self.owed.listed(app.key)
        self.fill(app.key)
        self.state.updater_owed[app.key] = True
        self.state.unwritten_histories.add(app.key)

    def take(self, key: str, releases: tuple[Release, ...], fetch: HistoryFetch | None) -> bool:
        """Takes a stored or shared history when it is the app's repository's (by its record,
        or else by every release's page), each release judged by today's rules."""
        repo = self.state.repos[key]
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
        self.state.history[key] = judged
        self.state.history_fetch[key] = replace(fetch or HistoryFetch(), repo=repo)
        if judged != releases:
            self.state.unwritten_histories.add(key)
        return True

    def take_shared(self, key: str, releases: tuple[Release, ...], fetch: HistoryFetch) -> None:
        """Takes a fleet's history whose list fetch is newer than this host's (``newer_wins``)."""
        mine = self.state.history_fetch.get(key)
        held = mine is not None and key in self.state.history
        if held and mine is not None and not newer_wins(mine.fetched_ms, fetch.fetched_ms, min_gap_ms=1):
            return
        if self.take(key, releases, fetch):
            self.owed.listed(key, fetch.fetched_ms)
            self.state.unwritten_histories.add(key)
            self.see_latest(key, self.state.memory[key].latest_release)

    def owes(self, key: str, needs: frozenset[str] | None = None) -> bool:
        """Whether the app's release list is asked this round: it needs history (``needs``,
        ``needs_history()`` when not given), or it owes one (``history.ListsOwed``)."""
        if key in (self.needs_history() if needs is None else needs):
            return True
        if not self.config.history_for_every_app:
            return False
        fetch = self.state.history_fetch.get(key) if key in self.state.history else None
        return self.owed.owes(key, self.state.memory[key].latest_release, fetch, self.state.repos[key])

    def see_latest(self, key: str, release: Release | None) -> None:
        """Every release seen through ``/releases/latest`` goes into the app's history."""
        if release is None:
            return
        before = self.state.history.get(key, ())
        if all(known.tag != release.tag for known in before):
            self.owed.saw_new(key, self.state.memory[key].fetched_ms)
        after = history.with_latest(before, release, self.config.history_depth)
        if after != before:
            self.state.history[key] = after
            self.state.history_fetch.setdefault(key, HistoryFetch(repo=self.state.repos[key]))
            self.state.unwritten_histories.add(key)

    def fill(self, key: str) -> None:
        """The app's history with the updater files read for each release."""
        releases = tuple(self.updater_files.carried(release) for release in self.state.history.get(key, ()))
        if key in self.state.history and releases != self.state.history[key]:
            self.state.history[key] = releases
            self.state.unwritten_histories.add(key)
