"""Reads and writes the fleet's shared release state in Redis (keys and fields: ``entry``).

Writes are last-write-wins, guarded by time and decided on the server: one Lua script
(``guarded_write.lua``, run by its SHA and reloaded after ``NOSCRIPT``) writes only when the
stored time field plus a minimum gap is not after the new time and, for a 304, only while the
stored ``etag`` is the one revalidated; then it sets the 7-day TTL. An unreadable stored time
never blocks a write, so garbage gets overwritten. A hash of another format version guards
nothing and is never adopted: only a full write (a whole fetch) replaces it; a claim, a failure
or a 304 leaves its ``v`` alone, so it stays unreadable. After a 304 the store shares the whole
entry when its last read of the hash found no readable fetch (absent, flushed, another format,
garbage), so an emptied Redis fills again with 304s alone.

No write is left half-done: the script asks the ACL about each of its writes before the first
(Redis does not undo a script's earlier writes when a later command fails), and the WATCH path
and the backoff write in ``MULTI``/``EXEC``, which Redis discards whole when a command is
refused while queued.

When Redis refuses the script itself (an ACL without ``@scripting``, scripting disabled, an
unknown ``EVAL``/``EVALSHA``/``SCRIPT``) and only then, the store switches for good, logging it
once, to ``WATCH``/``MULTI``/``EXEC``: it reads what the rule looks at, decides with
``decide_write`` (the script's rule in Python), writes in a transaction and decides again if
another writer got in between. Any other Redis problem is ``RedisTrouble`` and leaves that
switch alone. Every method raises ``RedisTrouble``, never a redis-py error; its message is one
line, without credentials, and it says which operation failed. ``redis_trouble`` is that rule,
in one place, for every Redis call of the package.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any, TypeVar

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, RedisError, ResponseError, WatchError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT, FieldT

from craft_apps.conf import DEFAULT_REDIS_KEY_PREFIX
from craft_apps.fleet import controls as shared_controls
from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet import history as shared_history
from craft_apps.fleet.connection import describe_error
from craft_apps.fleet.entry import SharedAppEntry, SharedFailure
from craft_apps.kernel.codec import decode_release
from craft_apps.kernel.compat import StrEnum
from craft_apps.kernel.domain import Backoff, HistoryFetch, Release, newer_wins

logger = logging.getLogger(__name__)

T = TypeVar("T")

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

# An idle tick reads only these of each app: every write but a claim moves one of them.
_CHANGE_FIELDS = (shared_entry.FIELD_VERSION, shared_entry.FIELD_FETCHED_MS, shared_entry.FIELD_FAILED_MS)
# Read when they moved; the release only when its ETag isn't the one of the release held.
_SMALL_FIELDS = (
    shared_entry.FIELD_VERSION,
    shared_entry.FIELD_FETCHED_MS,
    shared_entry.FIELD_ETAG,
    shared_entry.FIELD_FAILED_MS,
    shared_entry.FIELD_FAILURES,
    shared_entry.FIELD_CLAIMED_MS,
    shared_entry.FIELD_REPO,
    shared_entry.FIELD_REPO_FETCHED_MS,
)
_FETCH_FIELDS = (
    shared_entry.FIELD_VERSION,
    shared_entry.FIELD_FETCHED_MS,
    shared_entry.FIELD_ETAG,
    shared_entry.FIELD_RELEASE,
    shared_entry.FIELD_REPO,
    shared_entry.FIELD_REPO_FETCHED_MS,
)
_NOT_A_HASH: tuple[object, ...] = ("WRONGTYPE",)
_Value = str | bytes  # a field's value as the client answers it


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
    """The one rule for every Redis call in ``craft_apps.fleet``: what redis-py raises inside
    becomes ``RedisTrouble`` of ``operation`` (``RedisTrouble.of``), saying it happened ``what``
    ("reading ...", "writing ..."). A ``RedisTrouble`` raised inside passes as it is."""
    try:
        yield
    except REDIS_FAILURES as err:
        raise RedisTrouble.of(what, err, operation) from err


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
    """What the rule looks at in the key: its Redis type and three raw fields (None: absent)."""

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


class SharedStore:
    """The fleet's shared state on one Redis client, for one poller. Times must be positive
    Unix ms below 10**15 (``ValueError`` otherwise: a caller's bug, not Redis trouble)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        hostname: str,
        key_prefix: str = DEFAULT_REDIS_KEY_PREFIX,
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
        self.unreadable = 0  # refusals logged (a key, a new reason): for the host's counters
        self._decoded: dict[str, tuple[str, Release | None]] = {}  # hash key -> last release JSON
        self._fetch_read: dict[str, bool] = {}  # hash key -> whether its last read held a readable fetch
        # What the last read of each hash found: its change fields, its decoded entry, the release
        # JSON with the ETag it came with, and the newest claim seen.
        self._markers: dict[str, tuple[object, ...]] = {}
        self._entries: dict[str, SharedAppEntry | None] = {}
        self._release_text: dict[str, tuple[_Value | None, _Value]] = {}
        self._claims: dict[str, int] = {}

    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def key_prefix(self) -> str:
        return self._prefix

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
        fleet's backoff.

        One round trip when nothing changed: per app only the fields that move with every write
        but a claim (``v``, ``fetched_ms``, ``failed_ms``), and the backoff. An app whose fields
        moved since this store last read it costs one more round trip for its small fields and,
        when its ETag is not the one of the release already held, one for its release: a tick
        never carries the releases it already has."""
        keys = [self.app_key(app) for app in app_keys]
        commands: list[tuple[str, ...]] = [("HMGET", key, *_CHANGE_FIELDS) for key in keys]
        replies = self._pipelined("reading the shared releases", [*commands, ("HGETALL", self.backoff_key)])
        changed: dict[str, tuple[object, ...]] = {}
        for key, reply in zip(keys, replies[:-1], strict=True):
            marker = self._change_marker(key, reply)
            if key not in self._entries or self._markers.get(key) != marker:
                changed[key] = marker
        if changed:
            self._read_changed(changed)
        backoff_fields, wrong_type = self._hash_reply(self.backoff_key, replies[-1])
        self._report(self.backoff_key, wrong_type)
        return [self._entries[key] for key in keys], shared_entry.decode_backoff(backoff_fields)

    def last_claim_ms(self, app_key: str) -> int | None:
        """The newest claim of the app this store knows of: its own, or one read with the app's
        small fields (read again whenever a fetch or a failure moves them)."""
        return self._claims.get(self.app_key(app_key))

    def _read_changed(self, changed: Mapping[str, tuple[object, ...]]) -> None:
        """Reads the small fields of the apps whose change fields moved, then the release of
        those whose ETag isn't the one of the release this store holds, and decodes them."""
        hashes = [key for key, marker in changed.items() if marker != _NOT_A_HASH]
        small = self._pipelined(
            "reading the changed shared releases", [("HMGET", key, *_SMALL_FIELDS) for key in hashes]
        )
        fields_of: dict[str, dict[str | bytes, _Value]] = {}
        for key, reply in zip(hashes, small, strict=True):
            if self._change_marker(key, reply) == _NOT_A_HASH:
                continue  # replaced by another type in between: read as one
            assert isinstance(reply, list)
            fields_of[key] = {
                name: value for name, value in zip(_SMALL_FIELDS, reply, strict=True) if value is not None
            }
        need_release = [key for key, fields in fields_of.items() if not self._reuse_release(key, fields)]
        with_release = self._pipelined(
            "reading the changed shared releases", [("HMGET", key, *_FETCH_FIELDS) for key in need_release]
        )
        for key, reply in zip(need_release, with_release, strict=True):
            if self._change_marker(key, reply) == _NOT_A_HASH:
                fields_of.pop(key)
                continue
            assert isinstance(reply, list)
            fetch = dict(zip(_FETCH_FIELDS, reply, strict=True))
            for name, value in fetch.items():  # the fetch as one snapshot: time, ETag and release
                if value is None:
                    fields_of[key].pop(name, None)
                else:
                    fields_of[key][name] = value
        for key, marker in changed.items():
            fields = fields_of.get(key)
            if fields is None:
                entry, problems = None, ["it is not a hash"]
            else:
                entry, problems = shared_entry.read_app_entry(fields, self._release_decoder(key))
                self._note_small_fields(key, fields, entry)
            self._report(key, tuple(problems))
            self._fetch_read[key] = entry is not None and entry.fetched is not None
            self._entries[key] = entry
            self._markers[key] = marker

    def _reuse_release(self, key: str, fields: dict[str | bytes, _Value]) -> bool:
        """Puts the release this store holds into ``fields`` when the hash's ETag is the one it
        came with (a 304 moved only the time); False when the release must be read."""
        if shared_entry.FIELD_FETCHED_MS not in fields:
            return True  # no fetch: nothing to read
        etag = fields.get(shared_entry.FIELD_ETAG)
        kept = self._release_text.get(key)
        if not etag or kept is None or kept[0] != etag:
            return False
        fields[shared_entry.FIELD_RELEASE] = kept[1]
        return True

    def _note_small_fields(
        self, key: str, fields: Mapping[str | bytes, _Value], entry: SharedAppEntry | None
    ) -> None:
        release = fields.get(shared_entry.FIELD_RELEASE)
        if entry is not None and entry.fetched is not None and release is not None:
            self._release_text[key] = (fields.get(shared_entry.FIELD_ETAG), release)
        claimed_ms = shared_entry.decode_time(fields.get(shared_entry.FIELD_CLAIMED_MS))
        if claimed_ms is not None and claimed_ms > self._claims.get(key, 0):
            self._claims[key] = claimed_ms

    def _change_marker(self, key: str, reply: object) -> tuple[object, ...]:
        """What an ``HMGET`` answered, to compare with the last read; a key of another type
        reads as ``_NOT_A_HASH``; any other error is trouble."""
        if isinstance(reply, ResponseError) and str(reply).startswith("WRONGTYPE"):
            return _NOT_A_HASH
        if isinstance(reply, Exception):
            raise RedisTrouble.of(f"reading {key}", reply, RedisOperation.READ)
        if not isinstance(reply, list):
            raise RedisTrouble(
                f"reading {key}: a {type(reply).__name__} instead of fields", RedisOperation.READ
            )
        return tuple(reply)

    def _pipelined(self, what: str, commands: Sequence[tuple[str, ...]]) -> list[object]:
        """The replies to ``commands``, sent in one round trip (none for no command)."""
        if not commands:
            return []
        with redis_trouble(what, RedisOperation.READ):
            pipe = self._client.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)  # type: ignore[no-untyped-call]
            replies = pipe.execute(raise_on_error=False)
        if len(replies) != len(commands):
            raise RedisTrouble(
                f"{what}: {len(replies)} replies to {len(commands)} commands", RedisOperation.READ
            )
        return list(replies)

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
            raise RedisTrouble.of(f"reading {key}", reply, RedisOperation.READ)
        if not isinstance(reply, Mapping):
            raise RedisTrouble(
                f"reading {key}: a {type(reply).__name__} instead of a hash", RedisOperation.READ
            )
        return reply, ()

    def problems(self, key: str) -> tuple[str, ...]:
        """Why the last read of ``key`` refused it; empty when it read well (or was absent)."""
        return self._reported.get(key, ())

    def _report(self, key: str, problems: tuple[str, ...]) -> None:
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

    # -- histories (``fleet.history``) ----------------------------------------------------

    def history_key(self, app: str) -> str:
        return shared_history.history_key(self._prefix, app)

    def read_histories(self, app_keys: Sequence[str]) -> list[shared_history.SharedHistory | None]:
        """The shared history of each of ``app_keys`` (in order; None when absent or
        unreadable, an unreadable one logged once), in one round trip (none for no key)."""
        keys = [self.history_key(app) for app in app_keys]
        replies = self._pipelined("reading the shared histories", [("HGETALL", key) for key in keys])
        found: list[shared_history.SharedHistory | None] = []
        for key, reply in zip(keys, replies, strict=True):
            fields, problems = self._hash_reply(key, reply)
            history = None
            if fields:
                try:
                    history = shared_history.decode_history(fields)
                except ValueError as err:
                    problems = (*problems, str(err))
            self._report(key, problems)
            found.append(history)
        return found

    def write_history(self, app_key: str, releases: Sequence[Release], fetch: HistoryFetch) -> bool:
        """Shares an app's history, whole, unless Redis holds one of a later release list
        (``newer_wins``); False then, or when ``fetch`` has no time (a history only assembled
        from releases seen one by one stays this host's)."""
        if fetch.fetched_ms is None:
            return False
        write = GuardedWrite(
            key=self.history_key(app_key),
            time_field=shared_history.FIELD_FETCHED_MS,
            time_ms=fetch.fetched_ms,
            fields=shared_history.history_fields(releases, fetch),
            full=True,
        )
        return self.apply(write)

    # -- release controls (``fleet.controls``) ---------------------------------------------

    @property
    def controls_key(self) -> str:
        return shared_controls.controls_key(self._prefix)

    def read_controls(self, decode: Callable[[str], T]) -> tuple[T, int] | None:
        """The release controls a poller shared last, as ``decode`` reads their text (a
        ValueError: unreadable), and when it read them; None when absent or unreadable (logged
        once, as every key)."""
        key = self.controls_key
        [reply] = self._pipelined(f"reading {key}", [("HGETALL", key)])
        fields, problems = self._hash_reply(key, reply)
        found = None
        if fields:
            try:
                found = shared_controls.decode_controls(fields, decode)
            except ValueError as err:
                problems = (*problems, str(err))
        self._report(key, problems)
        return found

    def controls_present(self) -> bool:
        """Whether Redis holds the shared controls key at all (one EXISTS): a flush or a lapse
        is put right by the next poller that read the database."""
        key = self.controls_key
        [reply] = self._pipelined(f"looking for {key}", [("EXISTS", key)])
        return reply == 1

    def write_controls(self, text: str, read_ms: int) -> bool:
        """Shares the release controls read from the site's database at ``read_ms``, unless
        Redis holds a later read; False then."""
        write = GuardedWrite(
            key=self.controls_key,
            time_field=shared_controls.FIELD_READ_MS,
            time_ms=read_ms,
            fields=shared_controls.controls_fields(text, read_ms),
            full=True,
        )
        return self.apply(write)

    # -- guarded writes -------------------------------------------------------------------

    def claim(self, app_key: str, now_ms: int, window_ms: int = CLAIM_WINDOW_MS) -> bool:
        """Claims the next request for the app; False when another host claimed it less than
        ``window_ms`` ago. Never released: it just lapses, so a crashed host blocks nobody. A
        refresh asked for ahead of schedule claims with a shorter window (``polling.schedule``)."""
        key = self.app_key(app_key)
        claimed = self.apply(
            GuardedWrite(
                key=key,
                time_field=shared_entry.FIELD_CLAIMED_MS,
                time_ms=now_ms,
                fields=shared_entry.encode_claim(now_ms, self._hostname),
                min_gap_ms=window_ms,
            )
        )
        if claimed and now_ms > self._claims.get(key, 0):
            self._claims[key] = now_ms
        return claimed

    def write_fetched(
        self, app_key: str, release: Release | None, etag: str | None, fetched_ms: int, repo: str
    ) -> bool:
        """Shares a 200 of ``repo`` unless a newer fetch is shared already. Returns whether
        written."""
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FETCHED_MS,
                time_ms=fetched_ms,
                fields=shared_entry.encode_fetch(release, etag, fetched_ms, self._hostname, repo),
                full=True,
            )
        )

    def write_unchanged(
        self, app_key: str, release: Release | None, etag: str | None, fetched_ms: int, repo: str
    ) -> bool:
        """Shares a 304 for ``release`` with ETag ``etag``. When this store's last read of the
        app's hash held a readable fetch, moves only the fetch time, and only while that release
        is the shared one and nothing newer is; when it held none (absent, emptied by a flush,
        another format, garbage), shares the whole entry as a 200 would, so the fleet learns
        again what this host knows. Returns whether written."""
        if not self._fetch_read.get(self.app_key(app_key), False):
            return self.write_fetched(app_key, release, etag, fetched_ms, repo)
        if not etag:
            return False  # nothing to tie the time to the shared release
        return self.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FETCHED_MS,
                time_ms=fetched_ms,
                fields=shared_entry.encode_unchanged(fetched_ms, self._hostname, repo),
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
        with redis_trouble(f"writing {key}", RedisOperation.BACKOFF):
            if backoff.trouble <= 0:
                self._client.delete(key)
                return
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(key)  # written whole, so a key of another type is replaced too
            pipe.hset(key, mapping=_mapping(shared_entry.encode_backoff(backoff, self._hostname)))
            pipe.pexpire(key, shared_entry.BACKOFF_TTL_MS)
            pipe.execute()

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
        written = self._script(keys=[write.key], args=args, client=self._client)
        if written not in (0, 1):
            raise RedisTrouble(f"writing {write.key}: the script answered {written!r}", RedisOperation.WRITE)
        return bool(written == 1)

    def _apply_with_watch(self, write: GuardedWrite) -> bool:
        fields = (shared_entry.FIELD_VERSION, write.time_field, shared_entry.FIELD_ETAG)
        with self._client.pipeline(transaction=True) as pipe:
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
