"""Reads the updater files of the releases a round answered, each app's in a thread of its own.

``UpdaterReads(state, updater_files, lists, publisher, shares, redis_log, clock)``: ``read(mode)``
reads the files of the apps marked in ``state.updater_owed``, serves each app with them as soon
as its own are read, shares it with the fleet, and returns the round's mode (alone after Redis
trouble). ``unread`` says whether an app's latest release has files not read yet. What a
release's files are and when they are read again is ``tauri.file_reads``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from itertools import chain

from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import PollMode, Release
from craft_apps.kernel.source import Fetched, NotModified
from craft_apps.polling.fleet_shares import FleetShares
from craft_apps.polling.history_lists import HistoryLists
from craft_apps.polling.publish import Publisher
from craft_apps.polling.state import POLLER_LOG, PollState
from craft_apps.tauri.file_reads import READERS, RELEASES_PER_ROUND, UpdaterKeeper

logger = logging.getLogger(POLLER_LOG)


class UpdaterReads:
    """Reads the updater files a round owes, serves each app with them and shares it."""

    def __init__(
        self,
        state: PollState,
        updater_files: UpdaterKeeper,
        lists: HistoryLists,
        publisher: Publisher,
        shares: FleetShares | None,
        redis_log: RedisTroubleLog,
        clock: Clock,
    ) -> None:
        self.state = state
        self.updater_files = updater_files
        self.lists = lists
        self.publisher = publisher
        self.shares = shares
        self.redis_log = redis_log
        self.clock = clock

    def unread(self, key: str, now_ms: int | None) -> bool:
        """Whether the app's latest release has updater files not read yet (due at ``now_ms``)."""
        latest = self.state.memory[key].latest_release
        if latest is None:
            return False
        return self.updater_files.needs(latest) if now_ms is None else self.updater_files.due(latest, now_ms)

    def read(self, mode: PollMode) -> PollMode:
        """Reads the updater files of the apps the round answered, once every answer is
        published, each app's in a thread of its own (``updater.READERS`` at once), so a
        stalled download holds back no other app: each app is served, and with the fleet
        shared, as soon as its own files are read. Every thread has ended when this returns."""
        owed, self.state.updater_owed = self.state.updater_owed, {}
        shares, self.state.share_owed = self.state.share_owed, {}
        if not owed or self.state.stopped():
            return mode
        now_ms = self.clock.now_ms()
        reads = {key: self._releases(key, with_history, now_ms) for key, with_history in owed.items()}
        with ThreadPoolExecutor(min(READERS, len(owed)), thread_name_prefix="craft-apps-updater") as pool:
            running = {
                pool.submit(self._read_releases, key, releases, now_ms): key
                for key, releases in reads.items()
                if releases
            }
            ready = [key for key, releases in reads.items() if not releases]
            for key in chain(ready, (running[future] for future in as_completed(running))):
                if self.state.stopped():
                    for future in running:
                        future.cancel()  # the reads not started yet; the running ones end
                    break
                mode = self._took(key, owed[key], shares.get(key), mode)
        return mode

    def _releases(self, key: str, with_history: bool, now_ms: int) -> list[Release]:
        """The app's releases whose updater files are read this round, in order: its latest
        when due, then (when its list was asked) up to ``RELEASES_PER_ROUND`` of its history."""
        latest = self.state.memory[key].latest_release
        reads = [latest] if latest is not None and self.updater_files.due(latest, now_ms) else []
        if with_history:
            tags = {release.tag for release in reads}
            due = [
                r
                for r in self.state.history.get(key, ())
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

    def _took(
        self, key: str, with_history: bool, outcome: Fetched | NotModified | None, mode: PollMode
    ) -> PollMode:
        """Serves the app with the updater files just read, then shares it with the fleet."""
        if self._carry(key):
            self.state.unwritten.add(key)
        self.lists.fill(key)
        self.publisher.publish()
        return self._share(key, outcome, with_history, mode)

    def _share(
        self, key: str, outcome: Fetched | NotModified | None, with_history: bool, mode: PollMode
    ) -> PollMode:
        """Shares what waited for the app's updater files: its answer and its history."""
        if mode is not PollMode.COORDINATED or self.shares is None:
            return mode
        now_ms = self.clock.now_ms()
        if outcome is not None:
            try:
                answered_ms = self.state.memory[key].fetched_ms or now_ms
                self.shares.answer(key, outcome, answered_ms, filled=True)
            except RedisTrouble as err:
                self.redis_log.failed(err, now_ms)
                return PollMode.STANDALONE
            self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        if with_history:
            self.shares.history(key, now_ms)
        return mode

    def _carry(self, key: str) -> bool:
        """Gives the app's latest release the updater files read for it (``tauri.file_reads``);
        True when it got them now."""
        release = self.state.memory[key].latest_release
        carried = None if release is None else self.updater_files.carried(release)
        if carried is None or carried == release:
            return False
        self.state.memory[key] = replace(self.state.memory[key], latest_release=carried)
        self.lists.see_latest(key, carried)
        return True
