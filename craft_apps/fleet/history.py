"""Each app's release history in the fleet's Redis: one hash per app, beside the entries.

The key is ``<prefix>history:<app>`` (``history_key``): the reference's per-app hash
(``<prefix>app:<app>``, ``entry``) keeps its fields and format, so a host of 0.2 or a
reference pod reading the same Redis sees nothing new, and no app key can make it collide with
an entry or the backoff (they are ``app:…`` and ``backoff``). Its fields: ``v`` (this format,
"1"), ``releases`` (the history as ``codec.encode_releases``' JSON list, newest first),
``etag`` and ``fetched_ms`` (GitHub's release list's ETag and when it was fetched) and
``repo`` (the repository it is of). It is written whole, by the guarded write of the entries
(newer ``fetched_ms`` wins, ``domain.newer_wins``), and expires after the entries' TTL (7
days, ``entry.APP_TTL_MS``): a history unrefreshed that long is of an app nobody polls. Read
as untrusted input: a hash that doesn't decode reads as none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from craft_apps.fleet.entry import FORMAT_VERSION, text_fields
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
