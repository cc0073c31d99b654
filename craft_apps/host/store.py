"""The host's state file as the rest of the package uses it: ``StateStore``.

One private SQLite file per state directory holds, per app key, the latest release with its
ETag, fetch and failure times, each app's release history, the host's GitHub backoff, a change
counter and the poller lease. ``read()`` takes nothing and returns a ``StateSnapshot`` (one
consistent read); ``put_app``, ``put_history`` and ``put_backoff`` write with the lease's
fencing token (``writer``), all of one app's fields or none, never moving a fetch back in time.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from craft_apps.host import app_rows, history_rows, schema
from craft_apps.host.database import FileId, StateFile, StateFileMissing, StateUnavailable
from craft_apps.host.lease_rows import POLLER_LEASE, Fence, FenceRejected
from craft_apps.host.schema import DB_FILENAME, FORMAT_VERSION
from craft_apps.host.writer import StateWriter
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


# Invariants: a write changes all of one app's fields or none, and never moves an app's fetch back
# in time (a fetch of another or an unrecorded repository is replaced whatever its time); a write
# whose fence is not this file's current holder, number and epoch changes nothing; a file this
# code cannot use (corrupt, newer format, locked, unreadable, a symbolic link) raises
# StateUnavailable with a one-line message and is never rewritten; a reader never creates the
# file, and a writer creates it whole (built aside, then linked into place), so nobody ever sees
# it half made; no token is stored.
class StateStore:
    """The state file of one state directory; safe to share between threads and across fork."""

    def __init__(
        self, state_dir: Path, *, busy_timeout_s: float = 0.2, lease_name: str = POLLER_LEASE
    ) -> None:
        self.state_dir = Path(state_dir).absolute()
        self.path = self.state_dir / DB_FILENAME
        self.lease_name = lease_name  # the lease whose fence guards every write
        self.file = StateFile(self.path, busy_timeout_s=busy_timeout_s)  # every connection
        self.writer = StateWriter(self.file, self.state_dir, lease_name=lease_name)
        self._warned_version: int | None = None

    def __repr__(self) -> str:
        return f"StateStore({str(self.path)!r})"

    # ---- read side -------------------------------------------------------------------------

    def version(self) -> int:
        """The change counter; 0 for a missing or empty database. Raises StateUnavailable."""
        db = self.file.connection(writable=False)
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
        db = self.file.connection(writable=False)
        if db is None:
            return None, 0
        held = self.file.connections.held(writable=False)
        try:
            return None if held is None else held.file_id, schema.read_version(db, self.path) or 0
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
        """Creates the directory and the file as needed and checks what is there
        (``StateWriter.open_for_writing``). Raises StateUnavailable."""
        self.writer.open_for_writing()

    def put_app(self, key: str, state: AppState, *, fence: Fence) -> bool:
        """Stores all of one app's fields, or nothing. False when it would go back in time.

        Raises FenceRejected (fence not current), StateUnavailable, or ValueError for a state
        that cannot be stored; in every such case nothing changed.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"app key must be a non-empty string, not {key!r}")
        return self.writer.fenced(fence, lambda db: app_rows.put_app(db, key, state))

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
        self.writer.fenced(fence, lambda db: history_rows.put_history(db, key, releases, fetch))

    def put_backoff(self, backoff: Backoff, *, fence: Fence) -> None:
        """Stores the host's backoff. Raises FenceRejected, StateUnavailable or ValueError."""
        app_rows.encode_backoff(backoff)  # refused before anything is opened
        self.writer.fenced(fence, lambda db: app_rows.put_backoff(db, backoff))

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self.file.close()
        self.writer.forget()

    def missing(self) -> StateFileMissing:
        """The error for a state file that is not there."""
        return self.file.missing()

    # ---- optional tables of other modules (counters, drops) -------------------------------------

    def read_with(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """``work`` in one read snapshot of a file of this format; None when there is no file
        or it is blank. Raises StateUnavailable."""
        return self.file.read(lambda db: None if schema.read_version(db, self.path) is None else work(db))

    def write_with(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, without a fence and without a version bump: for
        this host's own facts (counters), never for what the endpoint serves. Raises
        StateUnavailable."""
        return self.writer.write(work)
