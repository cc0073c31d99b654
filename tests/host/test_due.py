"""Due marks and webhook deliveries on the host's state file: their own tables, no fence, no
change to what the endpoint serves, and never a file that isn't the poller's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from craft_apps.host.due import DELIVERY_KEPT_MS, DueMark, HostDueMarks
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.testing.clock import START_MS
from tests.host.support import fetched
from tests.support import publish


@pytest.fixture
def marks(state_dir: Path) -> HostDueMarks:
    publish(state_dir, {"photocraft": fetched()})
    return HostDueMarks(state_dir)


def test_without_a_state_file_nothing_is_created(state_dir: Path):
    due = HostDueMarks(state_dir)
    assert due.marks() == []
    with pytest.raises(StateUnavailable, match="doesn't exist yet"):
        due.mark(["photocraft"], START_MS, shared=False)
    with pytest.raises(StateUnavailable):
        due.take_delivery("d-1", START_MS, keep=10)
    assert not state_dir.exists()


def test_a_file_of_another_format_is_never_written(state_dir: Path):
    state_dir.mkdir()
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    db.execute("PRAGMA user_version = 7")
    db.commit()
    db.close()
    with pytest.raises(StateUnavailable, match="not one of format 1"):
        HostDueMarks(state_dir).mark(["photocraft"], START_MS, shared=False)
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    assert db.execute("SELECT name FROM sqlite_master").fetchall() == []
    db.close()


def test_marks_are_kept_until_the_poller_takes_them_and_change_nothing_served(
    state_dir: Path, marks: HostDueMarks
):
    store = StateStore(state_dir)
    before = (store.version(), store.read())
    marks.mark(["photocraft", "vectorcraft"], START_MS, shared=True)
    marks.mark(["photocraft"], START_MS - 5, shared=False)  # an older request: keeps the newer time
    assert marks.marks() == [DueMark("photocraft", START_MS, False), DueMark("vectorcraft", START_MS, True)]
    assert (store.version(), store.read()) == before, "the endpoint's answer doesn't change"

    taken = marks.marks()
    marks.mark(["vectorcraft"], START_MS + 10, shared=True)  # asked again while being taken
    marks.forget(taken)
    assert marks.marks() == [DueMark("vectorcraft", START_MS + 10, True)]
    StateStore(state_dir).open_for_writing()  # the poller's own checks accept the extra tables


def test_a_delivery_is_taken_once_a_day(marks: HostDueMarks):
    assert marks.take_delivery("d-1", START_MS, keep=10)
    assert not marks.take_delivery("d-1", START_MS + DELIVERY_KEPT_MS - 1, keep=10)
    assert marks.take_delivery("d-2", START_MS + DELIVERY_KEPT_MS + 1, keep=10), "forgets d-1 on the way"
    assert marks.take_delivery("d-1", START_MS + DELIVERY_KEPT_MS + 2, keep=10)


def test_only_the_newest_deliveries_are_kept(state_dir: Path, marks: HostDueMarks):
    for n in range(25):
        assert marks.take_delivery(f"d-{n}", START_MS + n, keep=10)
    assert not marks.take_delivery("d-24", START_MS + 30, keep=10), "a recent one is still a replay"
    assert marks.take_delivery("d-0", START_MS + 31, keep=10), "one past the bound is taken again"
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    try:
        kept = [row[0] for row in db.execute("SELECT id FROM webhook_delivery ORDER BY seen_ms")]
    finally:
        db.close()
    assert kept == [f"d-{n}" for n in range(16, 25)] + ["d-0"]


def test_a_replaced_state_file_is_read_anew(state_dir: Path, marks: HostDueMarks):
    marks.mark(["photocraft"], START_MS, shared=False)
    assert len(marks.marks()) == 1
    (state_dir / "craft_apps_state.sqlite3").unlink()
    assert marks.marks() == []
    publish(state_dir, {})
    assert marks.marks() == []
    marks.close()


@pytest.mark.parametrize("companion", ["-wal", "-shm"])
def test_a_symbolic_link_beside_the_file_is_refused(state_dir: Path, tmp_path: Path, companion: str):
    publish(state_dir, {"photocraft": fetched()}).close()  # the last connection: -wal and -shm are gone
    target = tmp_path / "target"
    target.write_bytes(b"")
    path = state_dir / "craft_apps_state.sqlite3"
    Path(f"{path}{companion}").symlink_to(target)
    message = f"craft_apps state file {path}{companion} is a symbolic link; refusing to follow it"
    due = HostDueMarks(state_dir)
    with pytest.raises(StateUnavailable, match=message):
        due.mark(["photocraft"], START_MS, shared=False)
    with pytest.raises(StateUnavailable, match=message):
        due.marks()
    assert target.read_bytes() == b""
