"""The host's state file: what this host's poller knows, read by every web worker on the host.

One private SQLite database (WAL mode) in the state directory holds, per app key, the latest
release with its ETag, fetch and failure times; the host's GitHub backoff; a change counter the
endpoint keys its cached body on; and the poller lease (``craft_apps.host.lease``). Exactly one
poller per host writes, and every write carries the lease's ``Fence``; web workers only read.

``StateStore`` is what the rest of the package uses; it puts together the parts of the host
package that do each job: connections and transactions (``database``), the format and making
the file (``schema``), the rows of apps and backoff (``app_rows``), of each app's release
history (``history_rows``) and of the lease (``lease_rows``).

Invariants: a write changes all of one app's fields or none, and never moves an app's fetch back
in time (but a fetch of another or an unrecorded repository is replaced whatever its time); a
write whose fence is not this file's current holder, number and epoch changes nothing; a file
this code cannot use (corrupt, newer format, locked, unreadable, a symbolic link) raises
``StateUnavailable`` with a one-line message and is never rewritten; a reader never creates the
file, and a writer creates it whole (built aside, then linked into place, never over another
file), so nobody ever sees it half made; no token is stored. Each app's release history is
kept in a table of its own (``history_rows``), written with the same fence.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from craft_apps.host import app_rows, history_rows, lease_rows, schema
from craft_apps.host.database import FileId, StateFile, StateFileMissing, StateUnavailable
from craft_apps.host.lease_rows import POLLER_LEASE, Fence, FenceRejected
from craft_apps.host.schema import DB_FILENAME, FORMAT_VERSION
from craft_apps.kernel.domain import AppState, Backoff, HistoryFetch, Release

__all__ = [
    "DB_FILENAME",
    "FORMAT_VERSION",
    "POLLER_LEASE",
    "Fence",
    "FenceRejected",
    "HistoryFetch",
    "StateFileMissing",
    "StateSnapshot",
    "StateStore",
    "StateUnavailable",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_Rows = tuple[int, list[tuple[Any, ...]], tuple[Any, ...] | None, list[tuple[Any, ...]]]

_WRITER_LOOKS = 3  # how often a writer looks again at a file that changes under it


@dataclass(frozen=True)
class StateSnapshot:
    version: int  # 0 for a missing or empty database
    apps: dict[str, AppState] = field(default_factory=dict)  # only rows that decode
    backoff: Backoff = field(default_factory=Backoff)
    # Per app key, its recent releases newest first by published_at (published, non-draft,
    # prereleases included): empty for an app without history and for a file without the table.
    history: dict[str, tuple[Release, ...]] = field(default_factory=dict)
    # Per app key with a history, the release list's ETag and fetch time and the repository.
    history_fetches: dict[str, HistoryFetch] = field(default_factory=dict)


class StateStore:
    """The state file of one state directory; safe to share between threads and across fork."""

    def __init__(
        self, state_dir: Path, *, busy_timeout_s: float = 0.2, lease_name: str = POLLER_LEASE
    ) -> None:
        self.state_dir = Path(state_dir).absolute()
        self.path = self.state_dir / DB_FILENAME
        self.lease_name = lease_name  # the lease whose fence guards every write
        self.file = StateFile(self.path, busy_timeout_s=busy_timeout_s)  # every connection
        self._ready_for_writing: tuple[int, FileId] | None = None  # (pid, file id) checked for writing
        self._warned_version: int | None = None

    def __repr__(self) -> str:
        return f"StateStore({str(self.path)!r})"

    # ---- read side -------------------------------------------------------------------------

    def version(self) -> int:
        """The change counter; 0 for a missing or empty database. Raises StateUnavailable."""
        db = self._connection(writable=False)
        if db is None:
            return 0
        try:
            return schema.read_version(db, self.path) or 0
        except sqlite3.Error as err:
            raise self.file.unavailable(err) from None

    def version_marker(self) -> tuple[FileId | None, int]:
        """(file identity, version): equal markers mean ``read()`` returns the same, even across
        a file deleted and recreated (whose counter starts again). One stat and one tiny query.
        Raises StateUnavailable."""
        db = self._connection(writable=False)
        if db is None:
            return None, 0
        try:
            return self.file.held_file(writable=False), schema.read_version(db, self.path) or 0
        except sqlite3.Error as err:
            raise self.file.unavailable(err) from None

    def read(self) -> StateSnapshot:
        """Everything in one consistent snapshot. Raises StateUnavailable."""

        def rows(db: sqlite3.Connection) -> _Rows | None:
            version = schema.read_version(db, self.path)
            if version is None:
                return None
            return (version, *app_rows.read_rows(db), history_rows.read_history(db))

        found = self.file.read(rows)  # None: no file, or a blank one
        if found is None:
            return StateSnapshot(0)
        version, app_list, backoff_row, history_list = found
        apps, backoff, problems = app_rows.decode_rows(app_list, backoff_row)
        history, fetches, history_problems = history_rows.decode_history(history_list)
        problems += history_problems
        if problems and self._warned_version != version:
            self._warned_version = version  # once per version, not once per request
            for problem in problems:
                logger.warning("craft_apps state file %s (version %d): %s", self.path, version, problem)
        return StateSnapshot(version, apps, backoff, history, fetches)

    def file_identity(self) -> FileId | None:
        """The state file's identity (``StateFile.identity``), None when there is none: one
        lstat. A different identity means another file. Raises StateUnavailable."""
        return self.file.identity()

    # ---- write side ------------------------------------------------------------------------

    def open_for_writing(self) -> None:
        """Creates the directory and the file as needed and checks what is there.

        A missing file is built aside and linked into place whole; if another process links
        one first, that one is used. A corrupt, foreign or newer-format file raises
        StateUnavailable and is left untouched. Cheap after the first call in a process (until
        the file is replaced).
        """
        file_id = self.file.identity()
        if file_id is not None and self._ready_for_writing == (os.getpid(), file_id):
            return
        schema.prepare_directory(self.state_dir)
        if file_id is None and schema.create_whole(self.file, None):
            logger.info("craft_apps state file %s created (format %d)", self.path, FORMAT_VERSION)
        self._check_for_writing()

    def recreate(
        self,
        name: str,
        fence: Fence,
        *,
        expires_ms: int,
        apps: Mapping[str, AppState],
        backoff: Backoff,
        history: Mapping[str, tuple[Sequence[Release], HistoryFetch]] | None = None,
    ) -> bool:
        """Makes a deleted file anew, whole: ``apps``, ``backoff``, each app's ``history``
        (releases and fetch) and the lease row of ``fence``
        (expiring at ``expires_ms``), so its holder's fence stays valid and what it knew is kept.

        False, with nothing written, when a file is there: another process made it, its lease
        decides, and ``fence`` will be refused there. Raises StateUnavailable.
        """

        def left_out(key: str, err: ValueError) -> None:  # never stored before either
            logger.warning("craft_apps state file %s: left out app %r: %s", self.path, key, err)

        def fill(db: sqlite3.Connection) -> None:
            app_rows.fill(db, apps, backoff, left_out)
            for key, (releases, fetch) in sorted((history or {}).items()):
                try:
                    history_rows.put_history(db, key, releases, fetch)
                except ValueError as err:
                    left_out(key, err)
            lease_rows.insert(db, name, fence, expires_ms=expires_ms)
            schema.bump_version(db)

        schema.prepare_directory(self.state_dir)
        return self.file.identity() is None and schema.create_whole(self.file, fill)

    def put_app(self, key: str, state: AppState, *, fence: Fence) -> bool:
        """Stores all of one app's fields, or nothing. False when it would go back in time.

        Raises FenceRejected (fence not current), StateUnavailable, or ValueError for a state
        that cannot be stored; in every such case nothing changed.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"app key must be a non-empty string, not {key!r}")
        return self._fenced(fence, lambda db: app_rows.put_app(db, key, state))

    def put_history(
        self,
        key: str,
        releases: Sequence[Release],
        *,
        fence: Fence,
        etag: str | None = None,
        fetched_ms: int | None = None,
        repo: str | None = None,
    ) -> None:
        """Replaces the app's history with ``releases`` (kept newest first by ``published_at``,
        one per tag, at most ``history_rows.MAX_HISTORY``), with the release list's ``etag`` and
        ``fetched_ms`` when it came from one, and the ``repo`` it is of.

        Raises FenceRejected, StateUnavailable, or ValueError for a history that cannot be
        stored; in every such case nothing changed.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"app key must be a non-empty string, not {key!r}")
        fetch = HistoryFetch(etag=etag, fetched_ms=fetched_ms, repo=repo)
        history_rows.encode_history(key, releases, fetch)  # refused before anything is opened
        self._fenced(fence, lambda db: history_rows.put_history(db, key, releases, fetch))

    def put_backoff(self, backoff: Backoff, *, fence: Fence) -> None:
        """Stores the host's backoff. Raises FenceRejected, StateUnavailable or ValueError."""
        app_rows.encode_backoff(backoff)  # refused before anything is opened
        self._fenced(fence, lambda db: app_rows.put_backoff(db, backoff))

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self.file.close()
        self._ready_for_writing = None

    def close_current_thread(self) -> None:
        """Closes the calling thread's connections, for threads that end before the process."""
        self.file.close_current_thread()

    def missing(self) -> StateFileMissing:
        """The error for a state file that is not there."""
        return self.file.missing()

    # ---- the lease table, for craft_apps.host.lease ---------------------------------------------

    def acquire_lease(self, name: str, holder: str, *, now_ms: int, ttl_ms: int) -> Fence | None:
        """The new fence when ``holder`` now holds the lease, None when someone else does.
        Raises StateUnavailable (StateFileMissing when there is no file: nothing is created)."""
        return self.write_with(lambda db: lease_rows.acquire(db, name, holder, now_ms=now_ms, ttl_ms=ttl_ms))

    def renew_lease(self, name: str, fence: Fence, *, now_ms: int, ttl_ms: int) -> bool:
        """Extends the lease; False when ``fence`` is no longer this file's current custody."""
        return self.write_with(lambda db: lease_rows.renew(db, name, fence, now_ms=now_ms, ttl_ms=ttl_ms))

    def expire_lease(self, name: str, fence: Fence) -> None:
        """Expires the lease in place, keeping its fence, if ``fence`` is the current custody."""
        self.write_with(lambda db: lease_rows.expire(db, name, fence))

    def lease_row(self, name: str) -> tuple[str, int, int] | None:
        """(holder, fence, expires_ms) of the lease, None when there is none (or no file)."""
        return self.read_with(lambda db: lease_rows.read(db, name))

    # ---- optional tables of other modules (counters, drops) -------------------------------------

    def read_with(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """``work`` in one read snapshot of a file of this format; None when there is no file
        or it is blank. Raises StateUnavailable."""
        return self.file.read(lambda db: None if schema.read_version(db, self.path) is None else work(db))

    def write_with(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, without a fence and without a version bump: for
        this host's own facts (counters), never for what the endpoint serves. Raises
        StateUnavailable."""
        # BEGIN IMMEDIATE takes the write lock first (waiting out the busy timeout), so the
        # statements never meet a snapshot that changed under them.
        return self.file.run(self._writer(), "BEGIN IMMEDIATE", work)

    # ---- internals -------------------------------------------------------------------------

    def _fenced(self, fence: Fence, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, if ``fence`` is the current custody."""

        def write(db: sqlite3.Connection) -> T:
            lease_rows.check_fence(db, self.lease_name, fence, self.path)
            return work(db)

        return self.write_with(write)

    def _writer(self) -> sqlite3.Connection:
        """The connection for a write. It never creates a file: a file deleted under its writer
        is reported (StateFileMissing), for the lease holder to make anew from what it knows."""
        for _ in range(_WRITER_LOOKS):
            file_id = self.file.identity()
            if file_id is None:
                raise self.missing()
            if self._ready_for_writing != (os.getpid(), file_id):
                self._check_for_writing()
            db = self._connection(writable=True)
            if db is not None:
                return db
            # The file changed between the check and the connection: deleted (the next look
            # says so), replaced (checked in turn), or its change time moved by a checkpoint.
        raise StateUnavailable(f"craft_apps state file {self.path} keeps changing under its writer")

    def _check_for_writing(self) -> None:
        """Opens the file that is there for writing once it is known to be ours and sound."""
        db, file_id = schema.open_checked(self.file)
        self.file.keep(db, file_id, writable=True)
        self._ready_for_writing = (os.getpid(), file_id)

    def _connection(self, *, writable: bool) -> sqlite3.Connection | None:
        """This thread's connection; None when there is no file to read, or (writable) when the
        file there is not the one this process checked for writing (open_for_writing first)."""
        ready = self._ready_for_writing
        checked = ready[1] if ready is not None and ready[0] == os.getpid() else None
        return self.file.connection(writable=writable, checked=checked)
