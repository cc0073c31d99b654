"""The state file's schema: its tables, its format checks, the columns added since format 1, and
making the file whole (docs/state-file.md).

``open_checked(file)`` opens the file and returns it with its identity, raising
``StateUnavailable`` with one line when it isn't ours (another format, other tables, a failed
``quick_check``); such a file is never written. The first writer adds the newer columns and
the history table to an older file; ``create_whole`` builds a new file aside and links it in.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

from craft_apps.host.database import FileId, StateFile, StateUnavailable, transaction
from craft_apps.kernel.compat import sqlite_errorname
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
DB_FILENAME = "craft_apps_state.sqlite3"

# The epoch arrived after format 1 shipped: an older file gains the column in place (the default
# matches no fence), and older code, which names its columns, still reads and writes the file.
_EPOCH_COLUMN = "epoch TEXT NOT NULL DEFAULT ''"
# The repository of each row's fetch arrived the same way: a file of 0.2 gains both columns
# (NULL: an unrecorded repository) when a poller opens it for writing; 0.2 names its columns,
# so it still reads and writes the file, and its writes leave them behind the fetch time.
_REPO_COLUMNS = ("repo TEXT", "repo_fetched_ms INTEGER")
# Each app's release history arrived the same way: a table of its own (``history_rows``), made
# by the first writer that opens an older file; 0.2 ignores a table it doesn't know, and a
# reader of a file without it reads "no history".
HISTORY_TABLE = "app_history"
_HISTORY_TABLE_SQL = (
    f"CREATE TABLE IF NOT EXISTS {HISTORY_TABLE} (key TEXT PRIMARY KEY, releases_json TEXT NOT NULL,"
    " etag TEXT, fetched_ms INTEGER, repo TEXT)"
)
_SCHEMA = (
    "CREATE TABLE store_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
    "INSERT INTO store_meta (id, version) VALUES (1, 0)",
    "CREATE TABLE app_state (key TEXT PRIMARY KEY, release_json TEXT NOT NULL, etag TEXT,"
    f" fetched_ms INTEGER, failed_ms INTEGER, failures INTEGER NOT NULL, {', '.join(_REPO_COLUMNS)})",
    "CREATE TABLE backoff (id INTEGER PRIMARY KEY CHECK (id = 1), until_ms INTEGER,"
    " trouble INTEGER NOT NULL)",
    "CREATE TABLE lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL,"
    f" expires_ms INTEGER NOT NULL, {_EPOCH_COLUMN})",
    _HISTORY_TABLE_SQL,
    f"PRAGMA user_version = {FORMAT_VERSION}",
)
_TABLES = frozenset({"store_meta", "app_state", "backoff", "lease"})

# The format check rides along with the counter so that reading the version stays one tiny query.
_VERSION_QUERY = "SELECT user_version, (SELECT version FROM store_meta WHERE id = 1) FROM pragma_user_version"

Fill = Callable[[sqlite3.Connection], None]


# ---- the change counter and the format ---------------------------------------------------------


def read_version(db: sqlite3.Connection, path: Path) -> int | None:
    """The change counter after checking the format; None for a blank database (not set up
    yet). Raises StateUnavailable for a file that isn't ours, or sqlite3.Error."""
    try:
        row = db.execute(_VERSION_QUERY).fetchone()
    except sqlite3.OperationalError as err:
        if sqlite_errorname(err) != "SQLITE_ERROR":
            raise
        _raise_unless_blank(db, path, err)
        return None
    file_format, version = row
    if file_format != FORMAT_VERSION:
        _raise_unless_blank(db, path, None)
        return None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise StateUnavailable(f"craft_apps state file {path} is corrupt (bad version counter)")
    return int(version)


def bump_version(db: sqlite3.Connection) -> None:
    """Moves the change counter: readers look again (call it in the write's transaction)."""
    db.execute("UPDATE store_meta SET version = version + 1 WHERE id = 1")


def is_ours(db: sqlite3.Connection) -> bool:
    """Whether the file is a craft_apps state file of this format, without checking it further:
    enough for the tables of other modules (due marks) to be written to it."""
    file_format, tables = _format_of(db)
    return file_format == FORMAT_VERSION and "store_meta" in tables


def has_repo_columns(db: sqlite3.Connection) -> bool:
    """Whether the app rows record their repository (a file of 0.2 doesn't yet)."""
    return "repo_fetched_ms" in {str(row[1]) for row in db.execute("PRAGMA table_info(app_state)")}


def _format_of(db: sqlite3.Connection) -> tuple[int, set[str]]:
    file_format = db.execute("PRAGMA user_version").fetchone()[0]
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return file_format, tables


def _raise_unless_blank(db: sqlite3.Connection, path: Path, err: sqlite3.Error | None) -> None:
    """Returns for a blank database; otherwise raises StateUnavailable saying what is wrong."""
    file_format, tables = _format_of(db)
    problem = _format_problem(file_format, tables)
    if problem is None and file_format == 0:
        return
    raise StateUnavailable(f"craft_apps state file {path} {problem or f'cannot be read ({one_line(err)})'}")


def _format_problem(file_format: int, tables: set[str]) -> str | None:
    if file_format > FORMAT_VERSION:
        return f"is from a newer format version {file_format} (this code reads {FORMAT_VERSION})"
    if file_format == 0:
        return f"is not a craft_apps state file (tables {sorted(tables)})" if tables else None
    if file_format != FORMAT_VERSION:
        return f"has unknown format version {file_format}"
    missing = _TABLES - tables
    return f"is corrupt (missing tables {sorted(missing)})" if missing else None


