"""The host's state file: what this host's poller knows, read by every web worker on the host.

One private SQLite database (WAL mode) in the state directory holds, per app key, the latest
release with its ETag, fetch and failure times; the host's GitHub backoff; a change counter the
endpoint keys its cached body on; and the poller lease (``craft_apps.host.lease``). Exactly one
poller per host writes, and every write carries the lease's ``Fence``; web workers only read.

Each row records the repository its fetch is of (``repo``) with the fetch time it was recorded
at (``repo_fetched_ms``): a row whose fetch a writer that doesn't know the column (0.2) moved
since reads as of an unrecorded repository (``AppState.repo`` None), never as the recorded one.

Invariants: a write changes all of one app's fields or none, and never moves an app's fetch back
in time (but a fetch of another or an unrecorded repository is replaced whatever its time); a
write whose fence is not this file's current holder, number and epoch changes nothing; a file
this code cannot use (corrupt, newer format, locked, unreadable, a symbolic link) raises
``StateUnavailable`` with a one-line message and is never rewritten; a reader never creates the
file, and a writer creates it whole (built aside, then linked into place, never over another
file), so nobody ever sees it half made; no token is stored.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from craft_apps.codec import decode_release, encode_release
from craft_apps.compat import sqlite_errorname
from craft_apps.domain import (
    AppState,
    Backoff,
    is_stored_count,
    is_stored_etag,
    is_stored_repo,
    is_stored_time,
    newer_wins,
    same_repo,
)
from craft_apps.host.database import FileId, StateFile, StateFileMissing, StateUnavailable, transaction
from craft_apps.text import one_line

__all__ = [
    "DB_FILENAME",
    "FORMAT_VERSION",
    "POLLER_LEASE",
    "Fence",
    "FenceRejected",
    "StateFileMissing",
    "StateSnapshot",
    "StateStore",
    "StateUnavailable",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT_VERSION = 1
DB_FILENAME = "craft_apps_state.sqlite3"
POLLER_LEASE = "poller"
_WRITER_LOOKS = 3  # how often a writer looks again at a file that changes under it

# The epoch arrived after format 1 shipped: an older file gains the column in place (the default
# matches no fence), and older code, which names its columns, still reads and writes the file.
_EPOCH_COLUMN = "epoch TEXT NOT NULL DEFAULT ''"
# The repository of each row's fetch arrived the same way: a file of 0.2 gains both columns
# (NULL: an unrecorded repository) when a poller opens it for writing; 0.2 names its columns,
# so it still reads and writes the file, and its writes leave them behind the fetch time.
_REPO_COLUMNS = ("repo TEXT", "repo_fetched_ms INTEGER")
_SCHEMA = (
    "CREATE TABLE store_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
    "INSERT INTO store_meta (id, version) VALUES (1, 0)",
    "CREATE TABLE app_state (key TEXT PRIMARY KEY, release_json TEXT NOT NULL, etag TEXT,"
    f" fetched_ms INTEGER, failed_ms INTEGER, failures INTEGER NOT NULL, {', '.join(_REPO_COLUMNS)})",
    "CREATE TABLE backoff (id INTEGER PRIMARY KEY CHECK (id = 1), until_ms INTEGER,"
    " trouble INTEGER NOT NULL)",
    "CREATE TABLE lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL,"
    f" expires_ms INTEGER NOT NULL, {_EPOCH_COLUMN})",
    f"PRAGMA user_version = {FORMAT_VERSION}",
)
_TABLES = frozenset({"store_meta", "app_state", "backoff", "lease"})

# The format check rides along with the counter so that version() stays one tiny query.
_VERSION_QUERY = "SELECT user_version, (SELECT version FROM store_meta WHERE id = 1) FROM pragma_user_version"
_APP_COLUMNS_0_2 = "release_json, etag, fetched_ms, failed_ms, failures"
_APP_COLUMNS = f"{_APP_COLUMNS_0_2}, repo, repo_fetched_ms"

# Only expired leases can change hands, and the fence goes up whenever they do; one statement,
# so two processes racing for the same expired lease cannot both see it expired. Every custody
# gets a random epoch: a file deleted and made anew starts its fences at 1 again, and the epoch
# is what keeps a former holder's fence 1 from matching a newcomer's.
_ACQUIRE_LEASE = """
INSERT INTO lease (name, holder, fence, expires_ms, epoch) VALUES (:name, :holder, 1, :expires_ms, :epoch)
ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder, fence = lease.fence + 1, expires_ms = excluded.expires_ms,
        epoch = excluded.epoch
    WHERE lease.expires_ms <= :now_ms
