"""Reads and writes the fleet's shared release state in Redis (keys and fields: ``shared_entry``).

Writes are last-write-wins, guarded by time and decided on the server: one Lua script
(``guarded_write.lua``, run by its SHA and reloaded after ``NOSCRIPT``) writes only when the
stored time field plus a minimum gap is not after the new time and, for a 304, only while the
stored ``etag`` is the one revalidated; then it sets the 7-day TTL. An unreadable stored time
never blocks a write, so garbage gets overwritten.

When Redis refuses the script itself (an ACL without ``@scripting``, scripting disabled, an
unknown ``EVAL``/``EVALSHA``/``SCRIPT``) and only then, the store switches for good, logging it
once, to ``WATCH``/``MULTI``/``EXEC``: it reads the guarding fields, decides with ``write_wins``
(the script's rule in Python), writes in a transaction and decides again if another writer got
in between. Any other Redis problem is ``RedisTrouble`` and leaves that switch alone. Every
method raises ``RedisTrouble``, never a redis-py error; its message is one line, without
credentials.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.exceptions import NoPermissionError, RedisError, ResponseError, WatchError
from redis.typing import EncodableT, FieldT

from craft_apps.codec import decode_release
from craft_apps.domain import Backoff, Release
from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.connection import describe_error
from craft_apps.fleet.entry import SharedAppEntry, SharedFailure

logger = logging.getLogger(__name__)

CLAIM_WINDOW_MS = 60_000  # longer than one GitHub request can take (10 s connect + 30 s answer)
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


class RedisTrouble(Exception):
    """Redis couldn't be used: unreachable, timed out, busy, out of memory, read-only, loading,
    a command denied, or an answer that makes no sense. One line, no credentials."""


@dataclass(frozen=True, slots=True)
class GuardedWrite:
    """Write ``fields`` to hash ``key`` unless its ``time_field`` plus ``min_gap_ms`` is after
    ``time_ms``, or ``required_etag`` is set and the hash's ``etag`` differs."""

    key: str
    time_field: str
    time_ms: int
    fields: Mapping[str, str]
    min_gap_ms: int = 0
    required_etag: str | None = None

    def __post_init__(self) -> None:
        if not 0 < self.time_ms <= MAX_SCRIPT_NUMBER or not 0 <= self.min_gap_ms <= MAX_SCRIPT_NUMBER:
            raise ValueError(f"time {self.time_ms} or gap {self.min_gap_ms} out of range")
        if not self.fields:
            raise ValueError("a guarded write needs fields to write")


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def write_wins(write: GuardedWrite, stored_time: bytes | str | None, stored_etag: bytes | str | None) -> bool:
    """The script's decision, given the hash's stored time field and ``etag`` (None: absent)."""
    stored = _as_bytes(stored_time)
    if (
        stored is not None
        and _STORED_TIME.fullmatch(stored)
        and int(stored) + write.min_gap_ms > write.time_ms
    ):
        return False
    if write.required_etag:
        return _as_bytes(stored_etag) == write.required_etag.encode()
    return True


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


