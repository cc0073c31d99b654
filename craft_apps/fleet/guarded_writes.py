"""Guarded writes to the fleet's Redis: a newer time wins, decided on the server.

``GuardedWriter.apply(write)`` takes a ``GuardedWrite`` and returns whether it was written: by
``guarded_write.lua`` (run by its SHA), or, for good once Redis refuses scripts (logged once),
by WATCH/MULTI/EXEC with ``decide_write``, the script's rule in Python. Neither leaves a write
half-done, and a hash of another format version is replaced only by a full write.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import resources

import redis
from redis.exceptions import NoPermissionError, ResponseError, WatchError
from redis.typing import EncodableT, FieldT

from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.connection import describe_error
from craft_apps.fleet.errors import RedisOperation, RedisTrouble, redis_trouble
from craft_apps.kernel.domain import newer_wins

logger = logging.getLogger(__name__)

WATCH_ATTEMPTS = 3
# Times and gaps stay below 10**15 so the script's Lua numbers (doubles) compare them exactly.
MAX_SCRIPT_NUMBER = 10**15 - 1

_STORED_TIME = re.compile(rb"-?[0-9]{1,15}")
_SCRIPTING_COMMAND = r"(?:evalsha_ro|evalsha|eval_ro|eval|script(?:\|[a-z_-]+)?)"
_NOPERM_ON_SCRIPTING = re.compile(rf"'{_SCRIPTING_COMMAND}' command", re.IGNORECASE)
_UNKNOWN_SCRIPTING = re.compile(
    rf"(?:unknown|unsupported) command [`']{_SCRIPTING_COMMAND}[`']", re.IGNORECASE
)
_SCRIPTING_OFF = re.compile(
    r"scripting (?:is )?(?:disabled|not (?:allowed|enabled|supported))", re.IGNORECASE
)
_ERROR_CODE = re.compile(r"[A-Z]+")


@dataclass(frozen=True, slots=True)
class GuardedWrite:
    """Write ``fields`` to hash ``key`` unless its ``time_field`` plus ``min_gap_ms`` is after
    ``time_ms``, or ``required_etag`` is set and the hash's ``etag`` differs. ``full``: the
    fields are a whole entry, which may replace a hash of another format version."""

    key: str
    time_field: str
    time_ms: int
    fields: Mapping[str, str]
    min_gap_ms: int = 0
    required_etag: str | None = None
    full: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.time_ms <= MAX_SCRIPT_NUMBER or not 0 <= self.min_gap_ms <= MAX_SCRIPT_NUMBER:
            raise ValueError(f"time {self.time_ms} or gap {self.min_gap_ms} out of range")
        if shared_entry.FIELD_VERSION not in self.fields or len(self.fields) < 2:
            raise ValueError("a guarded write needs its format version and fields to write")

    @property
    def version(self) -> str:
        return self.fields[shared_entry.FIELD_VERSION]


@dataclass(frozen=True, slots=True)
class StoredKey:
    """What the rule reads of the key: its Redis type and three raw fields (None: absent)."""

    kind: str = "none"  # as TYPE answers: none, hash, string, list, ...
    version: bytes | str | None = None
    time: bytes | str | None = None
    etag: bytes | str | None = None


class WriteEffect(Enum):
    NOTHING = "nothing"  # what is stored wins
    HSET = "hset"  # set every field: the key is absent or a hash of this format
    HSET_KEEPING_VERSION = "hset keeping v"  # a partial write on another format: all but `v`
    REPLACE = "replace"  # delete the key, then set every field


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def decide_write(write: GuardedWrite, stored: StoredKey) -> WriteEffect:
    """The script's rule: what ``write`` does to a key holding ``stored``."""
    is_hash = stored.kind == "hash"
    if write.required_etag and _as_bytes(stored.etag if is_hash else None) != write.required_etag.encode():
        return WriteEffect.NOTHING
    foreign = is_hash and _as_bytes(stored.version) != write.version.encode()
    stored_time = _as_bytes(stored.time) if is_hash and not foreign else None
    if (
        stored_time is not None
        and _STORED_TIME.fullmatch(stored_time)
        and not newer_wins(int(stored_time), write.time_ms, min_gap_ms=write.min_gap_ms)
    ):
        return WriteEffect.NOTHING
    if stored.kind not in ("hash", "none") or (foreign and write.full):
        return WriteEffect.REPLACE
    return WriteEffect.HSET_KEEPING_VERSION if foreign else WriteEffect.HSET