RETURNING fence
"""
_THIS_CUSTODY = "name = :name AND holder = :holder AND fence = :fence AND epoch = :epoch"
_RENEW_LEASE = f"UPDATE lease SET expires_ms = :expires_ms WHERE {_THIS_CUSTODY} RETURNING fence"
_EXPIRE_LEASE = f"UPDATE lease SET expires_ms = 0 WHERE {_THIS_CUSTODY}"
_INSERT_LEASE = (
    "INSERT INTO lease (name, holder, fence, expires_ms, epoch)"
    " VALUES (:name, :holder, :fence, :expires_ms, :epoch)"
)
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


class FenceRejected(Exception):
    """A write carried a fence that is no longer the lease's current one; nothing was written."""


@dataclass(frozen=True)
class Fence:
    """What every write carries: the custody of the lease as this file's lease row records it.

    ``number`` increases at every change of custody within one file; ``epoch`` is random per
    custody, so a fence taken on a file that was since deleted matches nothing in its successor.
    """

    holder: str
    number: int
    epoch: str

    def __str__(self) -> str:
        return str(self.number)

    def params(self, name: str) -> dict[str, Any]:
        return {"name": name, "holder": self.holder, "fence": self.number, "epoch": self.epoch}


@dataclass(frozen=True)
class StateSnapshot:
    version: int  # 0 for a missing or empty database
    apps: dict[str, AppState] = field(default_factory=dict)  # only rows that decode
    backoff: Backoff = field(default_factory=Backoff)


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
            return self._read_version(db) or 0
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def version_marker(self) -> tuple[FileId | None, int]:
        """(file identity, version): equal markers mean ``read()`` returns the same, even across
        a file deleted and recreated (whose counter starts again). One stat and one tiny query.
        Raises StateUnavailable."""
        db = self._connection(writable=False)
        if db is None:
            return None, 0
        try:
            return self.file.held_file(writable=False), self._read_version(db) or 0
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def read(self) -> StateSnapshot:
        """Everything in one consistent snapshot. Raises StateUnavailable."""
        db = self._connection(writable=False)
        if db is None:
            return StateSnapshot(0)
        try:
            with transaction(db, "BEGIN"):
                version = self._read_version(db)
                if version is None:
                    return StateSnapshot(0)
                columns = _APP_COLUMNS if _has_repo_columns(db) else f"{_APP_COLUMNS_0_2}, NULL, NULL"
                rows = db.execute(f"SELECT key, {columns} FROM app_state ORDER BY key").fetchall()
                backoff_row = db.execute("SELECT until_ms, trouble FROM backoff WHERE id = 1").fetchone()
        except sqlite3.Error as err:
            raise self._unavailable(err) from None
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
        if problems and self._warned_version != version:
            self._warned_version = version  # once per version, not once per request
            for problem in problems:
                logger.warning("craft_apps state file %s (version %d): %s", self.path, version, problem)
        return StateSnapshot(version, apps, backoff)

    # ---- write side ------------------------------------------------------------------------

    def open_for_writing(self) -> None:
        """Creates the directory and the file as needed and checks what is there.

        A missing file is built aside and linked into place whole; if another process links
        one first, that one is used. A corrupt, foreign or newer-format file raises
        StateUnavailable and is left untouched. Cheap after the first call in a process (until
        the file is replaced).
        """
        file_id = self._file_id()
        if file_id is not None and self._ready_for_writing == (os.getpid(), file_id):
            return
        self._prepare_directory()
        if file_id is None and self._create_whole(None):
            logger.info("craft_apps state file %s created (format %d)", self.path, FORMAT_VERSION)
        self._check_for_writing()

    def recreate(
        self, name: str, fence: Fence, *, expires_ms: int, apps: Mapping[str, AppState], backoff: Backoff
    ) -> bool:
        """Makes a deleted file anew, whole: ``apps``, ``backoff`` and the lease row of ``fence``
        (expiring at ``expires_ms``), so its holder's fence stays valid and what it knew is kept.

        False, with nothing written, when a file is there: another process made it, its lease
        decides, and ``fence`` will be refused there. Raises StateUnavailable.
        """

        def fill(db: sqlite3.Connection) -> None:
            for key, state in sorted(apps.items()):
                try:
                    row = _encode_app(key, state)
                except ValueError as err:  # never stored before either: leave it out
                    logger.warning("craft_apps state file %s: left out app %r: %s", self.path, key, err)
                    continue
                db.execute(_UPSERT_APP, (key, *row))
            db.execute(_UPSERT_BACKOFF, _encode_backoff(backoff))
            db.execute(_INSERT_LEASE, {**fence.params(name), "expires_ms": expires_ms})
            self._bump_version(db)

        self._prepare_directory()
        return self._file_id() is None and self._create_whole(fill)

    def file_identity(self) -> FileId | None:
        """The state file's identity (``StateFile.identity``), None when there is none: one
        lstat. A different identity means another file. Raises StateUnavailable."""
        return self._file_id()

    def _check_for_writing(self) -> None:
        """Opens the file that is there for writing once it is known to be ours and sound."""
        pid = os.getpid()
        if self._file_id() is None:
            raise self.missing()
        db = self.file.connect(writable=True)
        try:
            self._check_before_writing(db)
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise StateUnavailable(f"craft_apps state file {self.path} could not be switched to WAL mode")
            with transaction(db, "BEGIN IMMEDIATE"):
                self._create_schema_if_blank(db)
                self._add_epoch_if_missing(db)
                self._add_repo_if_missing(db)
            file_id = self._file_id()
            if file_id is None:
                raise self.missing()
        except sqlite3.Error as err:
            db.close()
            raise self._unavailable(err) from None
        except BaseException:
            db.close()
            raise
        self.file.keep(db, file_id, writable=True)
        self._ready_for_writing = (pid, file_id)

    def put_app(self, key: str, state: AppState, *, fence: Fence) -> bool:
        """Stores all of one app's fields, or nothing. False when it would go back in time.

        Raises FenceRejected (fence not current), StateUnavailable, or ValueError for a state
        that cannot be stored; in every such case nothing changed.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f"app key must be a non-empty string, not {key!r}")
        db = self._writer()
        try:
            with transaction(db, "BEGIN IMMEDIATE"):
                self._check_fence(db, fence)
                old = db.execute(f"SELECT {_APP_COLUMNS} FROM app_state WHERE key = ?", (key,)).fetchone()
                stored_fetched = old[2] if old is not None and is_stored_time(old[2]) else None
                if not newer_wins(stored_fetched, state.fetched_ms) and _same_repo_row(old, state):
                    return False
                new = _encode_app(key, state)
                if old is None or tuple(old) != new:
                    db.execute(_UPSERT_APP, (key, *new))
                    self._bump_version(db)
                return True
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def put_backoff(self, backoff: Backoff, *, fence: Fence) -> None:
        """Stores the host's backoff. Raises FenceRejected, StateUnavailable or ValueError."""
        new = _encode_backoff(backoff)
        db = self._writer()
        try:
            with transaction(db, "BEGIN IMMEDIATE"):
                self._check_fence(db, fence)
                old = db.execute("SELECT until_ms, trouble FROM backoff WHERE id = 1").fetchone()
                if old is None or tuple(old) != new:
                    db.execute(_UPSERT_BACKOFF, new)
                    self._bump_version(db)
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def close(self) -> None:
        """Closes this process's connections (those of every thread: call it at shutdown)."""
        self.file.close()
        self._ready_for_writing = None

    def close_current_thread(self) -> None:
        """Closes the calling thread's connections, for threads that end before the process."""
        self.file.close_current_thread()

    # ---- the lease table, for craft_apps.host.lease ---------------------------------------------

    def acquire_lease(self, name: str, holder: str, *, now_ms: int, ttl_ms: int) -> Fence | None:
        """The new fence when ``holder`` now holds the lease, None when someone else does.
        Raises StateUnavailable (StateFileMissing when there is no file: nothing is created)."""
        epoch = secrets.token_hex(8)
        params = {
            "name": name,
            "holder": holder,
            "now_ms": now_ms,
            "expires_ms": now_ms + ttl_ms,
            "epoch": epoch,
        }
        rows = self._write_statement(_ACQUIRE_LEASE, params)
        return Fence(holder, int(rows[0][0]), epoch) if rows else None

    def renew_lease(self, name: str, fence: Fence, *, now_ms: int, ttl_ms: int) -> bool:
        """Extends the lease; False when ``fence`` is no longer this file's current custody."""
        return bool(
            self._write_statement(_RENEW_LEASE, {**fence.params(name), "expires_ms": now_ms + ttl_ms})
        )

    def expire_lease(self, name: str, fence: Fence) -> None:
        """Expires the lease in place, keeping its fence, if ``fence`` is the current custody."""
        self._write_statement(_EXPIRE_LEASE, fence.params(name))

    def lease_row(self, name: str) -> tuple[str, int, int] | None:
        """(holder, fence, expires_ms) of the lease, None when there is none (or no file)."""
        row = self.read_with(
            lambda db: db.execute(
                "SELECT holder, fence, expires_ms FROM lease WHERE name = ?", (name,)
            ).fetchone()
        )
        return None if row is None else (str(row[0]), int(row[1]), int(row[2]))

    # ---- optional tables of other modules (craft_apps.host.counters) -----------------------

    def read_with(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """``work`` in one read snapshot of a file of this format; None when there is no file
        or it is blank. Raises StateUnavailable."""
        db = self._connection(writable=False)
        if db is None:
            return None
        try:
            with transaction(db, "BEGIN"):
                if self._read_version(db) is None:
                    return None
                return work(db)
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def write_with(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` in one write transaction, without a fence and without a version bump: for
        this host's own facts (counters), never for what the endpoint serves. Raises
        StateUnavailable."""
        db = self._writer()
        try:
            with transaction(db, "BEGIN IMMEDIATE"):
                return work(db)
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    # ---- internals -------------------------------------------------------------------------

    def _write_statement(self, sql: str, params: dict[str, Any]) -> list[Any]:
        db = self._writer()
        try:
            # BEGIN IMMEDIATE takes the write lock first (waiting out the busy timeout), so the
            # statement never meets a snapshot that changed under it.
            with transaction(db, "BEGIN IMMEDIATE"):
                return db.execute(sql, params).fetchall()
        except sqlite3.Error as err:
            raise self._unavailable(err) from None

    def _writer(self) -> sqlite3.Connection:
        """The connection for a write. It never creates a file: a file deleted under its writer
        is reported (StateFileMissing), for the lease holder to make anew from what it knows."""
        for _ in range(_WRITER_LOOKS):
            file_id = self._file_id()
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

    def missing(self) -> StateFileMissing:
        """The error for a state file that is not there."""
        return self.file.missing()

    def _connection(self, *, writable: bool) -> sqlite3.Connection | None:
        """This thread's connection; None when there is no file to read, or (writable) when the
        file there is not the one this process checked for writing (open_for_writing first)."""
        ready = self._ready_for_writing
        checked = ready[1] if ready is not None and ready[0] == os.getpid() else None
        return self.file.connection(writable=writable, checked=checked)

    def _file_id(self) -> FileId | None:
        return self.file.identity()

    def _read_version(self, db: sqlite3.Connection) -> int | None:
        """The counter after checking the format; None for a blank database (not set up yet)."""
        try:
            row = db.execute(_VERSION_QUERY).fetchone()
        except sqlite3.OperationalError as err:
            if sqlite_errorname(err) != "SQLITE_ERROR":
                raise
            self._raise_unless_blank(db, err)
            return None
        file_format, version = row
        if file_format != FORMAT_VERSION:
            self._raise_unless_blank(db, None)
            return None
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise StateUnavailable(f"craft_apps state file {self.path} is corrupt (bad version counter)")
        return int(version)

    def _raise_unless_blank(self, db: sqlite3.Connection, err: sqlite3.Error | None) -> None:
        """Returns for a blank database; otherwise raises StateUnavailable saying what is wrong."""
        file_format = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        problem = self._format_problem(file_format, tables)
        if problem is None and file_format == 0:
            return
        raise StateUnavailable(
            f"craft_apps state file {self.path} {problem or f'cannot be read ({one_line(err)})'}"
        )

    @staticmethod
    def _format_problem(file_format: int, tables: set[str]) -> str | None:
        if file_format > FORMAT_VERSION:
            return f"is from a newer format version {file_format} (this code reads {FORMAT_VERSION})"
        if file_format == 0:
            return f"is not a craft_apps state file (tables {sorted(tables)})" if tables else None
        if file_format != FORMAT_VERSION:
            return f"has unknown format version {file_format}"
        missing = _TABLES - tables
        return f"is corrupt (missing tables {sorted(missing)})" if missing else None

    def _check_before_writing(self, db: sqlite3.Connection) -> None:
        # Reads only, in one snapshot: nothing may be written to a file until it is known to be
        # ours and sound, and a file set up by another process meanwhile is seen whole.
        with transaction(db, "BEGIN"):
            file_format = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            check = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
        problem = self._format_problem(file_format, tables)
        if problem is not None:
            raise StateUnavailable(f"craft_apps state file {self.path} {problem}")
        if check != ["ok"]:
            raise StateUnavailable(f"craft_apps state file {self.path} is corrupt ({one_line(check[0])})")

    def _create_schema_if_blank(self, db: sqlite3.Connection) -> None:
        # Checked again under the write lock: another process may have set it up meanwhile.
        file_format = db.execute("PRAGMA user_version").fetchone()[0]
        if file_format == FORMAT_VERSION:
            return
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        problem = self._format_problem(file_format, tables)
        if problem is not None:
            raise StateUnavailable(f"craft_apps state file {self.path} {problem}")
        for statement in _SCHEMA:
            db.execute(statement)
        logger.info("craft_apps state file %s set up (format %d)", self.path, FORMAT_VERSION)

    @staticmethod
    def _add_epoch_if_missing(db: sqlite3.Connection) -> None:
        if "epoch" not in {str(row[1]) for row in db.execute("PRAGMA table_info(lease)")}:
            db.execute(f"ALTER TABLE lease ADD COLUMN {_EPOCH_COLUMN}")

    def _add_repo_if_missing(self, db: sqlite3.Connection) -> None:
        if not _has_repo_columns(db):
            for column in _REPO_COLUMNS:
                db.execute(f"ALTER TABLE app_state ADD COLUMN {column}")
            self._bump_version(db)  # readers look again, and see every row's repository unrecorded
            logger.info(
                "craft_apps state file %s: app rows now record their repository (rows of 0.2 are "
                "kept; each is taken as its app's while its release's page is in the app's repository)",
                self.path,
            )

    def _create_whole(self, fill: Callable[[sqlite3.Connection], None] | None) -> bool:
        """Builds a complete file (schema, then ``fill``) beside the real one and links it into
        place. False, with nothing changed, when a file appeared there first: link(2), unlike
        rename(2), never replaces one. Raises StateUnavailable."""
        aside = self.state_dir / f".{DB_FILENAME}.{secrets.token_hex(6)}.new"
        try:
            fd = os.open(aside, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(fd, 0o600)  # whatever the umask
            finally:
                os.close(fd)
            db = self.file.connect(writable=True, path=aside)
            try:
                with transaction(db, "BEGIN IMMEDIATE"):
                    for statement in _SCHEMA:
                        db.execute(statement)
                    if fill is not None:
                        fill(db)
                # WAL from the start, so nobody ever has to switch it under the others.
                mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
            finally:
                db.close()  # the last connection: its -wal and -shm are folded in and removed
            if mode is None or str(mode[0]).lower() != "wal":
                raise StateUnavailable(f"craft_apps state file {self.path} could not be switched to WAL mode")
            return self._link_into_place(aside)
        except sqlite3.Error as err:
            raise self._unavailable(err) from None
        except OSError as err:
            raise StateUnavailable(
                f"craft_apps state file {self.path} cannot be created ({one_line(err.strerror)})"
            ) from None
        finally:
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{aside}{suffix}")

    def _link_into_place(self, aside: Path) -> bool:
        """Links ``aside`` in as the state file unless one is there. A ``-wal`` or ``-shm`` left
        by a deleted file is removed first: SQLite would otherwise replay that old journal into
        the new file and bring back what was deleted. Creators take turns under a lock on the
        directory, so none removes the journal of a file another one just linked."""
        lock_path = self.state_dir / f"{DB_FILENAME}-create.lock"
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            if self._file_id() is not None:
                return False
            for companion in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{companion}")
            try:
                os.link(aside, self.path)
            except FileExistsError:
                return False
            return True
        finally:
            os.close(lock_fd)  # releases the lock

    def _prepare_directory(self) -> None:
        try:
            self.state_dir.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(self.state_dir, 0o700)
                os.chmod(self.state_dir, 0o700)  # whatever the umask
            except FileExistsError:
                mode = stat.S_IMODE(os.stat(self.state_dir).st_mode)
                if mode & 0o077:
                    logger.warning(
                        "craft_apps state directory %s is readable by others (%o)", self.state_dir, mode
                    )
        except OSError as err:
            raise StateUnavailable(
                f"craft_apps state directory {self.state_dir} cannot be created ({one_line(err.strerror)})"
            ) from None

    def _check_fence(self, db: sqlite3.Connection, fence: Fence) -> None:
        row = db.execute(
            "SELECT holder, fence, epoch FROM lease WHERE name = ?", (self.lease_name,)
        ).fetchone()
        if (
            isinstance(fence, Fence)
            and row is not None
            and tuple(row) == (fence.holder, fence.number, fence.epoch)
        ):
            return
        held = "nobody" if row is None else f"{row[0]} with fence {row[1]}"
        raise FenceRejected(
            f"write with fence {fence} refused: lease {self.lease_name!r} of {self.path} is held by {held}"
        )

    def _bump_version(self, db: sqlite3.Connection) -> None:
        db.execute("UPDATE store_meta SET version = version + 1 WHERE id = 1")

    def _unavailable(self, err: sqlite3.Error) -> StateUnavailable:
        return self.file.unavailable(err)


def _has_repo_columns(db: sqlite3.Connection) -> bool:
    return "repo_fetched_ms" in {str(row[1]) for row in db.execute("PRAGMA table_info(app_state)")}


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


def _encode_app(
    key: str, state: AppState
) -> tuple[str, str | None, int | None, int | None, int, str | None, int | None]:
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


def _encode_backoff(backoff: Backoff) -> tuple[int | None, int]:
    if backoff.until_ms is not None and not is_stored_time(backoff.until_ms):
        raise ValueError(f"backoff until_ms must be Unix milliseconds or None, not {backoff.until_ms!r}")
    if not is_stored_count(backoff.trouble):
        raise ValueError(f"backoff trouble must be a count from 0 to 2^32 - 1, not {backoff.trouble!r}")
    return (backoff.until_ms, backoff.trouble)


def _decode_backoff_row(row: tuple[Any, ...]) -> Backoff:
    until_ms, trouble = row
    if until_ms is not None and not is_stored_time(until_ms):
        raise ValueError("until_ms is not a time in Unix ms")
    if not is_stored_count(trouble):
        raise ValueError("trouble is not a count")
    return Backoff(until_ms=until_ms, trouble=trouble)
