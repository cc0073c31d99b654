"""A real lock on the site's database while two gunicorn workers serve: the release info, a
download link and the downloads page answer while the lock is held, with the notices from
before it; each worker logs once that the database doesn't answer, once that it does again, and
an edit made after the lock shows. On SQLite the lock is ``BEGIN EXCLUSIVE`` from another
connection (the workers wait on it as long as PostgreSQL's readers do: their busy timeout is
made longer than the test); on PostgreSQL it is ``LOCK TABLE ... IN ACCESS EXCLUSIVE MODE``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from craft_apps.content.models import Alert
from craft_apps.kernel.domain import AppState
from tests.content.support import alert
from tests.content.workers_support import (
    FETCHED_MS,
    database_for_the_workers,
    database_locked,
    logged_by,
    workers,
)
from tests.support import ONE_AT_A_TIME, release

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

DOWNLOAD = "/v1/craft_apps/download/photocraft/windows/x64"
PAGE = "/craft_apps/downloads/"
STALLED = "the database hasn't answered for"
BACK = "the database is readable again"


def test_a_locked_database_stalls_no_request_and_the_last_notices_stay(tmp_path: Path):
    alert(title="before")
    state = AppState(latest_release=release(), fetched_ms=FETCHED_MS)
    slow = {"TEST_SQLITE_BUSY_TIMEOUT_S": "600"}
    with (
        database_for_the_workers() as (database, _),
        workers(tmp_path, database, state=state, extra_env=slow) as site,
    ):
        site.until_both(lambda s: s.alerts == ("before",), 10, "both workers serve the alert")
        with database_locked():
            deadline = time.monotonic() + 60
            while len(logged_by(site, STALLED)) < 2:  # both workers' looks hang on the lock
                served = site.burst()  # each request has 5 s, and a look waits 600 s
                assert {s.alerts for s in served} == {("before",)}, "the notices from before the lock"
                assert {s.last_fetched for s in served} == {"2026-09-21T14:13:20Z"}, "and the releases"
                assert site.status(DOWNLOAD) == 302
                assert site.status(PAGE) == 200
                assert time.monotonic() < deadline, site.output()
            served = site.burst()
            assert len({s.pid for s in served}) == 2, "both workers answered"
            assert {s.alerts for s in served} == {("before",)}
            assert site.status(DOWNLOAD) == 302
            assert site.status(PAGE) == 200
            assert not logged_by(site, BACK), "the lock is still held"
        Alert.objects.update(title="after")
        site.until_both(lambda s: s.alerts == ("after",), 30, "the edit made after the lock")
        lines = [line for line in site.output().splitlines() if STALLED in line or BACK in line]
        assert len(lines) == 4, lines  # one of each per worker, however many requests came
        assert all("serving the last 1 notices" in line for line in lines if STALLED in line)
        assert len(logged_by(site, BACK)) == 2