def is_script_refusal(err: Exception) -> bool:
    """Whether Redis refused to run the script itself, as opposed to being unavailable (which
    the WATCH path couldn't get past either) or a command inside the script being denied."""
    if not isinstance(err, ResponseError):
        return False  # connection trouble, timeouts, LOADING and auth aren't answers about scripts
    text = str(err)
    code = err.status_code
    if code is None:
        first = text.split(" ", 1)[0]
        code = first if _ERROR_CODE.fullmatch(first) else None
    if code == "NOPERM" or (code is None and isinstance(err, NoPermissionError)):
        return bool(_NOPERM_ON_SCRIPTING.search(text))
    if code in (None, "ERR"):
        return bool(_UNKNOWN_SCRIPTING.search(text) or _SCRIPTING_OFF.search(text))
    return False  # BUSY, OOM, READONLY, LOADING, NOSCRIPT, EXECABORT, MASTERDOWN, ...


def _mapping(fields: Mapping[str, str]) -> dict[FieldT, EncodableT]:
    return dict(fields.items())


@cache
def _guarded_write_lua() -> str:
    return resources.files("craft_apps.fleet").joinpath("guarded_write.lua").read_text(encoding="utf-8")


class GuardedWriter:
    """Writes to one Redis client: guarded writes, and hashes written whole."""

    def __init__(self, client: redis.Redis, *, use_scripts: bool = True) -> None:
        """``use_scripts=False`` starts with WATCH/MULTI/EXEC, as after a refusal."""
        self.client = client
        self._script = client.register_script(_guarded_write_lua())
        self._scripts_refused = not use_scripts
        self._lock = threading.Lock()

    @property
    def scripts_refused(self) -> bool:
        return self._scripts_refused

    def apply(self, write: GuardedWrite) -> bool:
        """Applies ``write`` with the script or, once Redis refused it, with WATCH. Returns
        whether it was written."""
        with redis_trouble(f"writing {write.key}", RedisOperation.WRITE):
            if not self._scripts_refused:
                try:
                    return self._apply_with_script(write)
                except ResponseError as err:
                    if not is_script_refusal(err):
                        raise
                    self._note_refusal(err)
            return self._apply_with_watch(write)

    def replace(
        self, key: str, fields: Mapping[str, str] | None, ttl_ms: int, operation: RedisOperation
    ) -> None:
        """Writes hash ``key`` whole with a TTL, in one transaction (a key of another type is
        replaced too); None deletes it."""
        with redis_trouble(f"writing {key}", operation):
            if fields is None:
                self.client.delete(key)
                return
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(key)
            pipe.hset(key, mapping=_mapping(fields))
            pipe.pexpire(key, ttl_ms)
            pipe.execute()

    def _note_refusal(self, err: ResponseError) -> None:
        with self._lock:
            if self._scripts_refused:
                return
            self._scripts_refused = True
        logger.warning(
            "Craft app releases: Redis refused the guarded-write script (%s); "
            "writing with WATCH/MULTI/EXEC from now on.",
            describe_error(err),
        )

    def _apply_with_script(self, write: GuardedWrite) -> bool:
        args: list[str | int] = [
            write.time_field,
            write.time_ms,
            write.min_gap_ms,
            shared_entry.APP_TTL_MS,
            write.required_etag or "",
            "1" if write.full else "0",
            write.version,
        ]
        for field, value in write.fields.items():
            args += [field, value]
        written = self._script(keys=[write.key], args=args, client=self.client)
        if written not in (0, 1):
            raise RedisTrouble(f"writing {write.key}: the script answered {written!r}", RedisOperation.WRITE)
        return bool(written == 1)

    def _apply_with_watch(self, write: GuardedWrite) -> bool:
        fields = (shared_entry.FIELD_VERSION, write.time_field, shared_entry.FIELD_ETAG)
        with self.client.pipeline(transaction=True) as pipe:
            for _ in range(WATCH_ATTEMPTS):
                pipe.watch(write.key)  # type: ignore[no-untyped-call]
                kind = _as_bytes(pipe.type(write.key)) or b"none"
                stored = StoredKey(kind.decode(errors="replace"))
                if stored.kind == "hash":
                    stored = StoredKey("hash", *pipe.hmget(write.key, fields))
                effect = decide_write(write, stored)
                if effect is WriteEffect.NOTHING:
                    pipe.unwatch()
                    return False
                pipe.multi()
                if effect is WriteEffect.REPLACE:
                    pipe.delete(write.key)
                values = dict(write.fields)
                if effect is WriteEffect.HSET_KEEPING_VERSION:
                    del values[shared_entry.FIELD_VERSION]
                # Queued: a refused command (ACL, OOM, read-only) makes EXEC discard them all.
                pipe.hset(write.key, mapping=_mapping(values))
                pipe.pexpire(write.key, shared_entry.APP_TTL_MS)
                try:
                    pipe.execute()
                except WatchError:
                    continue  # another host wrote in between: decide again on what it wrote
                return True
        return False
