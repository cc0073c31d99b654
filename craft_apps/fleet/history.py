"""Each app's release history in the fleet's Redis: one hash per app, beside the entries.

The key is ``<prefix>history:<app>``; its fields ``v`` ("1"), ``releases`` (JSON, newest
first), ``etag``, ``fetched_ms`` and ``repo`` (the release list it came from). Written whole,
the newer ``fetched_ms`` winning, with the entries' 7-day TTL; a hash that doesn't decode reads
as none. ``SharedHistories.read(app_keys)`` returns each app's history (releases and fetch) or
None; ``write(app, releases, fetch)`` returns whether it was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from craft_apps.fleet.entry import FORMAT_VERSION, text_fields
from craft_apps.fleet.guarded_writes import GuardedWrite, GuardedWriter
from craft_apps.fleet.key_reads import KeyReader
from craft_apps.kernel.codec import decode_releases, encode_releases
from craft_apps.kernel.domain import (
    HistoryFetch,
    Release,
    is_stored_etag,
    is_stored_repo,
    is_stored_time,
    newest_first,
)

FIELD_RELEASES = "releases"
FIELD_ETAG = "etag"
FIELD_FETCHED_MS = "fetched_ms"
FIELD_REPO = "repo"
FIELD_VERSION = "v"

SharedHistory = tuple[tuple[Release, ...], HistoryFetch]


def history_key(prefix: str, app: str) -> str:
    return f"{prefix}history:{app}"


def history_fields(releases: Sequence[Release], fetch: HistoryFetch) -> dict[str, str]:
    """The hash's fields for a history fetched at ``fetch.fetched_ms`` (which must be set)."""
    if fetch.fetched_ms is None or not is_stored_time(fetch.fetched_ms):
        raise ValueError("a shared history needs the time of the release list it came from")
    fields = {
        FIELD_VERSION: FORMAT_VERSION,
        FIELD_RELEASES: encode_releases(newest_first(releases)),
        FIELD_FETCHED_MS: str(fetch.fetched_ms),
        FIELD_ETAG: fetch.etag if fetch.etag is not None and is_stored_etag(fetch.etag) else "",
        FIELD_REPO: fetch.repo if fetch.repo is not None and is_stored_repo(fetch.repo) else "",
    }
    return fields


def decode_history(raw: Mapping[str | bytes, str | bytes]) -> SharedHistory:
    """The history a hash holds. Raises ValueError for one of another format or shape."""
    fields = text_fields(raw)
    if fields.get(FIELD_VERSION) != FORMAT_VERSION:
        raise ValueError(f"history of format {fields.get(FIELD_VERSION)!r}, not {FORMAT_VERSION!r}")
    fetched = fields.get(FIELD_FETCHED_MS, "")
    if not fetched.isdigit() or not is_stored_time(int(fetched)):
        raise ValueError("the history's fetched_ms is not a time in Unix ms")
    etag = fields.get(FIELD_ETAG) or None
    if etag is not None and not is_stored_etag(etag):
        raise ValueError("the history's etag is not one line of printable text")
    repo = fields.get(FIELD_REPO) or None
    fetch = HistoryFetch(etag, int(fetched), repo if is_stored_repo(repo) else None)
    return decode_releases(fields.get(FIELD_RELEASES)), fetch


class SharedHistories:
    """The apps' release histories on the fleet's Redis."""

    def __init__(self, reads: KeyReader, writes: GuardedWriter, *, key_prefix: str) -> None:
        self._reads = reads
        self._writes = writes
        self._prefix = key_prefix

    def key(self, app: str) -> str:
        return history_key(self._prefix, app)

    def read(self, app_keys: Sequence[str]) -> list[SharedHistory | None]:
        """The shared history of each of ``app_keys`` (in order; None when absent or
        unreadable, an unreadable one logged once), in one round trip (none for no key)."""
        keys = [self.key(app) for app in app_keys]
        return self._reads.read_hashes("reading the shared histories", keys, decode_history)

    def write(self, app_key: str, releases: Sequence[Release], fetch: HistoryFetch) -> bool:
        """Shares an app's history, whole, unless Redis holds one of a later release list
        (``newer_wins``); False then, or when ``fetch`` has no time (a history only assembled
        from releases seen one by one stays this host's)."""
        if fetch.fetched_ms is None:
            return False
        write = GuardedWrite(
            key=self.key(app_key),
            time_field=FIELD_FETCHED_MS,
            time_ms=fetch.fetched_ms,
            fields=history_fields(releases, fetch),
            full=True,
        )
        return self._writes.apply(write)
