"""The controls hold when nobody is watching: two gunicorn workers (real processes) that answer
no request still apply a yank within 2 s (and the admin's "served now" says so), a kept file
damaged under them is repaired, so a restart during a database outage still applies the yank,
and a FIFO at the kept file's path hangs no request."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from craft_apps.controls.kept import FILE_NAME, inspect
from craft_apps.kernel.domain import AppState
from tests.content.workers_support import (
    FETCHED_MS,
    ROOT,
    Workers,
    database_for_the_workers,
    database_locked,
    logged_by,
    workers,
)
from tests.controls.support import (
    V110,
    V120,
    V130,
    Served,
    admin_session,
    burst,
    require,
    site_env,
    until_both,
    yank,
)
from tests.support import ONE_AT_A_TIME, publish_history

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

EDIT_BOUND_S = 2.0  # the promise: every worker applies an edit within 2 s, requests or not
LOCKED = {"TEST_SQLITE_BUSY_TIMEOUT_S": "600"}  # a look waits on the lock, as on PostgreSQL


def is_yanked(answer: Served) -> bool:
    return answer.fetched and answer.latest == "v1.2.0" and not answer.mentions("v1.3.0")


def at_v130(site: Workers, tmp_path: Path) -> None:
    publish_history(tmp_path / "state", "photocraft", (V130, V120, V110), repo="storytold/photocraft")
    until_both(site, lambda s: s.latest == "v1.3.0", 10, "both workers serve v1.3.0")


def until_file(path: Path, condition: str, timeout: float = 10) -> None:
    """Waits for the kept file to hold a yank of v1.3.0 (the signal that a look wrote it)."""
    deadline = time.monotonic() + timeout
    while True:
        found = inspect(path.parent)
        if found.controls is not None and any(c.tag == "v1.3.0" for c in found.controls):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{condition}: the file still holds {found}")
        time.sleep(0.05)


def test_idle_workers_apply_a_yank_within_two_seconds_and_the_admin_shows_it(tmp_path: Path):
    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    with database_for_the_workers() as (database, _), workers(tmp_path, database, state=state) as site:
        at_v130(site, tmp_path)
        session = admin_session(site)
        written = time.monotonic()
        control = yank("v1.3.0")
        time.sleep(max(0.0, written + EDIT_BOUND_S - time.monotonic()))  # nobody asks meanwhile

        page = session.get(
            f"http://127.0.0.1:{site.port}/admin/craft_apps/releasecontrol/{control.pk}/change/"
        )
        assert page.status_code == 200
        assert "stable: latest_release v1.2.0" in page.text, "served now: what the endpoint serves now"
        assert "latest_release v1.3.0" not in page.text
        answers = burst(site)
        assert len({a.pid for a in answers}) == 2, "both workers answered"
        stale = [a.pid for a in answers if not is_yanked(a)]
        assert not stale, f"{len(stale)} of {len(answers)} answers after a quiet spell served the yanked"


def test_a_damaged_kept_file_is_repaired_so_a_restart_during_an_outage_keeps_the_yank(tmp_path: Path):
    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    kept = tmp_path / "state" / FILE_NAME
    with database_for_the_workers() as (database, _):
        with workers(tmp_path, database, state=state, extra_env=LOCKED) as site:
            at_v130(site, tmp_path)
            yank("v1.3.0")
            until_both(site, is_yanked, 10, "both workers apply the yank")
            until_file(kept, "the look kept the yank")
            kept.write_bytes(kept.read_bytes()[:20])  # truncated under the running workers
            until_file(kept, "a look repaired the file")
        with database_locked():
            restarted = Workers(site_env(tmp_path / "state", database, LOCKED), tmp_path / "again.log")
            try:
                answers = first_answers(restarted)
            finally:
                restarted.stop()
    assert answers and all(is_yanked(a) for a in answers), [(a.pid, a.latest) for a in answers]


def first_answers(site: Workers) -> list[Served]:
    """Every answer from the first one until both workers answered."""
    answers: list[Served] = []
    deadline = time.monotonic() + 30
    while len({a.pid for a in answers}) < 2:
        try:
            answers += burst(site)
        except OSError:  # not listening yet
            require(site.process.poll() is None, site.output())
            time.sleep(0.02)
        require(time.monotonic() < deadline, site.output())
    return answers


def test_a_fifo_at_the_kept_path_hangs_no_request_and_is_replaced(tmp_path: Path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.mkfifo(state_dir / FILE_NAME)
    env = site_env(state_dir, {"ENGINE": "sqlite3", "NAME": str(tmp_path / "none" / "db.sqlite3")})
    shown = subprocess.run(
        [sys.executable, "manage.py", "craft_apps_status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "not a regular file (a FIFO)" in shown.stdout, shown.stdout + shown.stderr

    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    with database_for_the_workers() as (database, _), workers(tmp_path, database, state=state) as site:
        at_v130(site, tmp_path)
        yank("v1.3.0")
        until_both(site, is_yanked, 10, "both workers answer, and apply the yank")
        until_file(state_dir / FILE_NAME, "the FIFO replaced by the controls read")
        assert stat.S_ISREG((state_dir / FILE_NAME).stat().st_mode)
        assert logged_by(site, "not a regular file (a FIFO)"), site.output()
