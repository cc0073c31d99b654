"""Two gunicorn workers (real processes) on the test database: turning an app's beta channel on
and off in the admin shows on both within about a second, in ``?channel=beta``'s answer, while
the stable answer never moves."""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from tests.content.workers_support import (
    ABOUT_A_SECOND,
    FETCHED_MS,
    Workers,
    database_for_the_workers,
    workers,
)
from tests.support import ONE_AT_A_TIME, publish_history, release

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]


def served(site: Workers, query: str) -> tuple[str, str]:
    """(the worker's pid, photocraft's latest tag) of one answer."""
    url = f"http://127.0.0.1:{site.port}/v1/craft_apps/release_info{query}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.loads(response.read())
        return response.headers["X-Worker-Pid"], body["release_info"]["apps"]["photocraft"]["latest_release"][
            "tag"
        ]


def until_both(site: Workers, tag: str, timeout: float) -> float:
    started, met = time.monotonic(), set[str]()
    while len(met) < 2:
        answers = list(site._pool.map(lambda _: served(site, "?channel=beta"), range(12)))
        met |= {pid for pid, seen in answers if seen == tag}
        assert time.monotonic() - started < timeout, f"{tag}: only {sorted(met)}\n{site.output()}"
    return time.monotonic() - started


def test_two_workers_follow_an_admin_edit_of_the_beta_setting_within_a_second(
    tmp_path: Path, django_user_model
):
    admin = Client()
    admin.force_login(django_user_model.objects.create(username="op", is_staff=True, is_superuser=True))
    rc = replace(release("0.6.0-rc.1"), prerelease=True, published_at=datetime(2026, 10, 20, tzinfo=UTC))
    state = AppState(latest_release=release("0.5.0"), fetched_ms=FETCHED_MS)
    with database_for_the_workers() as (database, _), workers(tmp_path, database, state=state) as site:
        publish_history(tmp_path / "state", "photocraft", (rc,), repo="storytold/photocraft")
        until_both(site, "v0.5.0", 10)  # no setting yet: as on stable

        response = admin.post(
            "/admin/craft_apps/appchannel/add/", {"app_key": "photocraft", "channels": "beta"}
        )
        assert response.status_code == 302, response.content.decode()
        assert until_both(site, "v0.6.0-rc.1", 5) < ABOUT_A_SECOND

        [row] = admin.get("/admin/craft_apps/appchannel/").context["cl"].result_list
        response = admin.post(f"/admin/craft_apps/appchannel/{row.pk}/change/", {"app_key": "photocraft"})
        assert response.status_code == 302, response.content.decode()
        assert until_both(site, "v0.5.0", 5) < ABOUT_A_SECOND
        assert {served(site, "")[1] for _ in range(6)} == {"v0.5.0"}, "stable never moved"
