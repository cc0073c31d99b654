"""The rows of what the endpoint serves: one per app (``app_state``) and the host's backoff.

``decode_rows(rows)`` returns the apps and the backoff the rows hold, skipping a row that
doesn't decode (it reads as "not fetched") with a line for the caller to log. ``put_app(db, key,
state)`` writes all of one app's fields or none and returns False instead of moving a fetch back
in time, unless the stored fetch is of another or an unrecorded repository. Each function runs
inside its caller's transaction (docs/state-file.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from craft_apps.host.schema import bump_version, has_repo_columns
from craft_apps.kernel.codec import decode_release, encode_release
from craft_apps.kernel.domain import (
    AppState,
    Backoff,
    is_stored_count,
    is_stored_etag,
    is_stored_repo,
    is_stored_time,
    newer_wins,
    same_repo,
)
from craft_apps.kernel.text import one_line

_APP_COLUMNS_0_2 = "release_json, etag, fetched_ms, failed_ms, failures"
_APP_COLUMNS = f"{_APP_COLUMNS_0_2}, repo, repo_fetched_ms"
_UPSERT_APP = (
    f"INSERT INTO app_state (key, {_APP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET release_json = excluded.release_json,"
    " etag = excluded.etag, fetched_ms = excluded.fetched_ms,"
    " failed_ms = excluded.failed_ms, failures = excluded.failures,"
    " repo = excluded.repo, repo_fetched_ms = excluded.repo_fetched_ms"
)
_UPSERT_BACKOFF = (
    "INSERT INTO backoff (id, until_ms, trouble) VALUES (1, ?, ?) ON CONFLICT (id)"
    " DO UPDATE SET until_ms = excluded.until_ms, trouble = excluded.trouble"
)

_AppRow = tuple[str, str | None, int | None, int | None, int, str | None, int | None]


# ---- reading -------------------------------------------------------------------------------------


def read_rows(db: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], tuple[Any, ...] | None]:
    """Every app row, by key, and the backoff row (None when there is none), as stored."""
    columns = _APP_COLUMNS if has_repo_columns(db) else f"{_APP_COLUMNS_0_2}, NULL, NULL"
    rows = db.execute(f"SELECT key, {columns} FROM app_state ORDER BY key").fetchall()
    backoff_row = db.execute("SELECT until_ms, trouble FROM backoff WHERE id = 1").fetchone()
    return rows, backoff_row


def decode_rows(
    rows: list[tuple[Any, ...]], backoff_row: tuple[Any, ...] | None
) -> tuple[dict[str, AppState], Backoff, list[str]]:
    """The apps and the backoff the rows hold, and a line for each row skipped or ignored."""
    problems: list[str] = []
    apps: dict[str, AppState] = {}
    for row in rows:
        try:
            key, state = _decode_app_row(row)
        except Exception as err:  # stored data is input: any failure means "not fetched"
            problems.append(f"skipped app row {row[0]!r}: {one_line(err)}")
        else:
            apps[key] = state
    backoff = Backoff()
    if backoff_row is not None:
        try:
            backoff = _decode_backoff_row(backoff_row)
        except ValueError as err:
            problems.append(f"ignored the backoff row: {err}")
    return apps, backoff, problems


# ---- writing -------------------------------------------------------------------------------------


def put_app(db: sqlite3.Connection, key: str, state: AppState) -> bool:
    """Stores all of ``state``; False, with nothing written, when it would go back in time.
    Moves the change counter only when a field changed. Raises ValueError for a state that
    cannot be stored."""
    old = db.execute(f"SELECT {_APP_COLUMNS} FROM app_state WHERE key = ?", (key,)).fetchone()
    stored_fetched = old[2] if old is not None and is_stored_time(old[2]) else None
    if not newer_wins(stored_fetched, state.fetched_ms) and _same_repo_row(old, state):
        return False
    new = _encode_app(key, state)
    if old is None or tuple(old) != new:
        db.execute(_UPSERT_APP, (key, *new))
        bump_version(db)
    return True


def put_backoff(db: sqlite3.Connection, backoff: Backoff) -> None:
    """Stores the host's backoff, moving the change counter only when it changed."""
    new = encode_backoff(backoff)
    old = db.execute("SELECT until_ms, trouble FROM backoff WHERE id = 1").fetchone()
    if old is None or tuple(old) != new:
        db.execute(_UPSERT_BACKOFF, new)
        bump_version(db)


