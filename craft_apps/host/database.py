"""The one way into the host's state file: opening it, transactions, its identity, its errors.

``StateFile`` is how every table of the file is read and written; nothing else in the package
connects to SQLite. Opening never creates the file (only ``schema`` makes one) and never follows
a symbolic link. ``read(work)`` and ``run(db, begin, work)`` return what ``work`` returns, in
one transaction; every ``sqlite3.Error`` becomes ``StateUnavailable``, one line naming the file
and why. Each thread's connections are kept in ``connections``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from craft_apps.host.connections import FileId, ThreadConnections
from craft_apps.kernel.compat import sqlite_errorname
from craft_apps.kernel.text import one_line

__all__ = ["FileId", "StateFile", "StateFileMissing", "StateUnavailable"]

T = TypeVar("T")


class StateUnavailable(Exception):
    """The state file can't be used now; the message is one line naming the file and why."""


class StateFileMissing(StateUnavailable):
    """There is no state file where a writer (or the endpoint) expected one: it was deleted."""


class StateFile:
    """Connections to the state file at ``path``; safe to share between threads and across fork."""

    def __init__(self, path: Path, *, busy_timeout_s: float) -> None:
        self.path = Path(path).absolute()
        self.busy_timeout_s = busy_timeout_s
        self.connections = ThreadConnections()  # each thread's, in this process

    def __repr__(self) -> str:
        return f"StateFile({str(self.path)!r})"

    # ---- what the file is ------------------------------------------------------------------

    def identity(self) -> FileId | None:
        """The file's identity, None when there is none: one lstat. A different identity means
        another file. Raises StateUnavailable (a symbolic link, say).

        The identity is (device, inode, change time): a file made anew may get the inode number
        of the one deleted before it, but not its change time (linking it into place sets that).
        The change time also moves when a checkpoint folds the ``-wal`` into the file: then
        connections are opened again and the writer checks the file again; nothing is lost.
        """
        result = stat_state_file(self.path)
        return None if result is None else (result.st_dev, result.st_ino, result.st_ctime_ns)

    def missing(self) -> StateFileMissing:
        """The error for a state file that is not there."""
        return StateFileMissing(f"craft_apps state file {self.path} is missing (deleted, or not created yet)")

    def unavailable(self, err: sqlite3.Error) -> StateUnavailable:
        return unavailable(self.path, err)

    # ---- connections -----------------------------------------------------------------------

    def connect(self, *, writable: bool, path: Path | None = None) -> sqlite3.Connection:
        """A new connection of the caller's own (the state file's, or the file at ``path``, which
        is being built aside); never creates a file. Raises StateUnavailable."""
        target = self.path if path is None else path
        for companion in ("-wal", "-shm"):  # SQLite would write through a link to anywhere
            with contextlib.suppress(FileNotFoundError):
                _refuse_links(Path(f"{target}{companion}"), os.lstat(f"{target}{companion}"))
        uri = f"{target.as_uri()}?mode={'rw' if writable else 'ro'}"
        try:
            return sqlite3.connect(
                uri, uri=True, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as err:
            raise self.unavailable(err) from None

    def connection(self, *, writable: bool, checked: FileId | None = None) -> sqlite3.Connection | None:
        """This thread's connection; None when there is no file, or (``writable``) when the file
        there is not the one ``checked`` for writing. The identity is read on every call, so
        a replaced or deleted file is noticed instead of reading a stale inode forever."""
        file_id = self.identity()
        held = self.connections.held(writable=writable)
        if held is not None and held.file_id == file_id:
            return held.db
        if held is not None:
            self.connections.forget(writable=writable)
        if file_id is None or (writable and file_id != checked):
            return None
        try:
            db = self.connect(writable=writable)
        except StateUnavailable:
            if self.identity() is None:  # deleted between stat and open
                return None
            raise
        self.connections.keep(db, file_id, writable=writable)
        return db

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self.connections.close()

    # ---- transactions ----------------------------------------------------------------------

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """``work`` in one read snapshot on this thread's connection; None when there is no
        file. Raises StateUnavailable."""
        db = self.connection(writable=False)
        if db is None:
            return None
        return self.run(db, "BEGIN", work)

    def run(self, db: sqlite3.Connection, begin: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one transaction on ``db``, begun with ``begin`` (``BEGIN IMMEDIATE`` takes
        the write lock first, waiting out the busy timeout, so a write never meets a snapshot that
        changed under it). Raises StateUnavailable, with nothing written."""
        try:
            with transaction(db, begin):
                return work(db)
        except sqlite3.Error as err:
            raise self.unavailable(err) from None

    def write_once(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction on a connection of its own, closed after: for
        processes that write now and then (a web worker taking a webhook). Raises
        StateUnavailable."""
        db = self.connect(writable=True)
        try:
            return self.run(db, "BEGIN IMMEDIATE", work)
        finally:
            db.close()


@contextlib.contextmanager
def transaction(db: sqlite3.Connection, begin: str) -> Iterator[None]:
    """Commits what the block did, or rolls all of it back."""
    if db.in_transaction:  # left open by a failed rollback: never build on top of it
        db.execute("ROLLBACK")
    db.execute(begin)
    try:
        yield
        db.execute("COMMIT")  # a failed commit is rolled back below, like any other failure
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the file has the table ``name``: the optional tables read as empty without it."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def stat_state_file(path: Path) -> os.stat_result | None:
    """The state file's ``lstat``; None when there is none. Raises StateUnavailable for a file
    that can't be looked at or is a symbolic link (never followed)."""
    try:
        result = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise StateUnavailable(
            f"craft_apps state file {path} cannot be read ({one_line(err.strerror)})"
        ) from None
    _refuse_links(path, result)
    return result


def unavailable(path: Path, err: sqlite3.Error) -> StateUnavailable:
    """An SQLite error on the state file as one line that names the file and the cause."""
    name = sqlite_errorname(err)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        why = "is locked"
    elif name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        why = "is corrupt"
    elif name.startswith(("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR")):
        why = "cannot be written"  # read-only, disk full, an I/O error: the cause follows
    else:
        why = "cannot be used"
    return StateUnavailable(f"craft_apps state file {path} {why} ({one_line(err)})")


def _refuse_links(path: Path, result: os.stat_result) -> None:
    """The state directory is the poller's own: a link in it could send writes anywhere."""
    if stat.S_ISLNK(result.st_mode):
        raise StateUnavailable(f"craft_apps state file {path} is a symbolic link; refusing to follow it")
    if not stat.S_ISREG(result.st_mode):
        raise StateUnavailable(f"craft_apps state file {path} is not a regular file")
