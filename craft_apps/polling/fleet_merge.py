"""Takes what the fleet shared in Redis into this host's memory: newer entries, histories, backoff.

``FleetMerge(state, config, shared, checks, lists, publisher, relay, redis_log, clock)``:
``refresh()`` reads every app's entry and the backoff in one round trip, and the histories of
the apps that need them, keeps what is newer, relays the release controls and publishes; it
returns False when there is no fleet or Redis couldn't be read. ``merge_entry`` keeps what is
newer in one app's entry (True when its fetch is of another repository, left out).
"""

from __future__ import annotations

from dataclasses import replace

from craft_apps.controls.relay import ControlsRelay
from craft_apps.fleet.entry import SharedAppEntry
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppState, newer_wins
from craft_apps.polling.history_lists import HistoryLists
from craft_apps.polling.publish import Publisher
from craft_apps.polling.state import PollConfig, PollState
from craft_apps.polling.state_checks import StateChecks


class FleetMerge:
    def __init__(
        self,
        state: PollState,
        config: PollConfig,
        shared: SharedStore | None,
        checks: StateChecks,
        lists: HistoryLists,
        publisher: Publisher,
        relay: ControlsRelay,
        redis_log: RedisTroubleLog,
        clock: Clock,
    ) -> None:
        self.state = state
        self.config = config
        self.shared = shared
        self.checks = checks
        self.lists = lists
        self.publisher = publisher
        self.relay = relay  # the release controls, for the whole fleet
        self.redis_log = redis_log
        self.clock = clock

    def refresh(self, *, every_history: bool = False) -> bool:
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
            self.merge_entry(key, entry)
        needs = self.lists.needs_history()
        self._merge_histories(
            self.shared, [key for key in keys if every_history or self.lists.owes(key, needs)]
        )
        if backoff != self.state.backoff:
            self.state.backoff = backoff
            self.state.backoff_unwritten = True
        self._relay_controls()  # before the publish: the web processes apply them to what it brings
        self.publisher.publish()
        return True

    def _relay_controls(self) -> None:
        read = getattr(self.lists.needs_history, "controls_read", None)
        if read is None:
            return
        try:
            self.relay.relay(read, self.shared, self.clock.now_ms())
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())

    def _merge_histories(self, shared: SharedStore, keys: list[str]) -> None:
        """Takes the fleet's histories whose list fetch is newer than this host's (``newer_wins``),
        so a host started after the others knows them without asking GitHub."""
        try:
            found = shared.histories.read(keys)
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())
            return
        for key, one in zip(keys, found, strict=True):
            if one is not None:
                self.lists.take_shared(key, *one)

    def merge_entry(self, key: str, entry: SharedAppEntry | None) -> bool:
        """Takes what is newer in the app's fleet entry; True when its fetch is of another (or an
        unrecorded, unproven) repository, which is left out."""
        if entry is None:
            return False
        fetched = entry.fetched
        foreign = False
        repo = self.state.repos[key]
        if fetched is not None:
            shared = AppState(latest_release=fetched.latest_release, etag=fetched.etag, repo=fetched.repo)
            foreign = not shared.fetch_is_of(repo, self.config.web_url)
            if foreign:
                self.checks.report_foreign(key, fetched.repo, "Redis")
                entry = replace(entry, fetched=None)  # its failure fields are still the app's
        merged = merge_shared(self.state.memory[key], entry)
        if merged is not None:
            self.state.memory[key] = self.checks.checked(key, replace(merged, repo=repo))
            self.state.unwritten.add(key)
            self.lists.see_latest(key, self.state.memory[key].latest_release)
        return foreign


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
