"""Each app's release history in the host's state file: fenced, newest first, in place in old files."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from craft_apps.host.lease import Lease
from craft_apps.host.remake import recreate
from craft_apps.host.store import DB_FILENAME, Fence, FenceRejected, HistoryFetch, StateSnapshot, StateStore
from craft_apps.kernel.domain import Backoff, Release
from craft_apps.testing.clock import FakeClock
from tests.host.support import FIRST_FORMAT, fetched, make_release
from tests.support import publish_history, release


def _older(tag: str, days: int, *, prerelease: bool = False) -> Release:
    base = make_release(tag)
    assert base.published_at is not None
    return replace(base, published_at=base.published_at - timedelta(days=days), prerelease=prerelease)


def test_a_history_is_read_back_newest_first_with_its_fetch_and_moves_the_version(
    store: StateStore, fence: Fence
) -> None:
    before = store.version()
    rc = _older("v1.3.0-rc.1", 0, prerelease=True)
    old = _older("v1.1.0", 10)
    mid = _older("v1.2.0", 5)
    store.put_history("photocraft", [old, rc, mid, old], fence=fence, etag='"l-1"', fetched_ms=5, repo="a/b")
    snapshot = store.read()
    assert snapshot.history == {"photocraft": (rc, mid, old)}
    assert snapshot.history["photocraft"][0].prerelease is True
    assert snapshot.history_fetches == {"photocraft": HistoryFetch('"l-1"', 5, "a/b")}
    assert snapshot.version == before + 1
    store.put_history("photocraft", [rc, mid, old], fence=fence, etag='"l-1"', fetched_ms=5, repo="a/b")
    assert store.version() == before + 1  # the same row: nobody needs to look again
    store.put_history("photocraft", [mid], fence=fence)  # replaces the whole history
    assert store.read().history == {"photocraft": (mid,)}
    assert store.read().history_fetches == {"photocraft": HistoryFetch()}


def test_a_stale_fence_or_a_bad_history_changes_nothing(store: StateStore, fence: Fence) -> None:
    store.put_history("photocraft", [make_release()], fence=fence)
    with pytest.raises(FenceRejected):
        store.put_history("photocraft", [], fence=replace(fence, number=fence.number + 1))
    with pytest.raises(ValueError, match="etag"):
        store.put_history("photocraft", [], fence=fence, etag="two\nlines")
    with pytest.raises(ValueError, match="app key"):
        store.put_history("", [], fence=fence)
    assert store.read().history == {"photocraft": (make_release(),)}


def test_a_row_that_does_not_decode_reads_as_no_history_with_one_warning(
    store: StateStore, fence: Fence, caplog: pytest.LogCaptureFixture
) -> None:
    store.put_history("photocraft", [make_release()], fence=fence)
    store.put_app("photocraft", fetched(), fence=fence)
    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("UPDATE app_history SET releases_json = '[{\"tag\": 1}]'")
    db.execute("UPDATE store_meta SET version = version + 1")
    db.close()
    with caplog.at_level(logging.WARNING, logger="craft_apps.host.store"):
        snapshot = store.read()
        store.read()
    assert snapshot.history == {} and "photocraft" in snapshot.apps  # the latest is still served
    lines = [r.getMessage() for r in caplog.records if "history row" in r.getMessage()]
    assert len(lines) == 1 and "skipped history row 'photocraft'" in lines[0]


def test_a_file_without_the_table_reads_as_no_history_and_a_writer_adds_it_in_place(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    state_dir.mkdir(mode=0o700)
    db = sqlite3.connect(state_dir / DB_FILENAME, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for statement in FIRST_FORMAT:
        db.execute(statement)
    db.close()
    reader = StateStore(state_dir)
    assert reader.read() == StateSnapshot(0, {}, Backoff())  # a web worker: "no history"
    publish_history(state_dir, "photocraft", [make_release()], fake_clock)
    db = sqlite3.connect(state_dir / DB_FILENAME, isolation_level=None)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1  # still format 1
    db.close()
    assert reader.read().history == {"photocraft": (make_release(),)}


def test_a_deleted_file_made_anew_keeps_the_history(store: StateStore, writer: Lease) -> None:
    assert writer.fence is not None
    history = {"photocraft": ((release("0.4.0"),), HistoryFetch('"l-2"', 7, "storytold/photocraft"))}
    store.path.unlink()
    assert recreate(
        store, "poller", writer.fence, expires_ms=10**12, apps={}, backoff=Backoff(), history=history
    )
    snapshot = StateStore(store.state_dir).read()
    assert snapshot.history == {"photocraft": (release("0.4.0"),)}
    assert snapshot.history_fetches["photocraft"].etag == '"l-2"'
