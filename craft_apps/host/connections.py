"""Each thread's open connections to the state file, for one process.

``ThreadConnections`` holds at most one read and one write connection per thread, each with the
identity of the file it was opened on. ``held(writable=...)`` returns the calling thread's one
(or None); ``keep`` replaces it and closes those of threads that ended. A forked child never uses
nor closes what it inherited from its parent (closing could disturb the parent's locks): those
connections are only kept referenced, in ``inherited``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from dataclasses import dataclass

FileId = tuple[int, int, int]  # (st_dev, st_ino, st_ctime_ns)


@dataclass
class Held:
    db: sqlite3.Connection
    file_id: FileId  # of the file it was opened on


class ThreadConnections:
    """The connections of this process's threads; safe to share between threads and across fork."""

    def __init__(self) -> None:
        # Connections a forked child got from its parent: never used, never closed (see above).
        self.inherited: list[sqlite3.Connection] = []
        self._pid = os.getpid()  # the process the connections below belong to
        self._pool: dict[tuple[int, bool], Held] = {}  # (thread id, writable) -> connection

    def held(self, *, writable: bool) -> Held | None:
        """The calling thread's connection and the file it is open on; None without one."""
        self._after_fork()
        return self._pool.get((threading.get_ident(), writable))

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
        self._pool[key] = Held(db, file_id)

    def forget(self, *, writable: bool) -> None:
        """Closes the calling thread's connection, if it has one."""
        self._after_fork()
        self._forget((threading.get_ident(), writable))

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self._after_fork()
        for key in list(self._pool):
            self._forget(key)

    def close_current_thread(self) -> None:
        """Closes the calling thread's connections, for threads that end before the process."""
        for writable in (False, True):
            self.forget(writable=writable)

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
