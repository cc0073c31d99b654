"""Once per change in the fleet: the first poller to set a change's Redis key purges it.

Every host's poller sees the same change within seconds of each other; without a guard each
would purge it. The key names the URL and the ETag it now serves, is set with ``SET NX`` and
expires after ``GUARD_TTL_MS``; a later change has another ETag, so another key. When Redis
can't be asked, this poller purges anyway (a purge twice costs the CDN little; a purge never
made leaves a yank at the edge until its copy is due), and says so once until Redis answers.
"""

from __future__ import annotations

import hashlib
import logging

import redis

from craft_apps.fleet.connection import describe_error

logger = logging.getLogger(__name__)

GUARD_TTL_MS = 10 * 60 * 1000  # far longer than hosts take to see the same change
GUARD_KEY = "cdn:purge:"  # after the fleet's key prefix


class OnceGuard:
    """Says whether this poller is the first of the fleet to purge a change."""

    def __init__(self, client: redis.Redis, key_prefix: str) -> None:
        self._client = client
        self._prefix = key_prefix + GUARD_KEY
        self._trouble: str | None = None

    def key(self, path: str, etag: str) -> str:
        return self._prefix + hashlib.sha256(f"{path}\n{etag}".encode()).hexdigest()[:32]

    def first(self, path: str, etag: str) -> bool:
        """True when no other poller took this change (or Redis can't say)."""
        try:
            taken = self._client.set(self.key(path, etag), "1", nx=True, px=GUARD_TTL_MS)
        except redis.RedisError as err:
            reason = describe_error(err)
            if self._trouble is None:
                logger.warning(
                    "Craft apps CDN purge: Redis can't guard a purge (%s); purging anyway.", reason
                )
            self._trouble = reason
            return True
        if self._trouble is not None:
            logger.info("Craft apps CDN purge: Redis guards purges again.")
            self._trouble = None
        return bool(taken)
