"""The release controls a web process read, kept in the state directory: a process that can't
read the database yet applies them, the database wins once it answers, and a file that isn't
ours is refused whole with one line."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import ReleaseControl
from craft_apps.controls.kept import (
    FAILURES,
    FILE_NAME,
    KeptControls,
    KeptFile,
    decode,
    encode,
    inspect,
)
from craft_apps.controls.rules import ROLLOUT, YANK, Control, Step
from craft_apps.testing.clock import FakeClock
from tests.content.support import Monotonic, database_unreachable

pytestmark = pytest.mark.django_db


@pytest.fixture
def kept_dir(settings, tmp_path: Path) -> Path:
    settings.CRAFT_APPS = {**getattr(settings, "CRAFT_APPS", {}), "STATE_DIR": str(tmp_path)}
    return tmp_path


def new_feed(fake_clock: FakeClock) -> NoticesFeed:
    return NoticesFeed(monotonic=Monotonic(), clock=fake_clock, runner=lambda look: look())


def yank_row(tag: str = "v1.3.0") -> ReleaseControl:
    row: ReleaseControl = ReleaseControl.objects.create(
        app_key="photocraft", action=YANK, tag=tag, reason="broken installer"
    )
    return row


def test_a_look_keeps_the_controls_and_a_process_that_cant_read_the_database_applies_them(
    kept_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    yank_row()
    first = new_feed(fake_clock)
    first.current()
    assert first.controls() == (Control("photocraft", YANK, "v1.3.0"),)
    assert decode((kept_dir / FILE_NAME).read_text()) == first.controls()

    restarted = new_feed(fake_clock)
    with caplog.at_level(logging.WARNING), database_unreachable():
        restarted.current()
    assert restarted.controls() == (Control("photocraft", YANK, "v1.3.0"),), "the kept yank holds"
    assert "Craft apps notices: the database can't be read" in caplog.text


def test_the_database_wins_once_it_answers(kept_dir: Path, fake_clock: FakeClock) -> None:
    row = yank_row()
    new_feed(fake_clock).current()
    row.delete()
    feed = new_feed(fake_clock)
    feed.current()
    assert feed.controls() == ()
    assert decode((kept_dir / FILE_NAME).read_text()) == (), "the file follows the database"


def test_no_controls_and_no_file_writes_nothing(kept_dir: Path, fake_clock: FakeClock) -> None:
    new_feed(fake_clock).current()
    assert not (kept_dir / FILE_NAME).exists()


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"\xff\xfe",
        json.dumps({"v": 2, "controls": []}).encode(),
        json.dumps(
            {"v": 1, "controls": [{"app_key": "photocraft", "action": "delete", "tag": "x"}]}
        ).encode(),
        json.dumps(
            {
                "v": 1,
                "controls": [
                    {
                        "app_key": "photocraft",
                        "action": "rollout",
                        "tag": "v1",
                        "channel": "",
                        "percentage": 500,
                        "steps": [],
                        "paused_at_ms": None,
                    }
                ],
            }
        ).encode(),
    ],
)
@pytest.mark.django_db(transaction=True)  # the database is opened again after the block
def test_a_file_that_isnt_ours_is_refused_whole_with_one_line(
    kept_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    (kept_dir / FILE_NAME).write_bytes(content)
    monotonic = Monotonic()
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=lambda look: look())
    counted = FAILURES.labels("read")._value.get()
    with caplog.at_level(logging.WARNING), database_unreachable():
        feed.current()
        monotonic.advance(1.0)  # the next look
        feed.current()
        assert feed.controls() == ()
    assert feed.controls() == ()
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.kept_controls"]
    assert len(lines) == 1, lines
    assert f"{kept_dir / FILE_NAME} can't be read (" in lines[0]
    assert FAILURES.labels("read")._value.get() == counted + 1, "the file refused once, until it changes"
    found = inspect(kept_dir)
    assert (found.exists, found.controls) == (True, None) and found.problem, "and the status says why"
    assert found.problem.split(":")[0] in lines[0]

    feed.clear()
    feed.current()  # the database answers again: its controls (none) replace the refused file
    assert inspect(kept_dir) == KeptFile(kept_dir / FILE_NAME, exists=True, controls=())


def test_a_rollout_with_its_schedule_and_pause_reads_back() -> None:
    controls = (
        Control(
            "photocraft", ROLLOUT, "v1.3.0", "beta", 5, (Step(1_800_000_000_000, 25),), 1_790_000_000_000
        ),
        Control("vectorcraft", YANK, "v2.0.0"),
    )
    assert decode(encode(controls)) == controls


def test_a_directory_that_cant_be_written_is_one_line_and_the_controls_still_apply(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file-not-directory"
    blocked.write_text("")
    kept = KeptControls(blocked)
    counted = FAILURES.labels("write")._value.get()
    with caplog.at_level(logging.WARNING):
        kept.save((Control("photocraft", YANK, "v1.3.0"),))
        kept.save((Control("photocraft", YANK, "v1.2.0"),))
    lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.kept_controls"]
    assert len(lines) == 1 and "can't be written" in lines[0]
    assert FAILURES.labels("write")._value.get() == counted + 2


def test_a_process_that_never_read_the_database_takes_a_kept_file_that_changed(
    kept_dir: Path, fake_clock: FakeClock
) -> None:
    feed = new_feed(fake_clock)
    with database_unreachable():
        feed.current()
        assert feed.controls() == ()
        KeptControls(kept_dir).save((Control("photocraft", YANK, "v1.3.0"),))  # as a poller does
        assert feed.controls() == (Control("photocraft", YANK, "v1.3.0"),), "at once, without a look"
        (kept_dir / FILE_NAME).write_text("not the controls")
        assert feed.controls() == (Control("photocraft", YANK, "v1.3.0"),), "a bad file takes nothing away"


@pytest.mark.django_db(transaction=True)
def test_once_the_database_is_read_the_file_is_no_longer_looked_at(
    kept_dir: Path, fake_clock: FakeClock
) -> None:
    feed = new_feed(fake_clock)
    feed.current()
    KeptControls(kept_dir).save((Control("photocraft", YANK, "v1.3.0"),))
    assert feed.controls() == (), "the database's (none) win"


@pytest.mark.parametrize("make", ["fifo", "directory"])
def test_anything_but_a_regular_file_is_refused_without_blocking(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make: str
) -> None:
    """A FIFO with no writer would block an ordinary open for ever; it is refused at once, once."""
    path = tmp_path / FILE_NAME
    os.mkfifo(path) if make == "fifo" else path.mkdir()
    kept = KeptControls(tmp_path)
    counted = FAILURES.labels("read")._value.get()
    with caplog.at_level(logging.WARNING):
        assert kept.load_changed() is None
        assert kept.load_changed() is None, "the same file: not read again"
    assert FAILURES.labels("read")._value.get() == counted + 1
    [line] = [r.getMessage() for r in caplog.records if r.name == "craft_apps.content.kept_controls"]
    kind = "a FIFO" if make == "fifo" else "a directory"
    assert f"not a regular file ({kind})" in line
    found = inspect(tmp_path)
    assert found.exists and found.controls is None and f"not a regular file ({kind})" in str(found.problem)


def test_a_file_damaged_after_it_was_written_is_rewritten_at_the_next_save(tmp_path: Path) -> None:
    """The look saves what it read after every look, not only after a change, and the file is
    compared by what it holds: a damaged one is replaced (a FIFO too), an intact one left alone."""
    kept = KeptControls(tmp_path)
    yanked = (Control("photocraft", YANK, "v1.3.0"),)
    kept.save(yanked)
    path = tmp_path / FILE_NAME
    written = path.read_text()
    path.write_text(written[: len(written) // 2])  # truncated under the running process
    kept.save(yanked)
    assert inspect(tmp_path).controls == yanked
    inode = path.stat().st_ino
    kept.save(yanked)
    assert path.stat().st_ino == inode, "as it was left: not written again"
    path.unlink()
    os.mkfifo(path)
    kept.save(yanked)
    assert stat.S_ISREG(path.stat().st_mode) and inspect(tmp_path).controls == yanked
    path.unlink()
    kept.save(yanked)
    assert inspect(tmp_path).controls == yanked, "a deleted file comes back"


@pytest.mark.django_db(transaction=True)
def test_every_look_repairs_the_file_though_nothing_changed(kept_dir: Path, fake_clock: FakeClock) -> None:
    yank_row()
    monotonic = Monotonic()
    feed = NoticesFeed(monotonic=monotonic, clock=fake_clock, runner=lambda look: look())
    feed.current()
    (kept_dir / FILE_NAME).write_text("{")
    monotonic.advance(1.0)
    feed.current()  # the marker hasn't moved: no reload, but the file is made right
    assert inspect(kept_dir).controls == (Control("photocraft", YANK, "v1.3.0"),)