# ---- opening the file there for writing ---------------------------------------------------------


def open_checked(file: StateFile) -> tuple[sqlite3.Connection, FileId]:
    """A write connection to the file that is there, once it is known to be ours and sound, in
    WAL mode, set up if blank and brought up to the current columns; with the identity of the
    file it checked. Raises StateUnavailable (StateFileMissing when there is no file)."""
    if file.identity() is None:
        raise file.missing()
    db = file.connect(writable=True)
    try:
        _check_before_writing(db, file.path)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise StateUnavailable(f"craft_apps state file {file.path} could not be switched to WAL mode")
        with transaction(db, "BEGIN IMMEDIATE"):
            _create_schema_if_blank(db, file.path)
            _add_epoch_if_missing(db)
            _add_repo_if_missing(db, file.path)
            db.execute(_HISTORY_TABLE_SQL)  # a no-op once there
        file_id = file.identity()
        if file_id is None:
            raise file.missing()
    except sqlite3.Error as err:
        db.close()
        raise file.unavailable(err) from None
    except BaseException:
        db.close()
        raise
    return db, file_id


def _check_before_writing(db: sqlite3.Connection, path: Path) -> None:
    # Reads only, in one snapshot: nothing may be written to a file until it is known to be
    # ours and sound, and a file set up by another process meanwhile is seen whole.
    with transaction(db, "BEGIN"):
        file_format, tables = _format_of(db)
        check = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
    problem = _format_problem(file_format, tables)
    if problem is not None:
        raise StateUnavailable(f"craft_apps state file {path} {problem}")
    if check != ["ok"]:
        raise StateUnavailable(f"craft_apps state file {path} is corrupt ({one_line(check[0])})")


def _create_schema_if_blank(db: sqlite3.Connection, path: Path) -> None:
    # Checked again under the write lock: another process may have set it up meanwhile.
    file_format = db.execute("PRAGMA user_version").fetchone()[0]
    if file_format == FORMAT_VERSION:
        return
    problem = _format_problem(*_format_of(db))
    if problem is not None:
        raise StateUnavailable(f"craft_apps state file {path} {problem}")
    for statement in _SCHEMA:
        db.execute(statement)
    logger.info("craft_apps state file %s set up (format %d)", path, FORMAT_VERSION)


def _add_epoch_if_missing(db: sqlite3.Connection) -> None:
    if "epoch" not in {str(row[1]) for row in db.execute("PRAGMA table_info(lease)")}:
        db.execute(f"ALTER TABLE lease ADD COLUMN {_EPOCH_COLUMN}")


def _add_repo_if_missing(db: sqlite3.Connection, path: Path) -> None:
    if not has_repo_columns(db):
        for column in _REPO_COLUMNS:
            db.execute(f"ALTER TABLE app_state ADD COLUMN {column}")
        bump_version(db)  # readers look again, and see every row's repository unrecorded
        logger.info(
            "craft_apps state file %s: app rows now record their repository (rows of 0.2 are "
            "kept; each is taken as its app's while its release's page is in the app's repository)",
            path,
        )


# ---- creating the file ---------------------------------------------------------------------------


def prepare_directory(state_dir: Path) -> None:
    """Makes the state directory, private (0700), if it isn't there; warns once when an existing
    one is readable by others. Raises StateUnavailable."""
    try:
        state_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(state_dir, 0o700)
            os.chmod(state_dir, 0o700)  # whatever the umask
        except FileExistsError:
            mode = stat.S_IMODE(os.stat(state_dir).st_mode)
            if mode & 0o077:
                logger.warning("craft_apps state directory %s is readable by others (%o)", state_dir, mode)
    except OSError as err:
        raise StateUnavailable(
            f"craft_apps state directory {state_dir} cannot be created ({one_line(err.strerror)})"
        ) from None


def create_whole(file: StateFile, fill: Fill | None) -> bool:
    """Builds a complete file (schema, then ``fill``) beside the real one and links it into
    place. False, with nothing changed, when a file appeared there first: link(2), unlike
    rename(2), never replaces one. Raises StateUnavailable."""
    aside = file.path.parent / f".{DB_FILENAME}.{secrets.token_hex(6)}.new"
    try:
        fd = os.open(aside, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
        finally:
            os.close(fd)
        _build(file, aside, fill)
        return _link_into_place(file, aside)
    except sqlite3.Error as err:
        raise file.unavailable(err) from None
    except OSError as err:
        raise StateUnavailable(
            f"craft_apps state file {file.path} cannot be created ({one_line(err.strerror)})"
        ) from None
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{aside}{suffix}")


def _build(file: StateFile, aside: Path, fill: Fill | None) -> None:
    db = file.connect(writable=True, path=aside)
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
        raise StateUnavailable(f"craft_apps state file {file.path} could not be switched to WAL mode")


def _link_into_place(file: StateFile, aside: Path) -> bool:
    """Links ``aside`` in as the state file unless one is there. A ``-wal`` or ``-shm`` left
    by a deleted file is removed first: SQLite would otherwise replay that old journal into
    the new file and bring back what was deleted. Creators take turns under a lock on the
    directory, so none removes the journal of a file another one just linked."""
    lock_path = file.path.parent / f"{DB_FILENAME}-create.lock"
    lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        if file.identity() is not None:
            return False
        for companion in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{file.path}{companion}")
        try:
            os.link(aside, file.path)
        except FileExistsError:
            return False
        return True
    finally:
        os.close(lock_fd)  # releases the lock
