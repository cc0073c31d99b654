"""Refreshes asked for ahead of schedule, on the host's state file: the host's own record.

Two tables of their own in the state file, made on first use (``IF NOT EXISTS``), so the file
keeps its format version and code that doesn't know them ignores them:

- ``due_mark (app, requested_ms, shared)``: an app the host's poller should ask GitHub about
  now. Written by whoever asks (the webhook view in a web worker, ``craft_apps_refresh``), taken
  and deleted by the active poller. ``shared`` says whether the mark reached Redis too; one that
  didn't is the poller's to pass on to the fleet, or to act on alone.
- ``webhook_delivery (id, seen_ms)``: the webhook deliveries taken in the last day, only the
  newest ``keep`` of them (the caller's bound), so a flood can't grow the file.

These writes carry no lease fence and never move the change counter: they say nothing about
releases, and the endpoint's answer doesn't change. The file is never created here (only the
poller creates it, with its permissions), and a file that isn't ours, or of another format
version, is never written. Every problem is ``StateUnavailable`` with one line naming the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from craft_apps.host.store import DB_FILENAME, FORMAT_VERSION, StateUnavailable, stat_state_file, unavailable

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


@dataclass(frozen=True)
class DueMark:
    app: str
    requested_ms: int
    shared: bool  # Redis has it too: the fleet heard of it


class HostDueMarks:
    """The due marks and deliveries of one state directory. Each call opens what it needs; the
    poller's frequent ``marks()`` keeps one connection, reopened when the file is replaced."""

    def __init__(self, state_dir: Path, *, busy_timeout_s: float = 1.0) -> None:
        self.path = Path(state_dir).absolute() / DB_FILENAME
        self._busy_timeout_s = busy_timeout_s
        self._reader: tuple[int, tuple[int, int, int], sqlite3.Connection] | None = None  # pid, file id

    def __repr__(self) -> str:
        return f"HostDueMarks({str(self.path)!r})"

    # ---- written by whoever asks ----------------------------------------------------------

    def take_delivery(self, delivery: str, now_ms: int, *, keep: int) -> bool:
        """Records a webhook delivery; False when it is among the last ``keep`` taken less than
        a day ago. Forgets older deliveries, and all but the newest ``keep``, on the way."""
        with self._writing() as db:
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

    def mark(self, app_keys: Iterable[str], requested_ms: int, *, shared: bool) -> None:
        """Marks apps due as of ``requested_ms``; ``shared``: Redis has the marks too."""
        with self._writing() as db:
            db.executemany(_UPSERT_MARK, [(app, requested_ms, int(shared)) for app in app_keys])

    # ---- read and taken by the poller -----------------------------------------------------

    def marks(self) -> list[DueMark]:
        """Every mark waiting (none when there is no file or no mark yet): one tiny query."""
        db = self._read_connection()
        if db is None:
            return []
        try:
            rows = db.execute("SELECT app, requested_ms, shared FROM due_mark ORDER BY app").fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):
                return []
            raise self._unavailable(err) from None
        except sqlite3.Error as err:
            raise self._unavailable(err) from None
        return [
            DueMark(str(app), int(requested_ms), bool(shared))
            for app, requested_ms, shared in rows
            if isinstance(app, str) and isinstance(requested_ms, int)
        ]

    def forget(self, marks: Iterable[DueMark]) -> None:
        """Deletes marks the poller took, unless a newer request replaced one meanwhile."""
        rows = [(mark.app, mark.requested_ms) for mark in marks]
        if rows:
            with self._writing() as db:
                db.executemany("DELETE FROM due_mark WHERE app = ? AND requested_ms <= ?", rows)

    def close(self) -> None:
        if self._reader is not None and self._reader[0] == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._reader[2].close()
        self._reader = None

    # ---- internals -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the state file, its tables made if needed; refused unless the
        file exists and is a craft_apps state file of this format."""
        if self._file_id() is None:
            raise StateUnavailable(f"craft_apps state file {self.path} doesn't exist yet (no poller ran)")
        db = self._open("rw")
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                self._check_ours(db)
                for statement in _TABLES:
                    db.execute(statement)
                yield db
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as err:
            raise self._unavailable(err) from None
        finally:
            db.close()

    def _check_ours(self, db: sqlite3.Connection) -> None:
        file_format = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if file_format != FORMAT_VERSION or "store_meta" not in tables:
            raise StateUnavailable(
                f"craft_apps state file {self.path} is not one of format {FORMAT_VERSION}; "
                "due marks are not written to it"
            )

    def _read_connection(self) -> sqlite3.Connection | None:
        file_id = self._file_id()
        held = self._reader
        if held is not None and held[0] == os.getpid() and held[1] == file_id:
            return held[2]
        self.close()
        if file_id is None:
            return None
        db = self._open("ro")
        self._reader = (os.getpid(), file_id, db)
        return db

    def _open(self, mode: str) -> sqlite3.Connection:
        # mode=ro/rw: SQLite never creates the file here.
        uri = f"{self.path.as_uri()}?mode={mode}"
        try:
            return sqlite3.connect(
                uri, uri=True, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def _file_id(self) -> tuple[int, int, int] | None:
        """(device, inode, change time) of the file: a file made anew may reuse the inode number of
        the one deleted before it, but not its change time."""
        result = stat_state_file(self.path)
        return None if result is None else (result.st_dev, result.st_ino, result.st_ctime_ns)

    def _unavailable(self, err: sqlite3.Error) -> StateUnavailable:
        return unavailable(self.path, err)
