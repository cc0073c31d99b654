"""``RedisTrouble``: the one error every Redis call of ``craft_apps.fleet`` raises.

``redis_trouble(what, operation)`` wraps a Redis call: what redis-py raises inside becomes a
``RedisTrouble`` of ``operation`` whose message is one line, without credentials, saying what
failed ("reading ...", "writing ..."). A ``RedisTrouble`` raised inside passes as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from craft_apps.fleet.connection import describe_error
from craft_apps.kernel.compat import StrEnum


class RedisOperation(StrEnum):
    """What failed: trouble with one operation ends only when that operation works again."""

    READ = "read"  # reading, or reaching Redis at all (whatever the command)
    WRITE = "write"  # a claim or a shared outcome (the guarded-write script or WATCH)
    BACKOFF = "backoff write"


class RedisTrouble(Exception):
    """Redis couldn't be used: unreachable, timed out, busy, out of memory, read-only, loading,
    a command denied, or an answer that makes no sense. One line, no credentials."""

    def __init__(self, message: str, operation: RedisOperation) -> None:
        super().__init__(message)
        self.operation = operation

    @classmethod
    def of(cls, what: str, err: BaseException, operation: RedisOperation) -> RedisTrouble:
        """``err`` while ``what``. Not reaching Redis (refused, reset, timed out, loading) is the
        same trouble whatever the command, so it counts as a read: any read that works ends it.
        An answer refusing the command (OOM, READONLY, NOPERM, ...) belongs to ``operation``."""
        unreachable = isinstance(err, RedisConnectionError | RedisTimeoutError | OSError)
        return cls(f"{what}: {describe_error(err)}", RedisOperation.READ if unreachable else operation)


# What redis-py raises when Redis can't be used: its own errors, a socket's, and bytes a client
# that decodes answers can't read as UTF-8.
REDIS_FAILURES = (RedisError, OSError, UnicodeDecodeError)


@contextmanager
def redis_trouble(what: str, operation: RedisOperation) -> Iterator[None]:
    """Turns what redis-py raises inside into ``RedisTrouble`` of ``operation``, said to have
    happened ``what``; a ``RedisTrouble`` raised inside passes as it is."""
    try:
        yield
    except REDIS_FAILURES as err:
        raise RedisTrouble.of(what, err, operation) from err