class SharedStore:
    """The fleet's shared state on one Redis client, for one poller. Times must be positive
    Unix ms below 10**15 (``ValueError`` otherwise: a caller's bug, not Redis trouble)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        hostname: str,
        key_prefix: str = shared_entry.DEFAULT_KEY_PREFIX,
        use_scripts: bool = True,
    ) -> None:
        """``use_scripts=False`` starts with WATCH/MULTI/EXEC, as after a refusal."""
        self._client = client
        self._hostname = hostname
        self._prefix = key_prefix
        self._script = client.register_script(_guarded_write_lua())
        self._scripts_refused = not use_scripts
        self._lock = threading.Lock()
        self._reported: dict[str, tuple[str, ...]] = {}
        self._decoded: dict[str, tuple[str, Release | None]] = {}  # hash key -> last release JSON

    @property
    def scripts_refused(self) -> bool:
        return self._scripts_refused

    def app_key(self, app: str) -> str:
        return shared_entry.app_key(self._prefix, app)

    @property
    def backoff_key(self) -> str:
        return shared_entry.backoff_key(self._prefix)

    # -- reading --------------------------------------------------------------------------

    def read(self, app_keys: Sequence[str]) -> tuple[list[SharedAppEntry | None], Backoff]:
        """The entries of ``app_keys`` (in order; None when absent or unreadable) and the
        fleet's backoff, in one round trip."""
        keys = [self.app_key(app) for app in app_keys]
        try:
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.hgetall(key)
            pipe.hgetall(self.backoff_key)
            replies = pipe.execute(raise_on_error=False)
        except (RedisError, OSError, UnicodeDecodeError) as err:
            raise RedisTrouble(f"reading the shared releases: {describe_error(err)}") from err
        if len(replies) != len(keys) + 1:
            raise RedisTrouble(
                f"reading the shared releases: {len(replies)} replies to {len(keys) + 1} commands"
            )
        hashes = [
            self._hash_reply(key, reply)
            for key, reply in zip([*keys, self.backoff_key], replies, strict=True)
        ]
        entries: list[SharedAppEntry | None] = []
        for key, (fields, wrong_type) in zip(keys, hashes[:-1], strict=True):
            entry, problems = shared_entry.read_app_entry(fields, self._release_decoder(key))
            self._report(key, wrong_type or tuple(problems))
            entries.append(entry)
        backoff_fields, wrong_type = hashes[-1]
        self._report(self.backoff_key, wrong_type)
        return entries, shared_entry.decode_backoff(backoff_fields)

    def _release_decoder(self, key: str) -> Callable[[str], Release | None]:
        """Decodes a hash's release JSON, reusing the last decoding while the JSON is the same:
        every tick reads every hash, and the releases rarely change."""

        def decode(text: str) -> Release | None:
            kept = self._decoded.get(key)
            if kept is not None and kept[0] == text:
                return kept[1]
            release = decode_release(text)
            self._decoded[key] = (text, release)
            return release

        return decode

    def _hash_reply(self, key: str, reply: object) -> tuple[Mapping[Any, Any], tuple[str, ...]]:
        """A hash from a pipeline reply, and what was wrong: a key of another type reads as an
        empty hash; any other error is trouble."""
        if isinstance(reply, ResponseError) and str(reply).startswith("WRONGTYPE"):
            return {}, ("it is not a hash",)
        if isinstance(reply, Exception):
            raise RedisTrouble(f"reading {key}: {describe_error(reply)}")
        if not isinstance(reply, Mapping):
            raise RedisTrouble(f"reading {key}: a {type(reply).__name__} instead of a hash")
        return reply, ()

    def _report(self, key: str, problems: tuple[str, ...]) -> None:
        """Logs an unreadable key once per distinct reason, not on every read."""
        if self._reported.get(key, ()) == problems:
            return
        self._reported[key] = problems
        if problems:
            logger.warning(
                "Craft app releases: ignoring what can't be read in Redis key %s (%s); "
                "the next write replaces it.",
                key,
                "; ".join(problems),
            )

    # -- guarded writes -------------------------------------------------------------------

    def claim(self, app_key: str, now_ms: int) -> bool:
        """Claims the next request for the app; False when another host claimed it less than
        ``CLAIM_WINDOW_MS`` ago. Never released: it just lapses, so a crashed host blocks nobody."""
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_CLAIMED_MS,
                time_ms=now_ms,
                fields=shared_entry.encode_claim(now_ms, self._hostname),
                min_gap_ms=CLAIM_WINDOW_MS,
            )
        )

    def write_fetched(self, app_key: str, release: Release | None, etag: str | None, fetched_ms: int) -> bool:
        """Shares a 200 unless a newer fetch is shared already. Returns whether written."""
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FETCHED_MS,
                time_ms=fetched_ms,
                fields=shared_entry.encode_fetch(release, etag, fetched_ms, self._hostname),
            )
        )

    def write_unchanged(self, app_key: str, etag: str, fetched_ms: int) -> bool:
        """Shares a 304 for the release with ETag ``etag``: moves only the fetch time, and only
        while that release is the shared one and nothing newer is. Returns whether written."""
        if not etag:
            return False
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FETCHED_MS,
                time_ms=fetched_ms,
                fields=shared_entry.encode_unchanged(fetched_ms, self._hostname),
                required_etag=etag,
            )
        )

    def write_failure(self, app_key: str, failed_ms: int, failures: int) -> bool:
        """Shares a failed request unless a newer failure is shared. Returns whether written."""
        failure = SharedFailure(failed_ms=failed_ms, failures=failures)
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FAILED_MS,
                time_ms=failed_ms,
                fields=shared_entry.encode_failure(failure, self._hostname),
            )
        )

    def write_backoff(self, backoff: Backoff) -> None:
        """Shares the fleet's backoff; no trouble deletes it."""
        key = self.backoff_key
        try:
            if backoff.trouble <= 0:
                self._client.delete(key)
                return
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(key)  # written whole, so a key of another type is replaced too
            pipe.hset(key, mapping=_mapping(shared_entry.encode_backoff(backoff, self._hostname)))
            pipe.pexpire(key, shared_entry.BACKOFF_TTL_MS)
            pipe.execute()
        except (RedisError, OSError, UnicodeDecodeError) as err:
            raise RedisTrouble(f"writing {key}: {describe_error(err)}") from err

    def apply(self, write: GuardedWrite) -> bool:
        """Applies ``write`` with the script or, once Redis refused it, with WATCH. Returns
        whether it was written."""
        try:
            if not self._scripts_refused:
                try:
                    return self._apply_with_script(write)
                except ResponseError as err:
                    if not is_script_refusal(err):
                        raise
                    self._note_refusal(err)
            return self._apply_with_watch(write)
        except (RedisError, OSError, UnicodeDecodeError) as err:
            raise RedisTrouble(f"writing {write.key}: {describe_error(err)}") from err

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
        ]
        for field, value in write.fields.items():
            args += [field, value]
        written = self._script(keys=[write.key], args=args, client=self._client)
        if written not in (0, 1):
            raise RedisTrouble(f"writing {write.key}: the script answered {written!r}")
        return bool(written == 1)

    def _apply_with_watch(self, write: GuardedWrite) -> bool:
        with self._client.pipeline(transaction=True) as pipe:
            for _ in range(WATCH_ATTEMPTS):
                pipe.watch(write.key)  # type: ignore[no-untyped-call]
                replace = False
                try:
                    stored_time, stored_etag = pipe.hmget(
                        write.key, [write.time_field, shared_entry.FIELD_ETAG]
                    )
                except ResponseError as err:
                    if not str(err).startswith("WRONGTYPE"):
                        raise
                    stored_time, stored_etag, replace = None, None, True
                if not write_wins(write, stored_time, stored_etag):
                    pipe.unwatch()
                    return False
                pipe.multi()
                if replace:
                    pipe.delete(write.key)
                pipe.hset(write.key, mapping=_mapping(write.fields))
                pipe.pexpire(write.key, shared_entry.APP_TTL_MS)
                try:
                    pipe.execute()
                except WatchError:
                    continue  # another host wrote in between: decide again on what it wrote
                return True
        return False
