"""Refreshes asked for ahead of schedule, shared through Redis so the whole fleet hears of them.

``SharedDueMarks`` holds the ``{prefix}due`` hash (app key -> when a refresh was asked, Unix ms),
the ``{prefix}due:seq`` counter every poller reads each second, and the ``{prefix}deliveries``
sorted set: ``mark`` marks apps due, ``marks`` and ``seq`` read them, ``take_delivery`` returns
False for a webhook delivery seen in the last day and keeps only the newest ``keep``. A mark is
only a hint: the schedule stays the backstop. Every method raises ``RedisTrouble``, never a
redis-py error (docs/fleet.md, docs/webhook.md).
"""

from __future__ import annotations

import redis

from craft_apps.conf import DEFAULT_REDIS_KEY_PREFIX
from craft_apps.fleet.entry import decode_time
from craft_apps.fleet.errors import RedisOperation, redis_trouble

DUE_TTL_MS = 24 * 3600 * 1000
DELIVERY_TTL_MS = 24 * 3600 * 1000


def due_key(prefix: str) -> str:
    return f"{prefix}due"


def due_seq_key(prefix: str) -> str:
    return f"{prefix}due:seq"


def deliveries_key(prefix: str) -> str:
    return f"{prefix}deliveries"


class SharedDueMarks:
    """The fleet's due marks and taken deliveries on one Redis client."""

    def __init__(self, client: redis.Redis, *, key_prefix: str = DEFAULT_REDIS_KEY_PREFIX) -> None:
        self._client = client
        self._prefix = key_prefix

    @property
    def due_key(self) -> str:
        return due_key(self._prefix)

    @property
    def seq_key(self) -> str:
        return due_seq_key(self._prefix)

    def take_delivery(self, delivery: str, now_ms: int, *, keep: int) -> bool:
        """Records a webhook delivery; False when it is among the last ``keep`` taken less than
        a day ago. All at once: a day's old members go first, so one taken over a day ago is
        taken again; then the set is cut to its newest ``keep``."""
        key = deliveries_key(self._prefix)
        with redis_trouble(f"writing {key}", RedisOperation.WRITE):
            pipe = self._client.pipeline(transaction=True)
            pipe.zremrangebyscore(key, "-inf", f"({now_ms - DELIVERY_TTL_MS}")
            pipe.zadd(key, {delivery: now_ms}, nx=True)
            pipe.zremrangebyrank(key, 0, -(max(1, keep) + 1))
            pipe.pexpire(key, DELIVERY_TTL_MS)
            added = pipe.execute()[1]
        return bool(added)

    def mark(self, app_keys: list[str], requested_ms: int) -> None:
        """Marks ``app_keys`` due as of ``requested_ms`` and moves the counter, all at once."""
        if not app_keys:
            return
        with redis_trouble(f"writing {self.due_key}", RedisOperation.WRITE):
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(self.due_key, mapping=dict.fromkeys(app_keys, str(requested_ms)))
            pipe.pexpire(self.due_key, DUE_TTL_MS)
            pipe.incr(self.seq_key)
            pipe.pexpire(self.seq_key, DUE_TTL_MS)
            pipe.execute()

    def seq(self) -> bytes | None:
        """The counter as stored (None when absent): it moved when it differs from the last one."""
        with redis_trouble(f"reading {self.seq_key}", RedisOperation.READ):
            value = self._client.get(self.seq_key)
        return value if isinstance(value, bytes) else None if value is None else str(value).encode()

    def marks(self) -> dict[str, int]:
        """Every app marked due in the last day, with when; unreadable fields are left out."""
        with redis_trouble(f"reading {self.due_key}", RedisOperation.READ):
            raw = self._client.hgetall(self.due_key)
        if not isinstance(raw, dict):
            return {}
        marks: dict[str, int] = {}
        for name, value in raw.items():
            app = name.decode("utf-8", errors="replace") if isinstance(name, bytes) else str(name)
            requested_ms = decode_time(value)
            if requested_ms is not None:
                marks[app] = requested_ms
        return marks
