"""Polling alone when Redis can't be used, and saying so without flooding the log.

``RedisTroubleLog.failed(err, now_ms)`` notes an error and returns whether it was logged: a
warning when trouble starts, then at most every ``WARN_EVERY_MS`` with the count not logged;
``succeeded(operation, now_ms)`` logs once, at info, when every operation that failed has worked
since, so a Redis that answers reads but refuses writes is one lasting trouble. It has no clock
of its own; its lines carry no credentials.
"""

from __future__ import annotations

import logging

from craft_apps.fleet.connection import describe_error
from craft_apps.fleet.errors import RedisOperation, RedisTrouble

logger = logging.getLogger(__name__)

WARN_EVERY_MS = 10 * 60 * 1000


class RedisTroubleLog:
    def __init__(self) -> None:
        self._failing_since_ms: int | None = None
        self._failing: set[RedisOperation] = set()
        self._last_warned_ms: int | None = None
        self._suppressed = 0
        self.errors = 0  # every Redis error noted, logged or not (for the host's counters)

    @property
    def is_failing(self) -> bool:
        return self._failing_since_ms is not None

    def failed(self, err: BaseException, now_ms: int) -> bool:
        """Notes a Redis error (a ``RedisTrouble`` says its operation; anything else counts as a
        read); returns whether it was logged."""
        self._failing.add(err.operation if isinstance(err, RedisTrouble) else RedisOperation.READ)
        self.errors += 1
        if self._failing_since_ms is None:
            self._failing_since_ms = now_ms
        last = self._last_warned_ms
        # A clock stepped back is no reason to stay silent for longer than the window.
        if last is not None and 0 <= now_ms - last < WARN_EVERY_MS:
            self._suppressed += 1
            return False
        unlogged = f" ({self._suppressed} similar errors not logged)" if self._suppressed else ""
        logger.warning(
            "Craft app releases: Redis unavailable (%s); polling GitHub on this host alone until it "
            "is back%s.",
            describe_error(err),
            unlogged,
        )
        self._last_warned_ms = now_ms
        self._suppressed = 0
        return True

    def succeeded(self, operation: RedisOperation, now_ms: int) -> None:
        """Notes that ``operation`` worked; logs the recovery once no failed operation is left."""
        self._failing.discard(operation)
        since = self._failing_since_ms
        if since is None or self._failing:
            return
        logger.info(
            "Craft app releases: Redis is back after %d s; coordinating with the fleet again.",
            max(0, now_ms - since) // 1000,
        )
        self._failing_since_ms = None
        self._last_warned_ms = None
        self._suppressed = 0
