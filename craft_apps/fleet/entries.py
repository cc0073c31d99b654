"""Each app's shared entry and the fleet's backoff, read and written (fields: ``entry``).

``SharedEntries.read(app_keys)`` takes app keys and returns their entries (None when absent or
unreadable) and the backoff, in one round trip when nothing changed: it keeps what the last
read found and reads an app's fields, or its release, only when they moved. The writes share a
200, a 304, a failure or the backoff; a newer time wins (``guarded_writes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from redis.exceptions import ResponseError

from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.claims import Claims
from craft_apps.fleet.entry import SharedAppEntry, SharedFailure
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.guarded_writes import GuardedWrite, GuardedWriter
from craft_apps.fleet.key_reads import KeyReader, hash_reply
from craft_apps.kernel.codec import decode_release
from craft_apps.kernel.domain import Backoff, Release

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
_Fields = dict[str | bytes, _Value]


def _change_marker(key: str, reply: object) -> tuple[object, ...]:
    """What an ``HMGET`` answered, to compare with the last read; a key of another type
    reads as ``_NOT_A_HASH``; any other error is trouble."""
    if isinstance(reply, ResponseError) and str(reply).startswith("WRONGTYPE"):
        return _NOT_A_HASH
    if isinstance(reply, Exception):
        raise RedisTrouble.of(f"reading {key}", reply, RedisOperation.READ)
    if not isinstance(reply, list):
        raise RedisTrouble(f"reading {key}: a {type(reply).__name__} instead of fields", RedisOperation.READ)
    return tuple(reply)


class SharedEntries:
    """The apps' shared entries as this host last read them, and its writes of them. Times must
    be positive Unix ms below 10**15 (``ValueError`` otherwise: a caller's bug, not Redis trouble)."""

    def __init__(
        self, reads: KeyReader, writes: GuardedWriter, claims: Claims, *, hostname: str, key_prefix: str
    ) -> None:
        self._reads = reads
        self._writes = writes
        self._claims = claims
        self._hostname = hostname
        self._prefix = key_prefix
        self._decoded: dict[str, tuple[str, Release | None]] = {}  # hash key -> last release JSON
        self._fetch_read: dict[str, bool] = {}  # hash key -> whether its last read held a readable fetch
        # What the last read of each hash found: its change fields, its decoded entry, and the
        # release JSON with the ETag it came with.
        self._markers: dict[str, tuple[object, ...]] = {}
        self._entries: dict[str, SharedAppEntry | None] = {}
        self._release_text: dict[str, tuple[_Value | None, _Value]] = {}

    def app_key(self, app: str) -> str:
        return shared_entry.app_key(self._prefix, app)

    @property
    def backoff_key(self) -> str:
        return shared_entry.backoff_key(self._prefix)

    def read(self, app_keys: Sequence[str]) -> tuple[list[SharedAppEntry | None], Backoff]:
        """The entries of ``app_keys`` (in order; None when absent or unreadable) and the
        fleet's backoff.

        One round trip when nothing changed: per app only the fields that move with every write
        but a claim (``v``, ``fetched_ms``, ``failed_ms``), and the backoff. An app whose fields
        moved since this host last read it costs one more round trip for its small fields and,
        when its ETag is not the one of the release already held, one for its release: a tick
        never carries the releases it already has."""
        keys = [self.app_key(app) for app in app_keys]
        commands: list[tuple[str, ...]] = [("HMGET", key, *_CHANGE_FIELDS) for key in keys]
        replies = self._reads.pipelined(
            "reading the shared releases", [*commands, ("HGETALL", self.backoff_key)]
        )
        changed: dict[str, tuple[object, ...]] = {}
        for key, reply in zip(keys, replies[:-1], strict=True):
            marker = _change_marker(key, reply)
            if key not in self._entries or self._markers.get(key) != marker:
                changed[key] = marker
        if changed:
            fields_of = self._read_changed([key for key, marker in changed.items() if marker != _NOT_A_HASH])
            for key, marker in changed.items():
                self._note_read(key, marker, fields_of.get(key))
        backoff_fields, wrong_type = hash_reply(self.backoff_key, replies[-1])
        self._reads.report(self.backoff_key, wrong_type)
        return [self._entries[key] for key in keys], shared_entry.decode_backoff(backoff_fields)

    def _read_changed(self, hashes: Sequence[str]) -> dict[str, _Fields]:
        """The small fields of the apps whose change fields moved, with the release of those
        whose ETag isn't the one of the release held; a key no longer a hash is left out."""
        small = self._reads.pipelined(
            "reading the changed shared releases", [("HMGET", key, *_SMALL_FIELDS) for key in hashes]
        )
        fields_of: dict[str, _Fields] = {}
        for key, reply in zip(hashes, small, strict=True):
            if _change_marker(key, reply) == _NOT_A_HASH:
                continue  # replaced by another type in between: read as one
            assert isinstance(reply, list)
            fields_of[key] = {
                name: value for name, value in zip(_SMALL_FIELDS, reply, strict=True) if value is not None
            }
        need_release = [key for key, fields in fields_of.items() if not self._reuse_release(key, fields)]
        with_release = self._reads.pipelined(
            "reading the changed shared releases", [("HMGET", key, *_FETCH_FIELDS) for key in need_release]
        )
        for key, reply in zip(need_release, with_release, strict=True):
            if _change_marker(key, reply) == _NOT_A_HASH:
                fields_of.pop(key)
                continue
            assert isinstance(reply, list)
            for name, value in zip(_FETCH_FIELDS, reply, strict=True):  # the fetch as one snapshot
                if value is None:
                    fields_of[key].pop(name, None)
                else:
                    fields_of[key][name] = value
        return fields_of

    def _reuse_release(self, key: str, fields: _Fields) -> bool:
        """Puts the release this host holds into ``fields`` when the hash's ETag is the one it
        came with (a 304 moved only the time); False when the release must be read."""
        if shared_entry.FIELD_FETCHED_MS not in fields:
            return True  # no fetch: nothing to read
        etag = fields.get(shared_entry.FIELD_ETAG)
        kept = self._release_text.get(key)
        if not etag or kept is None or kept[0] != etag:
            return False
        fields[shared_entry.FIELD_RELEASE] = kept[1]
        return True

    def _note_read(self, key: str, marker: tuple[object, ...], fields: _Fields | None) -> None:
        """Decodes and keeps what a read of ``key`` found (None: not a hash)."""
        if fields is None:
            entry, problems = None, ["it is not a hash"]
        else:
            entry, problems = shared_entry.read_app_entry(fields, self._release_decoder(key))
            release = fields.get(shared_entry.FIELD_RELEASE)
            if entry is not None and entry.fetched is not None and release is not None:
                self._release_text[key] = (fields.get(shared_entry.FIELD_ETAG), release)
            self._claims.saw(key, shared_entry.decode_time(fields.get(shared_entry.FIELD_CLAIMED_MS)))
        self._reads.report(key, tuple(problems))
        self._fetch_read[key] = entry is not None and entry.fetched is not None
        self._entries[key] = entry
        self._markers[key] = marker

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

    def write_fetched(
        self, app_key: str, release: Release | None, etag: str | None, fetched_ms: int, repo: str
    ) -> bool:
        """Shares a 200 of ``repo`` unless a newer fetch is shared already. Returns whether
        written."""
        return self._writes.apply(
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
        """Shares a 304 for ``release`` with ETag ``etag``. When this host's last read of the
        app's hash held a readable fetch, moves only the fetch time, and only while that release
        is the shared one and nothing newer is; when it held none (absent, emptied by a flush,
        another format, garbage), shares the whole entry as a 200 would, so the fleet learns
        again what this host knows. Returns whether written."""
        if not self._fetch_read.get(self.app_key(app_key), False):
            return self.write_fetched(app_key, release, etag, fetched_ms, repo)
        if not etag:
            return False  # nothing to tie the time to the shared release
        return self._writes.apply(
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
        return self._writes.apply(
            GuardedWrite(
                key=self.app_key(app_key),
                time_field=shared_entry.FIELD_FAILED_MS,
                time_ms=failed_ms,
                fields=shared_entry.encode_failure(failure, self._hostname),
            )
        )

    def write_backoff(self, backoff: Backoff) -> None:
        """Shares the fleet's backoff, written whole; no trouble deletes it."""
        fields = shared_entry.encode_backoff(backoff, self._hostname) if backoff.trouble > 0 else None
        self._writes.replace(self.backoff_key, fields, shared_entry.BACKOFF_TTL_MS, RedisOperation.BACKOFF)