def fill(
    db: sqlite3.Connection,
    apps: Mapping[str, AppState],
    backoff: Backoff,
    left_out: Callable[[str, ValueError], None],
) -> None:
    """Writes every app and the backoff into a file being made anew; an app that can't be
    stored (it never was before either) is left out and reported to ``left_out``."""
    for key, state in sorted(apps.items()):
        try:
            row = _encode_app(key, state)
        except ValueError as err:
            left_out(key, err)
            continue
        db.execute(_UPSERT_APP, (key, *row))
    db.execute(_UPSERT_BACKOFF, encode_backoff(backoff))


def encode_backoff(backoff: Backoff) -> tuple[int | None, int]:
    """The backoff row; raises ValueError for a backoff that cannot be stored."""
    if backoff.until_ms is not None and not is_stored_time(backoff.until_ms):
        raise ValueError(f"backoff until_ms must be Unix milliseconds or None, not {backoff.until_ms!r}")
    if not is_stored_count(backoff.trouble):
        raise ValueError(f"backoff trouble must be a count from 0 to 2^32 - 1, not {backoff.trouble!r}")
    return (backoff.until_ms, backoff.trouble)


# ---- the rows' shape -----------------------------------------------------------------------------


def _row_repo(repo: object, repo_fetched_ms: object, fetched_ms: object) -> str | None:
    """A row's recorded repository; None when unrecorded, unreadable or left behind by a later
    write of the fetch that didn't record one."""
    if not is_stored_repo(repo) or repo_fetched_ms != fetched_ms:
        return None
    assert isinstance(repo, str)
    return repo


def _same_repo_row(old: tuple[Any, ...] | None, state: AppState) -> bool:
    """Whether the time guard applies: unless ``state`` records a repository and the stored row's
    fetch is of another or an unrecorded one (then the row is replaced, whatever its time)."""
    if old is None or state.repo is None:
        return True
    stored = _row_repo(old[5], old[6], old[2])
    return stored is not None and state.repo is not None and same_repo(stored, state.repo)


def _encode_app(key: str, state: AppState) -> _AppRow:
    for name in ("fetched_ms", "failed_ms"):
        value = getattr(state, name)
        if value is not None and not is_stored_time(value):
            raise ValueError(f"app {key!r}: {name} must be Unix milliseconds or None, not {value!r}")
    if state.etag is not None and not is_stored_etag(state.etag):
        raise ValueError(f"app {key!r}: etag must be one line of printable text or None")
    if not is_stored_count(state.failures):
        raise ValueError(f"app {key!r}: failures must be a count from 0 to 2^32 - 1, not {state.failures!r}")
    try:
        release_json = encode_release(state.latest_release)
    except Exception as err:
        raise ValueError(f"app {key!r}: the release cannot be encoded ({one_line(err)})") from err
    if state.repo is not None and not is_stored_repo(state.repo):
        raise ValueError(f"app {key!r}: repo must be owner/name or None, not {state.repo!r}")
    return (
        release_json,
        state.etag,
        state.fetched_ms,
        state.failed_ms,
        state.failures,
        state.repo,
        None if state.repo is None else state.fetched_ms,
    )


def _decode_app_row(row: tuple[Any, ...]) -> tuple[str, AppState]:
    key, release_json, etag, fetched_ms, failed_ms, failures, repo, repo_fetched_ms = row
    if not isinstance(key, str):
        raise ValueError("the key is not text")
    if not isinstance(release_json, str):
        raise ValueError("the release is not text")
    if etag is not None and not is_stored_etag(etag):
        raise ValueError("the etag is not one line of printable text")
    for name, value in (("fetched_ms", fetched_ms), ("failed_ms", failed_ms)):
        if value is not None and not is_stored_time(value):
            raise ValueError(f"{name} is not a time in Unix ms")
    if not is_stored_count(failures):
        raise ValueError("failures is not a count")
    return key, AppState(
        latest_release=decode_release(release_json),
        fetched_ms=fetched_ms,
        etag=etag,
        failed_ms=failed_ms,
        failures=failures,
        repo=_row_repo(repo, repo_fetched_ms, fetched_ms),
    )


def _decode_backoff_row(row: tuple[Any, ...]) -> Backoff:
    until_ms, trouble = row
    if until_ms is not None and not is_stored_time(until_ms):
        raise ValueError("until_ms is not a time in Unix ms")
    if not is_stored_count(trouble):
        raise ValueError("trouble is not a count")
    return Backoff(until_ms=until_ms, trouble=trouble)
