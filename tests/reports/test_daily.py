"""The installs first counted per version and day (UTC), for the admin's adoption chart: in a
real Redis (a counter per version and day, expiring with the rest) and in the state directory."""

from __future__ import annotations

import uuid
from pathlib import Path

import redis
from django.test import Client

from craft_apps.reports.counts import day_of, last_days
from craft_apps.reports.intake import Intake, use
from craft_apps.reports.stores import daily_installs
from craft_apps.testing.clock import FakeClock
from tests.fleet.server import RedisServer
from tests.reports.support import URL, body, reports_settings

DAY_S = 86_400
NEWEST_REPORT_FIRST = [("photocraft", "0.5.0"), ("photocraft", "0.6.0")]


def send(client: Client, intake: Intake, *reports: bytes) -> None:
    for data in reports:
        response = client.post(URL, data, content_type="application/json", REMOTE_ADDR="192.0.2.1")
        assert response.status_code == 202
    while intake.write_batch():
        pass


def three_days(client: Client, clock: FakeClock, intake: Intake) -> list[str]:
    """Day 1: two installs of 0.5.0; day 2: one of 0.6.0 (and a repeat of it, not counted
    again) and one 0.5.0 that crashed; day 3: none. Returns the three days."""
    first = str(uuid.uuid4())
    send(client, intake, body(version="0.5.0"), body(version="0.5.0"))
    clock.advance(DAY_S)
    send(client, intake, body(install_id=first), body(install_id=first, outcome="crashed"))
    clock.advance(1)
    send(client, intake, body(version="0.5.0", outcome="crashed"))
    clock.advance(DAY_S)
    return last_days(clock.now_ms(), 3)


def expected(days: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    return {
        ("photocraft", "0.6.0"): {days[0]: 0, days[1]: 1, days[2]: 0},
        ("photocraft", "0.5.0"): {days[0]: 2, days[1]: 1, days[2]: 0},
    }


def read(days: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    return {(d.app, d.version): dict(d.days) for d in daily_installs(["photocraft", "vectorcraft"], days)}


def test_the_days_are_utc_and_bounded_by_what_is_kept() -> None:
    assert day_of(0) == "1970-01-01" and day_of(DAY_S * 1000 - 1) == "1970-01-01"
    assert last_days(DAY_S * 1000 * 2, 3) == ["1970-01-01", "1970-01-02", "1970-01-03"]
    assert len(last_days(0, 400)) == 30 and last_days(0, 0) == ["1970-01-01"]


def test_without_redis_the_days_are_in_the_state_directory(client: Client, state_dir: Path) -> None:
    clock = FakeClock()
    with reports_settings(state_dir), use(Intake(writer=False, clock=clock)) as intake:
        assert daily_installs(["photocraft"], ["2026-01-01"]) == [], "no report yet"
        days = three_days(client, clock, intake)
        assert read(days) == expected(days)
        assert list(read(days)) == NEWEST_REPORT_FIRST


def test_with_redis_the_days_are_the_fleets_and_expire(
    client: Client, state_dir: Path, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    clock = FakeClock()
    with reports_settings(state_dir, redis_server.url), use(Intake(writer=False, clock=clock)) as intake:
        days = three_days(client, clock, intake)
        assert read(days) == expected(days)
        assert list(read(days)) == NEWEST_REPORT_FIRST
    key = f"craftApps:releases:reports:photocraft:0.5.0:day:{days[0]}"
    assert redis_client.get(key) == b"2"
    assert 0 < redis_client.ttl(key) <= 30 * DAY_S
