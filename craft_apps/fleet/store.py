"""The fleet's shared state on one Redis client, for one poller, one part per kind of key.

``SharedStore(client, hostname=...)`` takes a redis-py client and returns the parts callers
use: ``entries`` (each app's entry and the backoff), ``claims``, ``histories``, ``controls``,
with ``reads`` (why a key couldn't be read) and ``writes`` (the guarded writes) they share.
Every part raises ``RedisTrouble`` (``errors``), never a redis-py error.
"""

from __future__ import annotations

import redis

from craft_apps.conf import DEFAULT_REDIS_KEY_PREFIX
from craft_apps.fleet.claims import Claims
from craft_apps.fleet.controls import SharedControls
from craft_apps.fleet.entries import SharedEntries
from craft_apps.fleet.guarded_writes import GuardedWriter
from craft_apps.fleet.history import SharedHistories
from craft_apps.fleet.key_reads import KeyReader


class SharedStore:
    """The parts of the fleet's shared state, on one Redis client. Times must be positive Unix
    ms below 10**15 (``ValueError`` otherwise: a caller's bug, not Redis trouble)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        hostname: str,
        key_prefix: str = DEFAULT_REDIS_KEY_PREFIX,
        use_scripts: bool = True,
    ) -> None:
        """``use_scripts=False`` starts with WATCH/MULTI/EXEC, as after a refusal."""
        self.client = client
        self.key_prefix = key_prefix
        self.reads = KeyReader(client)
        self.writes = GuardedWriter(client, use_scripts=use_scripts)
        self.claims = Claims(self.writes, hostname=hostname, key_prefix=key_prefix)
        self.entries = SharedEntries(
            self.reads, self.writes, self.claims, hostname=hostname, key_prefix=key_prefix
        )
        self.histories = SharedHistories(self.reads, self.writes, key_prefix=key_prefix)
        self.controls = SharedControls(self.reads, self.writes, key_prefix=key_prefix)
