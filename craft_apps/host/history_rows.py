"""The rows of each app's release history: its recent releases, newest first, with the list's ETag.

One row per app key: the releases as JSON (``codec``'s stored form), the ETag and fetch time of
GitHub's release list (None when built from ``/releases/latest`` answers), and the repository.
``put_history(db, key, releases, fetch)`` replaces all of an app's row or nothing;
``decode_history`` reads the rows back. A file without the table reads as "no history". Each
function runs inside its caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from craft_apps.host.database import has_table
from craft_apps.host.schema import HISTORY_TABLE, bump_version
from craft_apps.kernel.codec import decode_releases, encode_releases
from craft_apps.kernel.domain import (
    MAX_HISTORY,
    HistoryFetch,
    Release,
    is_stored_etag,
    is_stored_repo,
    is_stored_time,
    newest_first,
)
from craft_apps.kernel.text import one_line

__all__ = ["MAX_HISTORY", "HistoryFetch", "decode_history", "encode_history", "put_history", "read_history"]

_UPSERT = (
    f"INSERT INTO {HISTORY_TABLE} (key, releases_json, etag, fetched_ms, repo) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET releases_json = excluded.releases_json, etag = excluded.etag,"
    " fetched_ms = excluded.fetched_ms, repo = excluded.repo"
)


def read_history(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every history row, by key, as stored; none for a file without the table."""
    if not has_table(db, HISTORY_TABLE):
        return []
    query = f"SELECT key, releases_json, etag, fetched_ms, repo FROM {HISTORY_TABLE} ORDER BY key"
    return db.execute(query).fetchall()


def decode_history(
    rows: list[tuple[Any, ...]],
) -> tuple[dict[str, tuple[Release, ...]], dict[str, HistoryFetch], list[str]]:
    """The histories and their fetches the rows hold, and a line for each row skipped."""
    history: dict[str, tuple[Release, ...]] = {}
    fetches: dict[str, HistoryFetch] = {}
    problems: list[str] = []
    for row in rows:
        try:
            key, releases, fetch = _decode_row(row)
        except Exception as err:  # stored data is input: a row that doesn't decode is no history
            problems.append(f"skipped history row {row[0]!r}: {one_line(err)}")
        else:
            history[key] = releases
            fetches[key] = fetch
    return history, fetches, problems


def put_history(db: sqlite3.Connection, key: str, releases: Sequence[Release], fetch: HistoryFetch) -> None:
    """Makes ``releases`` (sorted newest first) the app's history, moving the change counter
    only when the row changed. Raises ValueError for a history that cannot be stored."""
    new = encode_history(key, releases, fetch)
    old = db.execute(
        f"SELECT releases_json, etag, fetched_ms, repo FROM {HISTORY_TABLE} WHERE key = ?", (key,)
    ).fetchone()
    if old is None or tuple(old) != new:
        db.execute(_UPSERT, (key, *new))
        bump_version(db)


def encode_history(
    key: str, releases: Sequence[Release], fetch: HistoryFetch
) -> tuple[str, str | None, int | None, str | None]:
    """The row's columns after the key; raises ValueError for what cannot be stored."""
    if fetch.etag is not None and not is_stored_etag(fetch.etag):
        raise ValueError(f"app {key!r}: the history's etag must be one line of printable text or None")
    if fetch.fetched_ms is not None and not is_stored_time(fetch.fetched_ms):
        raise ValueError(f"app {key!r}: the history's fetched_ms must be Unix milliseconds or None")
    if fetch.repo is not None and not is_stored_repo(fetch.repo):
        raise ValueError(f"app {key!r}: the history's repo must be owner/name or None, not {fetch.repo!r}")
    try:
        text = encode_releases(newest_first(releases))
    except Exception as err:
        raise ValueError(f"app {key!r}: the history cannot be encoded ({one_line(err)})") from err
    return text, fetch.etag, fetch.fetched_ms, fetch.repo


def _decode_row(row: tuple[Any, ...]) -> tuple[str, tuple[Release, ...], HistoryFetch]:
    key, releases_json, etag, fetched_ms, repo = row
    if not isinstance(key, str):
        raise ValueError("the key is not text")
    if etag is not None and not is_stored_etag(etag):
        raise ValueError("the etag is not one line of printable text")
    if fetched_ms is not None and not is_stored_time(fetched_ms):
        raise ValueError("fetched_ms is not a time in Unix ms")
    return (
        key,
        decode_releases(releases_json),
        HistoryFetch(etag, fetched_ms, repo if is_stored_repo(repo) else None),
    )
