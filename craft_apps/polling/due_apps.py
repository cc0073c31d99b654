"""Which apps are due this round and, with the fleet, whether this host asks GitHub about one.

``DueApps(state, config, shared, requests, merge, publisher, redis_log, clock)``: ``is_due``
says whether an app is due (fresh no more, or a refresh was asked for: ``requested``); ``turn``
reads the app's fleet entry again right before asking and claims it, so hosts ticking together
don't all ask, and returns a ``Turn`` with the round's mode (alone after Redis trouble).
"""

from __future__ import annotations

from enum import Enum

from craft_apps.fleet.claims import CLAIM_WINDOW_MS
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import PollMode
from craft_apps.polling.fleet_merge import FleetMerge
from craft_apps.polling.publish import Publisher
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.schedule import REFRESH_GAP_MS, is_due, last_answer_ms
from craft_apps.polling.state import PollConfig, PollState


class Turn(Enum):
    """What the fleet's entry and a claim say about asking GitHub for an app right now."""

    ASK = "ask"  # claimed: this host asks
    SKIP = "skip"  # not due, or another host claimed it
    STOP = "stop"  # the fleet is backing off: end the round


class DueApps:
    def __init__(
        self,
        state: PollState,
        config: PollConfig,
        shared: SharedStore | None,
        requests: RefreshRequests,
        merge: FleetMerge,
        publisher: Publisher,
        redis_log: RedisTroubleLog,
        clock: Clock,
    ) -> None:
        self.state = state
        self.interval_ms = config.interval_ms
        self.shared = shared
        self.requests = requests
        self.merge = merge
        self.publisher = publisher
        self.redis_log = redis_log
        self.clock = clock

    def is_due(self, key: str, now_ms: int) -> bool:
        return is_due(self.state.memory[key], now_ms, self.interval_ms) or self.requested(key, now_ms)

    def requested(self, key: str, now_ms: int) -> bool:
        """Whether a refresh asked for ahead of schedule makes the app due now."""
        last_claim = self.shared.claims.last_ms(key) if self.shared is not None else None
        # The last answer's time outlives a restart (the state file), the requests' don't.
        last_answer = last_answer_ms(self.state.memory[key])
        return self.requests.due(key, last_claim, self.state.backoff, now_ms, last_answer)

    def turn(self, key: str, mode: PollMode) -> tuple[Turn, PollMode]:
        """With the fleet, whether this host asks about the app now; alone after Redis trouble."""
        if mode is not PollMode.COORDINATED:
            return Turn.ASK, mode
        try:
            return self._claim(key), mode
        except RedisTrouble as err:
            self.redis_log.failed(err, self.clock.now_ms())
            return (Turn.ASK if self.is_due(key, self.clock.now_ms()) else Turn.SKIP), PollMode.STANDALONE

    def _claim(self, key: str) -> Turn:
        """Right before asking GitHub: the app's latest shared entry, then a claim."""
        assert self.shared is not None
        entries, backoff = self.shared.entries.read([key])
        now_ms = self.clock.now_ms()
        self.redis_log.succeeded(RedisOperation.READ, now_ms)
        foreign = self.merge.merge_entry(key, entries[0])
        self.publisher.publish()  # another host's answer read here is served now, even if this host skips
        self.state.backoff = backoff
        if self.state.fence_lost or backoff.is_active(now_ms):
            return Turn.STOP
        requested = self.requested(key, now_ms)
        if not requested and not self.is_due(key, now_ms):
            return Turn.SKIP
        # A claim by a host that shares another repository's fetch for this key (other APPS)
        # says nothing about ours: ask at once rather than wait out its window.
        window = 0 if foreign else REFRESH_GAP_MS if requested else CLAIM_WINDOW_MS
        claimed = self.shared.claims.claim(key, now_ms, window)
        self.redis_log.succeeded(RedisOperation.WRITE, now_ms)
        if not claimed and requested:
            self.requests.claimed_elsewhere(key, now_ms)
        return Turn.ASK if claimed else Turn.SKIP
