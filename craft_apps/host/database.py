"""The one way into the host's state file: opening, a connection per thread, fork safety,
transactions, the file's identity, and one line for every way it can fail.

Every table of the state file (apps, backoff, lease, counters, drops, due marks, deliveries)
is read and written through a ``StateFile``; nothing else in the package connects to SQLite.

- Opening never creates the file (``mode=ro``/``rw``: only ``craft_apps.host.schema`` makes one,
  whole and private) and never follows a symbolic link: not the file's, nor its ``-wal``'s or
  ``-shm``'s, through which SQLite would write wherever the link points.
- Each thread of a process keeps its own connection (SQLite connections are not to be shared
  between threads); one whose thread ended is closed when the next one is kept.
- A connection a forked child inherited (gunicorn ``--preload``) is never used in the child,
  and never closed there either (closing could disturb the parent's locks): it is only kept
  referenced, by the ``StateFile`` it came with.
- The file's identity is (device, inode, change time): a file made anew may get the inode
  number of the one deleted before it, but not its change time (linking it into place sets
  that). A connection is used only while the path still names the file it was opened on. The
  change time also moves when a checkpoint folds the ``-wal`` into the file (every 1,000 pages
  written, or when the last connection closes): then connections are opened again and the
  writer checks the file again, which costs a few milliseconds, and nothing is lost.
- Every ``sqlite3.Error`` becomes ``StateUnavailable``, one line naming the file and why.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from craft_apps.kernel.compat import sqlite_errorname
from craft_apps.kernel.text import one_line

T = TypeVar("T")

FileId = tuple[int, int, int]  # (st_dev, st_ino, st_ctime_ns)


class StateUnavailable(Exception):
    """The state file can't be used now; the message is one line naming the file and why."""


class StateFileMissing(StateUnavailable):
    """There is no state file where a writer (or the endpoint) expected one: it was deleted."""


@dataclass
class _Held:
    db: sqlite3.Connection
    file_id: FileId  # of the file it was opened on


class StateFile:
    """Connections to the state file at ``path``; safe to share between threads and across fork."""

    def __init__(self, path: Path, *, busy_timeout_s: float) -> None:
        self.path = Path(path).absolute()
        self.busy_timeout_s = busy_timeout_s
        # Connections a forked child got from its parent: never used, never closed (see above).
        self.inherited: list[sqlite3.Connection] = []
        self._pid = os.getpid()  # the process the connections below belong to
        self._pool: dict[tuple[int, bool], _Held] = {}  # (thread id, writable) -> connection

    def __repr__(self) -> str:
        return f"StateFile({str(self.path)!r})"

    # ---- what the file is ------------------------------------------------------------------

    def identity(self) -> FileId | None:
        """The file's identity, None when there is none: one lstat. A different identity means
        another file. Raises StateUnavailable (a symbolic link, say)."""
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
        there is not the one ``checked`` for writing. The identity is looked at on every call, so
        a replaced or deleted file is noticed instead of reading a stale inode forever."""
        self._after_fork()
        key = (threading.get_ident(), writable)
        file_id = self.identity()
        held = self._pool.get(key)
        if held is not None and held.file_id == file_id:
            return held.db
        if held is not None:
            self._forget(key)
        if file_id is None or (writable and file_id != checked):
            return None
        try:
            db = self.connect(writable=writable)
        except StateUnavailable:
            if self.identity() is None:  # deleted between stat and open
                return None
            raise
        self.keep(db, file_id, writable=writable)
        return db

    def keep(self, db: sqlite3.Connection, file_id: FileId, *, writable: bool) -> None:
        """Makes ``db`` (open on the file ``file_id``) this thread's connection, closing the one
        it replaces and those of threads that ended."""
        self._after_fork()
        key = (threading.get_ident(), writable)
        self._forget(key)
        threading.current_thread()  # registers a thread Python did not start, so it counts as alive
        alive = {thread.ident for thread in threading.enumerate()}
        for other in [other for other in self._pool if other[0] not in alive]:
            self._forget(other)
        self._pool[key] = _Held(db, file_id)

    def held_file(self, *, writable: bool) -> FileId | None:
        """The identity of the file this thread's connection is open on; None without one."""
        self._after_fork()
        held = self._pool.get((threading.get_ident(), writable))
        return None if held is None else held.file_id

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self._after_fork()
        for key in list(self._pool):
            self._forget(key)

    def close_current_thread(self) -> None:
        """Closes the calling thread's connections, for threads that end before the process."""
        self._after_fork()
        for writable in (False, True):
            self._forget((threading.get_ident(), writable))

    def _forget(self, key: tuple[int, bool]) -> None:
        held = self._pool.pop(key, None)
        if held is not None:
            with contextlib.suppress(sqlite3.Error):
                held.db.close()

    def _after_fork(self) -> None:
        pid = os.getpid()
        if pid != self._pid:  # a forked child: its parent's connections are not its own
            self.inherited.extend(held.db for held in self._pool.values())
            self._pool.clear()
            self._pid = pid

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
