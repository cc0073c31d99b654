"""Reading the fleet's Redis keys in one round trip, and why a key could not be read.

``KeyReader.read_hashes(what, keys, decode)`` takes hash keys and a decoder and returns, in
order, what each decodes to (None when absent or unreadable). A key that can't be read is
logged once per distinct reason (``problems`` says why, ``unreadable`` counts them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import redis
from redis.exceptions import ResponseError

from craft_apps.fleet.errors import RedisOperation, RedisTrouble, redis_trouble

logger = logging.getLogger(__name__)

T = TypeVar("T")


def hash_reply(key: str, reply: object) -> tuple[Mapping[Any, Any], tuple[str, ...]]:
    """A hash from a pipeline reply, and what was wrong: a key of another type reads as an
    empty hash; any other error is trouble."""
    if isinstance(reply, ResponseError) and str(reply).startswith("WRONGTYPE"):
        return {}, ("it is not a hash",)
    if isinstance(reply, Exception):
        raise RedisTrouble.of(f"reading {key}", reply, RedisOperation.READ)
    if not isinstance(reply, Mapping):
        raise RedisTrouble(f"reading {key}: a {type(reply).__name__} instead of a hash", RedisOperation.READ)
    return reply, ()


class KeyReader:
    """Reads keys on one Redis client; remembers why each key's last read refused it."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._reported: dict[str, tuple[str, ...]] = {}
        self.unreadable = 0  # refusals logged (a key, a new reason): for the host's counters

    def pipelined(self, what: str, commands: Sequence[tuple[str, ...]]) -> list[object]:
        """The replies to ``commands``, sent in one round trip (none for no command)."""
        if not commands:
            return []
        with redis_trouble(what, RedisOperation.READ):
            pipe = self.client.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)  # type: ignore[no-untyped-call]
            replies = pipe.execute(raise_on_error=False)
        if len(replies) != len(commands):
            raise RedisTrouble(
                f"{what}: {len(replies)} replies to {len(commands)} commands", RedisOperation.READ
            )
        return list(replies)

    def read_hashes(
        self, what: str, keys: Sequence[str], decode: Callable[[Mapping[Any, Any]], T]
    ) -> list[T | None]:
        """What each hash of ``keys`` holds as ``decode`` reads it (a ValueError: unreadable),
        in order; None when absent or unreadable (logged once). One round trip."""
        replies = self.pipelined(what, [("HGETALL", key) for key in keys])
        found: list[T | None] = []
        for key, reply in zip(keys, replies, strict=True):
            fields, problems = hash_reply(key, reply)
            decoded = None
            if fields:
                try:
                    decoded = decode(fields)
                except ValueError as err:
                    problems = (*problems, str(err))
            self.report(key, problems)
            found.append(decoded)
        return found

    def problems(self, key: str) -> tuple[str, ...]:
        """Why the last read of ``key`` refused it; empty when it read well (or was absent)."""
        return self._reported.get(key, ())

    def report(self, key: str, problems: tuple[str, ...]) -> None:
        """Logs an unreadable key once per distinct reason, not on every read."""
        if self._reported.get(key, ()) == problems:
            return
        self._reported[key] = problems
        if problems:
            self.unreadable += 1
            logger.warning(
                "Craft app releases: ignoring what can't be read in Redis key %s (%s); "
                "it is never adopted, and the next write of the key replaces it.",
                key,
                "; ".join(problems),
            )
