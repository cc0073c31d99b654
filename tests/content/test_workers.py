"""Two gunicorn workers (real processes) on the test database: an edit, a window opening and
closing, each shows on both within about a second; with the database gone both keep answering
with the releases and the last notices, and each logs it once."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from craft_apps.content.models import Alert
from tests.content.support import alert
from tests.content.workers_support import ABOUT_A_SECOND, database_for_the_workers, workers
from tests.support import ONE_AT_A_TIME

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]


def test_two_workers_follow_edits_and_windows_within_a_second_and_survive_the_database(tmp_path: Path):
    item = alert(title="first", visible_from=timezone.now() - timedelta(minutes=1))
    with database_for_the_workers() as (database, take_away), workers(tmp_path, database) as site:
        site.until_both(lambda s: s.alerts == ("first",), 10, "both workers serve the alert")

        Alert.objects.filter(pk=item.pk).update(title="edited")
        took = site.until_both(lambda s: s.alerts == ("edited",), 5, "the edit on both workers")
        assert took < ABOUT_A_SECOND

        opens = timezone.now() + timedelta(seconds=1)
        alert(title="window", visible_from=opens, visible_until=opens + timedelta(seconds=0.6))
        while timezone.now() < opens - timedelta(seconds=0.1):
            assert all("window" not in s.alerts for s in site.burst()), "not before it opens"
        took = site.until_both(lambda s: s.alerts == ("window", "edited"), 5, "the window opening")
        assert took < ABOUT_A_SECOND, "opens on time, with no edit"
        took = site.until_both(lambda s: s.alerts == ("edited",), 5, "the window closing")
        assert 0.3 < took < ABOUT_A_SECOND, "closes 0.6 s later, with no edit"

        take_away()
        logged = "the database can't be read"
        started = time.monotonic()
        while len({line.split()[0] for line in site.output().splitlines() if logged in line}) < 2:
            for served in site.burst():
                assert served.alerts == ("edited",), "the last notices"
                assert served.last_fetched == "2026-09-21T14:13:20Z", "and the releases"
            assert time.monotonic() - started < 10, site.output()
        for served in site.burst():
            assert served.alerts == ("edited",)
        lines = [line for line in site.output().splitlines() if logged in line]
        assert len(lines) == 2, lines  # one per worker
        assert all("serving the last 1 notices and renames this process had" in line for line in lines)
