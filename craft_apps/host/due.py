"""Refreshes asked for ahead of schedule, kept in the host's state file (docs/webhook.md).

``HostDueMarks`` holds two tables made on first use: ``due_mark`` (``mark`` by the webhook or
``craft_apps_refresh``, ``marks`` and ``forget`` by the active poller; ``shared`` says whether
the mark reached Redis) and ``webhook_delivery`` (``take_delivery`` returns False for a delivery
seen in the last day; only the newest ``keep`` are kept). These writes carry no fencing token and
never move the change counter. It never creates the file, nor writes one that isn't ours;
every problem is ``StateUnavailable`` with one line naming the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from craft_apps.host.database import StateFile, StateUnavailable, has_table
from craft_apps.host.schema import DB_FILENAME, FORMAT_VERSION, is_ours

T = TypeVar("T")

DELIVERY_KEPT_MS = 24 * 3600 * 1000

_TABLES = (
    "CREATE TABLE IF NOT EXISTS due_mark (app TEXT PRIMARY KEY, requested_ms INTEGER NOT NULL,"
    " shared INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS webhook_delivery (id TEXT PRIMARY KEY, seen_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS webhook_delivery_seen ON webhook_delivery (seen_ms)",
)
_UPSERT_MARK = (
    "INSERT INTO due_mark (app, requested_ms, shared) VALUES (?, ?, ?) ON CONFLICT (app) DO UPDATE"
    " SET requested_ms = max(due_mark.requested_ms, excluded.requested_ms), shared = excluded.shared"
)

_FORGET_MARK = "DELETE FROM due_mark WHERE app = ? AND requested_ms <= ?"


@dataclass(frozen=True)
class DueMark:
    app: str
    requested_ms: int
    shared: bool  # Redis has it too: the fleet heard of it


class HostDueMarks:
    """The due marks and deliveries of one state directory. A write opens a connection of its own
    and closes it; the poller's frequent ``marks()`` keeps its thread's connection, reopened when
    the file is replaced."""

    def __init__(self, state_dir: Path, *, busy_timeout_s: float = 1.0) -> None:
        self.file = StateFile(Path(state_dir) / DB_FILENAME, busy_timeout_s=busy_timeout_s)
        self.path = self.file.path

    def __repr__(self) -> str:
        return f"HostDueMarks({str(self.path)!r})"

    # ---- written by whoever asks ----------------------------------------------------------

    def take_delivery(self, delivery: str, now_ms: int, *, keep: int) -> bool:
        """Records a webhook delivery; False when it is among the last ``keep`` taken less than
        a day ago. Forgets older deliveries, and all but the newest ``keep``, on the way."""

        def take(db: sqlite3.Connection) -> bool:
            db.execute("DELETE FROM webhook_delivery WHERE seen_ms < ?", (now_ms - DELIVERY_KEPT_MS,))
            cursor = db.execute(
                "INSERT INTO webhook_delivery (id, seen_ms) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                (delivery, now_ms),
            )
            taken = cursor.rowcount == 1
            db.execute(
                "DELETE FROM webhook_delivery WHERE rowid IN (SELECT rowid FROM webhook_delivery"
                " ORDER BY seen_ms DESC, rowid DESC LIMIT -1 OFFSET ?)",
                (max(1, keep),),
            )
            return taken

        return self._write(take)

    def mark(self, app_keys: Iterable[str], requested_ms: int, *, shared: bool) -> None:
        """Marks apps due as of ``requested_ms``; ``shared``: Redis has the marks too."""
        rows = [(app, requested_ms, int(shared)) for app in app_keys]
        self._write(lambda db: db.executemany(_UPSERT_MARK, rows))

    # ---- read and taken by the poller -----------------------------------------------------

    def marks(self) -> list[DueMark]:
        """Every mark waiting (none when there is no file or no mark yet): one small read."""

        def read(db: sqlite3.Connection) -> list[tuple[object, ...]]:
            if not has_table(db, "due_mark"):  # no mark was ever asked for
                return []
            return db.execute("SELECT app, requested_ms, shared FROM due_mark ORDER BY app").fetchall()

        return [
            DueMark(app, requested_ms, bool(shared))
            for app, requested_ms, shared in self.file.read(read) or []
            if isinstance(app, str) and isinstance(requested_ms, int)
        ]

    def forget(self, marks: Iterable[DueMark]) -> None:
        """Deletes marks the poller took, unless a newer request replaced one meanwhile."""
        rows = [(mark.app, mark.requested_ms) for mark in marks]
        if rows:
            self._write(lambda db: db.executemany(_FORGET_MARK, rows))

    def close(self) -> None:
        self.file.close()

    # ---- internals -----------------------------------------------------------------------

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, its tables made if needed; refused unless the file
        exists and is a craft_apps state file of this format."""
        if self.file.identity() is None:
            raise StateUnavailable(f"craft_apps state file {self.path} doesn't exist yet (no poller ran)")

        def write(db: sqlite3.Connection) -> T:
            self._check_ours(db)
            for statement in _TABLES:
                db.execute(statement)
            return work(db)

        return self.file.write_once(write)

    def _check_ours(self, db: sqlite3.Connection) -> None:
        if not is_ours(db):
            raise StateUnavailable(
                f"craft_apps state file {self.path} is not one of format {FORMAT_VERSION}; "
                "due marks are not written to it"
            )
