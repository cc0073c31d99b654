"""A real lock on the site's database while two gunicorn workers serve: the release info, a
download link and the downloads page answer while the lock is held, with the notices from
before it; each worker logs once that the database doesn't answer, once that it does again, and
an edit made after the lock shows. On SQLite the lock is ``BEGIN EXCLUSIVE`` from another
connection (the workers wait on it as long as PostgreSQL's readers do: their busy timeout is
made longer than the test); on PostgreSQL it is ``LOCK TABLE ... IN ACCESS EXCLUSIVE MODE``."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.db.models import Model

from craft_apps.domain import AppState
from craft_apps.notices.models import NOTICE_MODELS, Alert, AppChannel, NoticesVersion
from tests.notices.support import alert
from tests.notices.test_workers import FETCHED_MS, Workers, database_for_the_workers, workers
from tests.support import ONE_AT_A_TIME, release

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

DOWNLOAD = "/v1/craft_apps/download/photocraft/windows/x64"
PAGE = "/craft_apps/downloads/"
STALLED = "the database hasn't answered for"
BACK = "the database is readable again"


@contextmanager
def database_locked() -> Iterator[None]:
    """No one else reads the notices' tables until the block ends."""
    if connection.vendor == "postgresql":
        models: list[type[Model]] = [NoticesVersion, *NOTICE_MODELS, AppChannel]
        tables = ", ".join(model._meta.db_table for model in models)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
            yield
        return
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def logged_by(site: Workers, text: str) -> set[str]:
    """The worker pids that logged ``text``."""
    return {line.split()[0] for line in site.output().splitlines() if text in line}


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
