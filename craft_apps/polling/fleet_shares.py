"""Shares what this host learned with the fleet through Redis: an app's answer, its history.

``FleetShares(shared, state, redis_log)``: ``answer`` writes an answer just taken into memory
(and raises ``RedisTrouble``: the round then works alone); ``history`` writes an app's release
history and its list fetch, logging Redis trouble rather than raising it.
"""

from __future__ import annotations

from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.domain import HistoryFetch
from craft_apps.kernel.source import Failed, Fetched, NotModified
from craft_apps.polling.state import PollState


class FleetShares:
    """Writes an app's answer or release history to the fleet's Redis."""

    def __init__(self, shared: SharedStore, state: PollState, redis_log: RedisTroubleLog) -> None:
        self.shared = shared
        self.state = state
        self.redis_log = redis_log

    def answer(
        self, key: str, outcome: Fetched | NotModified | Failed, now_ms: int, *, filled: bool = False
    ) -> None:
        """Shares an answer just taken into memory with the fleet. A 200 or a 304 goes with what
        this host holds now, the store deciding how much of it to write (after a 304, the whole
        entry only when Redis has none it can read, or after the release's updater files were
        read); a failure with its count in a row."""
        kept, repo = self.state.memory[key], self.state.repos[key]
        if isinstance(outcome, Fetched) or filled:
            self.shared.entries.write_fetched(key, kept.latest_release, kept.etag, now_ms, repo)
        elif isinstance(outcome, NotModified):
            self.shared.entries.write_unchanged(key, kept.latest_release, kept.etag, now_ms, repo)
        else:
            self.shared.entries.write_failure(key, failed_ms=now_ms, failures=kept.failures)

    def history(self, key: str, now_ms: int) -> None:
        """Shares the app's release history and its list fetch."""
        fetch = self.state.history_fetch.get(key, HistoryFetch(repo=self.state.repos[key]))
        try:
            self.shared.histories.write(key, self.state.history.get(key, ()), fetch)
        except RedisTrouble as err:
            self.redis_log.failed(err, now_ms)
        else:
            self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
