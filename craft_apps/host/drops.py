"""What the poller refused or was told about each app's release, in the host's state file.

One ``Drop`` per app and kind: assets not served by reason (``DROP_REASONS``), ``moved`` (the
repository was redirected), ``gone`` (a 404 for a repository that had a release) or ``auth``
(credentials GitHub refused). ``replace_app(store, app, drops)`` replaces an app's rows and
``read_drops(store)`` returns them all; a missing table reads as empty, a bad row is skipped.
Writes carry no fencing token: they are facts about GitHub's answer, true whoever asked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from craft_apps.host.database import has_table
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import is_stored_count, is_stored_time

TABLE = "poller_drops"
MOVED = "moved"
GONE = "gone"
AUTH = "auth"

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (app TEXT NOT NULL, kind TEXT NOT NULL, release TEXT NOT NULL,"
    " count INTEGER NOT NULL, detail TEXT NOT NULL, seen_ms INTEGER NOT NULL, PRIMARY KEY (app, kind))"
)


@dataclass(frozen=True)
class Drop:
    app: str
    kind: str  # a reason of DROP_REASONS, MOVED, GONE or AUTH
    release: str  # the tag of the release it concerns ("" when none)
    count: int  # assets dropped; 1 for MOVED, GONE and AUTH
    detail: str  # MOVED: the repository's new name; AUTH: the setting to check; otherwise ""
    seen_ms: int  # when it was first seen for this release

    def same_fact(self, other: Drop) -> bool:
        """The same thing about the same release, whenever it was seen."""
        return (self.app, self.kind, self.release, self.count, self.detail) == (
            other.app,
            other.kind,
            other.release,
            other.count,
            other.detail,
        )


def replace_app(store: StateStore, app: str, drops: Sequence[Drop]) -> None:
    """Makes ``drops`` the app's rows, in one transaction. Raises StateUnavailable."""

    def write(db: sqlite3.Connection) -> None:
        db.execute(_CREATE)
        db.execute(f"DELETE FROM {TABLE} WHERE app = ?", (app,))
        db.executemany(
            f"INSERT INTO {TABLE} (app, kind, release, count, detail, seen_ms) VALUES (?, ?, ?, ?, ?, ?)",
            [(d.app, d.kind, d.release, d.count, d.detail, d.seen_ms) for d in drops if d.app == app],
        )

    store.write_with(write)


def read_drops(store: StateStore) -> tuple[Drop, ...]:
    """Every app's rows, by app and kind; empty for a missing file or table. Raises
    StateUnavailable."""

    def read(db: sqlite3.Connection) -> list[tuple[object, ...]]:
        if not has_table(db, TABLE):
            return []
        query = f"SELECT app, kind, release, count, detail, seen_ms FROM {TABLE} ORDER BY app, kind"
        return list(db.execute(query))

    return tuple(drop for row in store.read_with(read) or [] if (drop := _decode(row)) is not None)


def _decode(row: tuple[object, ...]) -> Drop | None:
    app, kind, release, count, detail, seen_ms = row
    if not all(isinstance(text, str) for text in (app, kind, release, detail)):
        return None
    if not is_stored_count(count) or not is_stored_time(seen_ms):
        return None
    assert isinstance(app, str) and isinstance(kind, str) and isinstance(release, str)
    assert isinstance(detail, str) and isinstance(count, int) and isinstance(seen_ms, int)
    return Drop(app=app, kind=kind, release=release, count=count, detail=detail, seen_ms=seen_ms)
