"""Two gunicorn workers (real processes, with a real redis-server) on the site's database, a
file: an operator's yank,
unyank and rollout show on both within 2 s of the write; with the database locked both keep
the controls they had, each says so once, and the edit made after the lock applies."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from craft_apps.kernel.domain import AppState
from tests.content.workers_support import (
    FETCHED_MS,
    Workers,
    database_for_the_workers,
    database_locked,
    logged_by,
    workers,
)
from tests.controls.support import V110, V120, V130, Served, burst, rollout, until_both, yank
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, publish_history

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

EDIT_BOUND_S = 2.0  # the once-a-second look, plus a loaded machine's latency: a bound, not a target
STALLED = "Craft apps notices: the database hasn't answered"
CANT_READ = "Craft apps notices: the database can't be read"
BACK = "the database is readable again"


def photocraft_at_v130(site: Workers, tmp_path: Path) -> None:
    """Its latest is v1.3.0 and its history v1.2.0 and v1.1.0, as a poller keeping history writes it."""
    publish_history(tmp_path / "state", "photocraft", (V130, V120, V110), repo="storytold/photocraft")
    until_both(site, lambda s: s.latest == "v1.3.0", 10, "both workers serve v1.3.0")


def is_yanked(answer: Served) -> bool:
    return answer.fetched and answer.latest == "v1.2.0" and not answer.mentions("v1.3.0")


def test_a_yank_an_unyank_and_a_rollout_show_on_both_workers_within_two_seconds(
    tmp_path: Path, redis_server: RedisServer
):
    """As a fleet's host runs: the workers have the fleet's Redis (the webhook's), which the
    controls don't need: they come with the notices."""
    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    fleet = {"CRAFT_APPS_REDIS_URL": redis_server.url}
    with (
        database_for_the_workers() as (database, _),
        workers(tmp_path, database, state=state, extra_env=fleet) as site,
    ):
        photocraft_at_v130(site, tmp_path)

        written = time.monotonic()
        yanked = yank("v1.3.0")
        until_both(site, is_yanked, 5, "the yank on both workers")
        assert time.monotonic() - written < EDIT_BOUND_S
        assert all(is_yanked(answer) for answer in burst(site)), "and it stays"

        written = time.monotonic()
        yanked.delete()
        until_both(site, lambda s: s.latest == "v1.3.0", 5, "the yank deleted")
        assert time.monotonic() - written < EDIT_BOUND_S

        written = time.monotonic()
        rollout("v1.3.0", 25)
        until_both(
            site,
            lambda s: s.latest == "v1.2.0" and s.rollout == ("v1.3.0", 25),
            5,
            "the rollout on both workers",
        )
        assert time.monotonic() - written < EDIT_BOUND_S
        assert all(a.rollout == ("v1.3.0", 25) for a in burst(site)), "every answer has the field"


def test_with_the_database_locked_the_yank_stays_in_force_and_the_next_edit_applies(tmp_path: Path):
    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    slow = {"TEST_SQLITE_BUSY_TIMEOUT_S": "600"}  # a look waits on the lock, as on PostgreSQL
    yanked = yank("v1.3.0")
    with (
        database_for_the_workers() as (database, _),
        workers(tmp_path, database, state=state, extra_env=slow) as site,
    ):
        publish_history(tmp_path / "state", "photocraft", (V130, V120, V110), repo="storytold/photocraft")
        until_both(site, is_yanked, 10, "both workers apply the yank")
        with database_locked():
            deadline = time.monotonic() + 30
            while len(logged_by(site, STALLED)) < 2:  # both workers' looks hang on the lock
                assert all(is_yanked(answer) for answer in burst(site)), "the yank stays in force"
                assert time.monotonic() < deadline, site.output()
            answers = burst(site)
            assert len({a.pid for a in answers}) == 2, "both workers answered"
            assert all(is_yanked(answer) for answer in answers)
            assert not logged_by(site, BACK), "the lock is still held"
        written = time.monotonic()
        yanked.delete()  # the edit made once the database answers again
        until_both(site, lambda s: s.latest == "v1.3.0", 10, "the edit made after the lock")
        assert time.monotonic() - written < 10
        lines = site.output().splitlines()
        warnings = [line for line in lines if STALLED in line or CANT_READ in line]
        assert sorted(line.split()[0] for line in warnings) == sorted(logged_by(site, STALLED)), warnings
        assert len(warnings) == 2, "exactly one warning line per worker, however many requests came"
        assert len(logged_by(site, BACK)) == 2
