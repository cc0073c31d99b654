"""The host's state file: atomic, fenced, never back in time, private, and safe with bad files."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import random
import sqlite3
import stat
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.conf import app_settings
from craft_apps.host import app_rows
from craft_apps.host.lease import Lease
from craft_apps.host.remake import recreate
from craft_apps.host.store import (
    DB_FILENAME,
    FORMAT_VERSION,
    Fence,
    FenceRejected,
    StateFileMissing,
    StateSnapshot,
    StateStore,
    StateUnavailable,
)
from craft_apps.kernel.domain import AppState, Backoff
from craft_apps.testing.clock import START_MS, FakeClock
from tests.host.support import FIRST_FORMAT, fetched, make_release


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def raw(store: StateStore) -> sqlite3.Connection:
    """A plain connection, standing in for someone tampering with the file."""
    return sqlite3.connect(store.path, isolation_level=None)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- missing, empty, round trip ----------------------------------------------------------------


def test_a_missing_file_reads_as_empty_and_a_reader_never_creates_it(state_dir: Path) -> None:
    store = StateStore(state_dir)
    assert store.version() == 0
    assert store.read() == StateSnapshot(0, {}, Backoff())
    assert not state_dir.exists()

    state_dir.mkdir()
    assert store.read().version == 0
    assert list(state_dir.iterdir()) == []


def test_a_fresh_database_is_empty_at_version_zero(store: StateStore) -> None:
    store.open_for_writing()
    assert store.path.exists()
    assert StateStore(store.state_dir).read() == StateSnapshot(0, {}, Backoff())
    with raw(store) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (FORMAT_VERSION,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_apps_and_backoff_round_trip(store: StateStore, fence: Fence) -> None:
    failing = AppState(latest_release=None, fetched_ms=None, etag=None, failed_ms=START_MS, failures=3)
    no_release = AppState(latest_release=None, fetched_ms=START_MS + 5, etag='W/"e"')
    assert store.put_app("photocraft", fetched(), fence=fence)
    assert store.put_app("filmcraft", failing, fence=fence)
    assert store.put_app("pdfcraft", no_release, fence=fence)
    store.put_backoff(Backoff(until_ms=START_MS + 60_000, trouble=2), fence=fence)

    snapshot = StateStore(store.state_dir).read()  # another reader, as a web worker would be
    assert snapshot.apps == {"photocraft": fetched(), "filmcraft": failing, "pdfcraft": no_release}
    assert snapshot.backoff == Backoff(until_ms=START_MS + 60_000, trouble=2)
    assert snapshot.version == 4


def test_the_version_counts_committed_changes_only(store: StateStore, writer: Lease, fence: Fence) -> None:
    store.open_for_writing()
    assert store.version() == 0
    store.put_app("photocraft", fetched(), fence=fence)
    assert store.version() == 1
    store.put_app("photocraft", fetched(), fence=fence)  # identical: nothing changed
    assert store.version() == 1
    store.put_app("photocraft", fetched(START_MS + 1), fence=fence)
    assert store.version() == 2
    store.put_backoff(Backoff(until_ms=START_MS, trouble=1), fence=fence)
    store.put_backoff(Backoff(until_ms=START_MS, trouble=1), fence=fence)
    assert store.version() == 3
    assert not store.put_app("photocraft", fetched(START_MS), fence=fence)  # refused
    assert store.version() == 3
    writer.release()  # lease changes don't touch what the endpoint serves
    assert store.version() == 3


# ---- merge rules --------------------------------------------------------------------------------


def test_a_write_never_goes_back_in_time(store: StateStore, fence: Fence) -> None:
    assert store.put_app("photocraft", fetched(START_MS + 2_000, tag="v2.0.0"), fence=fence)

    assert not store.put_app("photocraft", fetched(START_MS + 1_000, tag="v1.0.0"), fence=fence)
    assert not store.put_app("photocraft", AppState(failed_ms=START_MS + 9_000, failures=1), fence=fence)

    app = store.read().apps["photocraft"]
    assert app.fetched_ms == START_MS + 2_000
    assert app.latest_release is not None
    assert app.latest_release.tag == "v2.0.0"
    assert app.failures == 0


def test_a_failure_recorded_after_a_fetch_is_stored(store: StateStore, fence: Fence) -> None:
    assert store.put_app("photocraft", fetched(START_MS), fence=fence)
    after = fetched(START_MS)
    after.failed_ms, after.failures = START_MS + 120_000, 1
    assert store.put_app("photocraft", after, fence=fence)  # same fetched_ms: allowed
    app = store.read().apps["photocraft"]
    assert app.failed_ms == START_MS + 120_000
    assert app.is_failing()
    assert app.latest_release == make_release()  # the good release is kept


def test_failures_before_any_fetch_are_stored(store: StateStore, fence: Fence) -> None:
    assert store.put_app("cadcraft", AppState(failed_ms=START_MS, failures=1), fence=fence)
    assert store.put_app("cadcraft", AppState(failed_ms=START_MS + 1, failures=2), fence=fence)
    assert store.read().apps["cadcraft"].failures == 2


# ---- atomicity and fencing ----------------------------------------------------------------------


def test_a_release_that_cannot_be_encoded_changes_nothing(store: StateStore, fence: Fence) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    before = store.read()
    broken = dataclasses.replace(make_release(), published_at="yesterday")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'photocraft': the release cannot be encoded"):
        store.put_app("photocraft", AppState(latest_release=broken, fetched_ms=START_MS + 1), fence=fence)
    assert store.read() == before


def test_a_failure_in_the_middle_of_a_write_rolls_all_of_it_back(
    store: StateStore, fence: Fence, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    before = store.read()

    def fail(db: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setattr(app_rows, "bump_version", fail)  # runs after the row was written
    with pytest.raises(StateUnavailable, match="simulated"):
        store.put_app("photocraft", fetched(START_MS + 1, tag="v9.9.9", etag='"x"'), fence=fence)
    with pytest.raises(StateUnavailable):
        store.put_backoff(Backoff(until_ms=START_MS, trouble=5), fence=fence)
    assert StateStore(store.state_dir).read() == before


@pytest.mark.parametrize(
    "stale",
    [
        {"number": 99},  # another number
        {"number": 0},
        {"holder": "host-b:2:bbbb"},  # another holder with the same number
        {"epoch": "0123456789abcdef"},  # the same holder and number of another custody
    ],
)
def test_a_write_with_a_stale_fence_is_rejected_and_changes_nothing(
    store: StateStore, fence: Fence, stale: dict[str, object]
) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    before = store.read()
    wrong = replace(fence, **stale)  # type: ignore[arg-type]
    with pytest.raises(FenceRejected, match=f"fence {wrong.number} refused"):
        store.put_app("photocraft", fetched(START_MS + 1), fence=wrong)
    with pytest.raises(FenceRejected):
        store.put_backoff(Backoff(until_ms=START_MS, trouble=1), fence=wrong)
    assert store.read() == before


def test_without_a_lease_every_write_is_rejected(store: StateStore) -> None:
    store.open_for_writing()
    with pytest.raises(FenceRejected, match="is held by nobody"):
        store.put_app("photocraft", fetched(), fence=Fence("h", 1, "0123456789abcdef"))
    assert store.read().apps == {}


# ---- bad rows -----------------------------------------------------------------------------------


def test_a_row_that_does_not_decode_is_skipped_with_one_log_line_per_version(
    store: StateStore, fence: Fence, caplog: pytest.LogCaptureFixture
) -> None:
    for key in ("photocraft", "filmcraft", "pdfcraft"):
        store.put_app(key, fetched(), fence=fence)
    with raw(store) as db:
        db.execute("UPDATE app_state SET release_json = '{\"tag\": 1}' WHERE key = 'filmcraft'")
        db.execute("UPDATE app_state SET fetched_ms = 'soon' WHERE key = 'pdfcraft'")
    caplog.set_level(logging.WARNING, logger="craft_apps.host.store")

    reader = StateStore(store.state_dir)
    for _ in range(3):
        assert list(reader.read().apps) == ["photocraft"]
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2
    assert "'filmcraft'" in lines[0] and "assets is not a list" in lines[0]
    assert "'pdfcraft'" in lines[1] and "fetched_ms" in lines[1]
    assert all("\n" not in line for line in lines)

    store.put_app("photocraft", fetched(START_MS + 1), fence=fence)  # a new version
    reader.read()
    assert len(caplog.records) == 4


def test_the_bad_row_can_be_replaced_by_a_good_write(store: StateStore, fence: Fence) -> None:
    store.put_app("photocraft", fetched(START_MS + 5_000), fence=fence)
    with raw(store) as db:
        db.execute("UPDATE app_state SET fetched_ms = 'garbage', release_json = 'nope'")
    assert store.read().apps == {}
    assert store.put_app("photocraft", fetched(START_MS), fence=fence)
    assert store.read().apps["photocraft"] == fetched(START_MS)


def test_a_bad_backoff_row_reads_as_no_backoff(
    store: StateStore, fence: Fence, caplog: pytest.LogCaptureFixture
) -> None:
    store.put_backoff(Backoff(until_ms=START_MS, trouble=2), fence=fence)
    with raw(store) as db:
        db.execute("UPDATE backoff SET trouble = -4")
    assert store.read().backoff == Backoff()
    assert "backoff" in caplog.text


# ---- unusable files -----------------------------------------------------------------------------


def _assert_unusable(state_dir: Path, reason: str) -> None:
    """Readers and a writer all refuse the file with a one-line message; it is never touched."""
    path = state_dir / DB_FILENAME
    digest = sha256(path)
    for attempt in ("version", "read", "open_for_writing", "put_app"):
        store = StateStore(state_dir, busy_timeout_s=0.05)
        with pytest.raises(StateUnavailable) as caught:
            if attempt == "put_app":
                store.put_app("photocraft", fetched(), fence=Fence("h", 1, "0123456789abcdef"))
            else:
                getattr(store, attempt)()
        message = str(caught.value)
        assert str(path) in message and reason in message and "\n" not in message, (attempt, message)
        store.close()
    assert sha256(path) == digest


def test_a_newer_format_is_unavailable_and_left_untouched(store: StateStore, fence: Fence) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    store.close()
    with raw(store) as db:
        db.execute(f"PRAGMA user_version = {FORMAT_VERSION + 1}")
    _assert_unusable(store.state_dir, f"newer format version {FORMAT_VERSION + 1}")


def test_garbage_bytes_are_unavailable_and_left_untouched(state_dir: Path) -> None:
    state_dir.mkdir(mode=0o700)
    (state_dir / DB_FILENAME).write_bytes(random.Random(7).randbytes(8192))
    _assert_unusable(state_dir, "is corrupt")


def test_a_truncated_database_is_unavailable_and_left_untouched(store: StateStore, fence: Fence) -> None:
    for number in range(40):
        store.put_app(f"app{number}", AppState(make_release(notes="x" * 3_000), START_MS), fence=fence)
    store.close()  # checkpoints everything into the main file
    size = store.path.stat().st_size
    assert size > 100_000
    with open(store.path, "r+b") as file:
        file.truncate(size // 2)
    path = store.path
    digest = sha256(path)
    with pytest.raises(StateUnavailable, match="is corrupt"):
        StateStore(store.state_dir).read()
    with pytest.raises(StateUnavailable, match="is corrupt"):
        StateStore(store.state_dir).open_for_writing()
    assert sha256(path) == digest


def test_someone_elses_database_is_not_taken_over(state_dir: Path) -> None:
    state_dir.mkdir()
    with sqlite3.connect(state_dir / DB_FILENAME) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    _assert_unusable(state_dir, "is not a craft_apps state file")


def test_a_file_of_the_first_format_gains_the_epoch_in_place_and_older_code_still_uses_it(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    state_dir.mkdir(mode=0o700)
    db = sqlite3.connect(state_dir / DB_FILENAME, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for statement in FIRST_FORMAT:
        db.execute(statement)
    db.execute("INSERT INTO lease VALUES ('poller', 'old-host:1:aaaa', 7, 0)")  # released
    db.close()
    store = StateStore(state_dir)
    assert store.read() == StateSnapshot(0, {}, Backoff())  # readers need nothing new
    lease = Lease(store, holder="new-host:2:bbbb", clock=fake_clock)
    store.open_for_writing()
    assert lease.try_acquire() and lease.fence is not None and lease.fence.number == 8
    taken = lease.fence
    assert store.put_app("photocraft", fetched(), fence=taken)
    lease.release()
    store.close()
    # What the first format's code runs still works on the migrated file (a rolled-back deploy).
    db = sqlite3.connect(state_dir / DB_FILENAME, isolation_level=None)
    db.execute(
        "INSERT INTO lease (name, holder, fence, expires_ms) VALUES ('poller', 'old-host:3:cccc', 1, 9)"
        " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, fence = lease.fence + 1,"
        " expires_ms = excluded.expires_ms WHERE lease.expires_ms <= 5"
    )
    row = db.execute("SELECT holder, fence, epoch FROM lease").fetchone()
    file_format = db.execute("PRAGMA user_version").fetchone()[0]
    db.close()
    assert row == ("old-host:3:cccc", 9, taken.epoch) and file_format == FORMAT_VERSION
    with pytest.raises(FenceRejected):  # the older holder's custody matches no fence of this code
        StateStore(state_dir).put_app("photocraft", fetched(START_MS + 1), fence=replace(taken, number=9))


def test_a_symbolic_link_is_refused_and_what_it_points_to_is_left_untouched(
    state_dir: Path, tmp_path: Path
) -> None:
    elsewhere = StateStore(tmp_path / "elsewhere")
    elsewhere.open_for_writing()
    elsewhere.close()
    state_dir.mkdir(mode=0o700)
    (state_dir / DB_FILENAME).symlink_to(elsewhere.path)
    _assert_unusable(state_dir, "is a symbolic link; refusing to follow it")


@pytest.mark.parametrize("companion", ["-wal", "-shm"])
def test_a_symbolic_link_beside_the_file_is_refused_too(
    store: StateStore, fence: Fence, tmp_path: Path, companion: str
) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    store.close()  # the last connection: -wal and -shm are gone
    target = tmp_path / "target"
    target.write_bytes(b"")
    Path(f"{store.path}{companion}").symlink_to(target)
    message = f"craft_apps state file {store.path}{companion} is a symbolic link; refusing to follow it"
    with pytest.raises(StateUnavailable, match=message):
        StateStore(store.state_dir).read()
    with pytest.raises(StateUnavailable, match=message):
        StateStore(store.state_dir).open_for_writing()
    assert target.read_bytes() == b""


def test_a_deleted_file_is_made_anew_only_where_there_is_none(store: StateStore, fence: Fence) -> None:
    apps = {"photocraft": fetched()}
    assert not recreate(store, "poller", fence, expires_ms=START_MS, apps=apps, backoff=Backoff())
    assert store.read().apps == {}, "a file that is there is never replaced"
    for path in store.state_dir.iterdir():
        path.unlink()
    assert recreate(store, "poller", fence, expires_ms=START_MS, apps=apps, backoff=Backoff())
    assert store.read() == StateSnapshot(1, apps, Backoff())
    assert all(p.name.startswith(DB_FILENAME) for p in store.state_dir.iterdir()), "nothing left aside"
    assert mode(store.path) == 0o600


# ---- privacy ------------------------------------------------------------------------------------


def test_the_directory_is_0700_and_the_files_0600_whatever_the_umask(state_dir: Path) -> None:
    old_umask = os.umask(0)
    try:
        store = StateStore(state_dir / "nested")
        store.open_for_writing()
        lease = Lease(store, holder="h", clock=FakeClock())
        assert lease.try_acquire()
        store.put_app("photocraft", fetched(), fence=lease.fence)  # type: ignore[arg-type]
        wal, shm = Path(f"{store.path}-wal"), Path(f"{store.path}-shm")
        assert wal.exists() and shm.exists()
        assert mode(store.state_dir) == 0o700
        assert {mode(store.path), mode(wal), mode(shm)} == {0o600}
        store.close()
    finally:
        os.umask(old_umask)


def test_the_file_never_holds_the_github_token(state_dir: Path, settings, fake_clock: FakeClock) -> None:
    token = "ghp_NeverWriteMe0123456789abcdefABCDEF"
    settings.CRAFT_APPS = {"GITHUB_TOKEN": token}
    assert token == app_settings.GITHUB_TOKEN
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="h", clock=fake_clock)
    assert lease.try_acquire()
    store.put_app("photocraft", fetched(), fence=lease.fence)  # type: ignore[arg-type]
    store.put_backoff(Backoff(until_ms=START_MS, trouble=1), fence=lease.fence)  # type: ignore[arg-type]

    def everything() -> bytes:
        return b"".join(path.read_bytes() for path in sorted(state_dir.iterdir()))

    assert b"photocraft" in everything()  # the written state is really in these bytes
    assert token.encode() not in everything()
    assert token not in repr(store) and token not in repr(lease)
    store.close()
    assert b"photocraft" in everything()
    assert token.encode() not in everything()


# ---- concurrency --------------------------------------------------------------------------------


def test_a_locked_database_raises_within_the_busy_timeout(store: StateStore, fence: Fence) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    reader = StateStore(store.state_dir, busy_timeout_s=0.05)

    blocker = raw(store)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    started = time.monotonic()
    with pytest.raises(StateUnavailable, match="is locked"):
        store.put_app("photocraft", fetched(START_MS + 1), fence=fence)
    assert time.monotonic() - started < 2
    assert reader.read().version == 1  # WAL: readers are not blocked by a writer
    blocker.execute("ROLLBACK")

    # An exclusive lock (which needs every other connection closed) blocks readers too.
    store.close()
    reader.close()
    blocker.execute("PRAGMA locking_mode = EXCLUSIVE")
    blocker.execute("BEGIN EXCLUSIVE")
    blocker.execute("UPDATE store_meta SET version = version")
    started = time.monotonic()
    with pytest.raises(StateUnavailable, match="is locked"):
        reader.read()
    with pytest.raises(StateUnavailable, match="is locked"):
        reader.version()
    with pytest.raises(StateUnavailable, match="is locked"):
        store.put_app("photocraft", fetched(START_MS + 1), fence=fence)
    assert time.monotonic() - started < 2
    blocker.close()
    assert reader.read().version == 1
    assert store.put_app("photocraft", fetched(START_MS + 1), fence=fence)


def test_threads_each_use_their_own_connection(store: StateStore, fence: Fence) -> None:
    reader = StateStore(store.state_dir, busy_timeout_s=5)
    store.put_app("photocraft", fetched(), fence=fence)
    errors: list[BaseException] = []
    seen: dict[int, list[int]] = {}
    connections: list[object] = []
    all_running = threading.Barrier(4, timeout=10)

    def read_many() -> None:
        try:
            mine = seen.setdefault(threading.get_ident(), [])
            for _ in range(40):
                mine.append(reader.read().version)
            connections.append(reader.writer.connection(writable=False))
            all_running.wait()  # no thread ends before all have their connection
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=read_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for number in range(30):
        store.put_app("photocraft", fetched(START_MS + number + 1), fence=fence)
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({id(connection) for connection in connections}) == 4
    for versions in seen.values():
        assert versions == sorted(versions)  # each reader only ever moves forward
    assert reader.read().version == 31


# Python 3.12+ warns about fork() in a process with threads (pytest-xdist's); forking under a
# running site is the case this test is about, and its child only touches the store.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_connection_opened_before_fork_is_not_used_in_the_child(store: StateStore, fence: Fence) -> None:
    store.put_app("photocraft", fetched(), fence=fence)
    parent_reader = store.writer.connection(writable=False)
    parent_writer = store.writer.connection(writable=True)
    assert parent_reader is not None and parent_writer is not None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running any pytest machinery
        verdict = b"?"
        try:
            child_reader = store.writer.connection(writable=False)
            snapshot = store.read()
            store.put_app("filmcraft", fetched(), fence=fence)
            child_writer = store.writer.connection(writable=True)
            fresh = child_reader not in (None, parent_reader) and child_writer not in (None, parent_writer)
            kept = (
                parent_reader in store.file.connections.inherited
                and parent_writer in store.file.connections.inherited
            )
            verdict = b"ok" if fresh and kept and "photocraft" in snapshot.apps else b"reused"
        except BaseException as err:
            verdict = repr(err).encode()[:300]
        finally:
            os.write(write_end, verdict)
            os._exit(0)
    os.close(write_end)
    verdict = os.read(read_end, 400)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert verdict == b"ok"
    # The parent's connections still work, and see what the child wrote.
    assert store.writer.connection(writable=False) is parent_reader
    assert sorted(store.read().apps) == ["filmcraft", "photocraft"]
    assert store.put_app("photocraft", fetched(START_MS + 1), fence=fence)


def test_a_deleted_file_is_noticed_by_readers_and_the_writer(store: StateStore, fence: Fence) -> None:
    reader = StateStore(store.state_dir)
    store.put_app("photocraft", fetched(), fence=fence)
    assert reader.read().version == 1
    for path in store.state_dir.iterdir():
        path.unlink()

    assert reader.read() == StateSnapshot(0, {}, Backoff())  # not the deleted file's old rows
    with pytest.raises(StateFileMissing, match="is missing"):  # a writer never makes an empty one
        store.put_app("photocraft", fetched(START_MS + 1), fence=fence)
    assert not store.path.exists()


def test_a_file_made_anew_never_replays_the_journal_its_deleted_predecessor_left(tmp_path: Path) -> None:
    """Deleting only the database while a reader keeps its ``-wal`` alive must not let SQLite
    replay that old journal into the new file (it would bring back what was deleted)."""
    from tests.support import publish

    old = publish(tmp_path, {"photocraft": fetched()})
    reader = StateStore(tmp_path)
    assert reader.read().apps  # an open reader keeps the -wal from being folded in and removed
    assert Path(f"{old.path}-wal").exists()
    old.path.unlink()
    fresh = publish(tmp_path, {})
    assert StateStore(tmp_path).read().apps == {}
    assert fresh.read().apps == {}
    reader.close()


def test_a_file_made_anew_in_its_predecessors_inode_is_another_file(state_dir: Path) -> None:
    """Inode numbers are reused once a file is gone; its successor's identity differs all the
    same (its change time), so a kept answer or a kept connection is never taken for its."""
    from tests.support import publish

    publish(state_dir, {"photocraft": fetched()}).close()
    reader = StateStore(state_dir)
    before = reader.version_marker()
    reader.close()  # an open connection would keep the inode from being freed
    path = state_dir / DB_FILENAME
    inode = path.stat().st_ino
    for _ in range(50):  # until the file system hands the same inode number out again
        path.unlink()
        publish(state_dir, {"photocraft": fetched()}).close()
        if path.stat().st_ino == inode:
            break
    after = reader.version_marker()
    assert after[1] == before[1], "the same version in the new file"
    assert after != before
    reader.close()
