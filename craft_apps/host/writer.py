"""The write side of the state file: which file this process checked for writing, and its writes.

``StateWriter.write(work)`` runs ``work`` in one write transaction and returns what it returns;
``fenced(fence, work)`` does the same only while ``fence``, the lease's fencing token, is
current (else FenceRejected, nothing written). A writer never creates the file
(``open_for_writing`` does, or the lease holder makes it anew): a file deleted under it raises
StateFileMissing.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from craft_apps.host import lease_rows, schema
from craft_apps.host.database import FileId, StateFile, StateUnavailable
from craft_apps.host.lease_rows import Fence
from craft_apps.host.schema import FORMAT_VERSION

logger = logging.getLogger("craft_apps.host.store")  # the logger these messages always had

T = TypeVar("T")

_WRITER_TRIES = 3  # how often a writer reads the file's identity again when it changes under it


class StateWriter:
    """Writes to the state file of ``state_dir``; safe to share between threads and across fork."""

    def __init__(self, file: StateFile, state_dir: Path, *, lease_name: str) -> None:
        self.file = file
        self.state_dir = state_dir
        self.lease_name = lease_name  # the lease whose fence guards every fenced write
        self._ready: tuple[int, FileId] | None = None  # (pid, file id) checked for writing

    def open_for_writing(self) -> None:
        """Creates the directory and the file as needed and checks what is there.

        A missing file is built aside and linked into place whole; if another process links
        one first, that one is used. A corrupt, foreign or newer-format file raises
        StateUnavailable and is left untouched. Cheap after the first call in a process (until
        the file is replaced).
        """
        file_id = self.file.identity()
        if file_id is not None and self._ready == (os.getpid(), file_id):
            return
        schema.prepare_directory(self.state_dir)
        if file_id is None and schema.create_whole(self.file, None):
            logger.info("craft_apps state file %s created (format %d)", self.file.path, FORMAT_VERSION)
        self._check()

    def connection(self, *, writable: bool) -> sqlite3.Connection | None:
        """This thread's connection; None when there is no file to read, or (writable) when the
        file there is not the one this process checked for writing (open_for_writing first)."""
        ready = self._ready
        checked = ready[1] if ready is not None and ready[0] == os.getpid() else None
        return self.file.connection(writable=writable, checked=checked)

    def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, without a fence and without a version bump.
        Raises StateUnavailable."""
        # BEGIN IMMEDIATE takes the write lock first (waiting out the busy timeout), so the
        # statements never meet a snapshot that changed under them.
        return self.file.run(self._writer(), "BEGIN IMMEDIATE", work)

    def fenced(self, fence: Fence, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, if ``fence`` is the current custody."""

        def write(db: sqlite3.Connection) -> T:
            lease_rows.check_fence(db, self.lease_name, fence, self.file.path)
            return work(db)

        return self.write(write)

    def forget(self) -> None:
        """Forgets which file was checked for writing (after closing the connections)."""
        self._ready = None

    def _writer(self) -> sqlite3.Connection:
        """The connection for a write. It never creates a file: a file deleted under its writer
        is reported (StateFileMissing), for the lease holder to make anew from what it knows."""
        for _ in range(_WRITER_TRIES):
            file_id = self.file.identity()
            if file_id is None:
                raise self.file.missing()
            if self._ready != (os.getpid(), file_id):
                self._check()
            db = self.connection(writable=True)
            if db is not None:
                return db
            # The file changed between the check and the connection: deleted (the next try
            # says so), replaced (checked in turn), or its change time moved by a checkpoint.
        raise StateUnavailable(f"craft_apps state file {self.file.path} keeps changing under its writer")

    def _check(self) -> None:
        """Opens the file that is there for writing once it is known to be ours and sound."""
        db, file_id = schema.open_checked(self.file)
        self.file.connections.keep(db, file_id, writable=True)
        self._ready = (os.getpid(), file_id)
