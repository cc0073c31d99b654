"""The counts per app, version and outcome: in a real Redis and in the state directory; one
counted outcome per install and version; the rate limits; a store that can't be written."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.test import Client

from craft_apps.reports import meters
from craft_apps.reports.counts import OutcomeCounts
from craft_apps.reports.intake import Intake, use
from craft_apps.reports.limits import Bucket, TokenBuckets
from craft_apps.reports.status import reports_document, reports_lines
from craft_apps.reports.stores import release_counts
from craft_apps.testing.clock import FakeClock
from tests.fleet.server import RedisServer
from tests.reports.support import URL, body, reports_settings, value


def send(client: Client, *reports: bytes, address: str = "192.0.2.1") -> None:
    for data in reports:
        response = client.post(URL, data, content_type="application/json", REMOTE_ADDR=address)
        assert response.status_code == 202


def fleet_of_reports(client: Client, intake: Intake) -> None:
    """3 installs of 0.6.0 (2 installed, 1 crashed, which says it again), 1 failed 0.5.0."""
    first, second, crashing = (str(uuid.uuid4()) for _ in range(3))
    send(
        client, body(install_id=first), body(install_id=second), body(install_id=crashing, outcome="crashed")
    )
    send(client, body(install_id=crashing, outcome="crashed"), body(install_id=crashing, outcome="installed"))
    send(client, body(install_id=first, version="0.5.0", outcome="failed"))
    while intake.write_batch():
        pass


def expected_counts() -> dict[tuple[str, str], dict[str, OutcomeCounts]]:
    return {
        ("photocraft", "0.6.0"): {
            "installed": OutcomeCounts(reports=3, installs=2),
            "failed": OutcomeCounts(),
            "crashed": OutcomeCounts(reports=2, installs=1),
            "rolled_back": OutcomeCounts(),
        },
        ("photocraft", "0.5.0"): {
            "installed": OutcomeCounts(),
            "failed": OutcomeCounts(reports=1, installs=1),
            "crashed": OutcomeCounts(),
            "rolled_back": OutcomeCounts(),
        },
    }


def read() -> dict[tuple[str, str], dict[str, OutcomeCounts]]:
    return {(r.app, r.version): dict(r.outcomes) for r in release_counts()}


def test_without_redis_the_counts_are_in_the_state_directory(client: Client, state_dir: Path) -> None:
    with reports_settings(state_dir), use(Intake(writer=False)) as intake:
        fleet_of_reports(client, intake)
        assert read() == expected_counts()
        doc = reports_document(["photocraft", "vectorcraft"])
    assert (state_dir / "reports.sqlite3").is_file() and doc["where"] == "state_dir"
    [latest] = [r for r in doc["releases"] if r["version"] == "0.6.0"]
    assert latest["installs"] == 3 and latest["failure_share"] == pytest.approx(1 / 3)
    line = (
        "  photocraft 0.6.0: 3 installs (installed 2, failed 0, crashed 1, rolled_back 0),"
        " 33.3% failing; 5 reports"
    )
    assert line in reports_lines(doc)


def test_with_redis_the_counts_are_the_fleets(
    client: Client, state_dir: Path, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    with reports_settings(state_dir, redis_server.url), use(Intake(writer=False)) as intake:
        fleet_of_reports(client, intake)
        assert read() == expected_counts()
        # A second host of the fleet (its own intake) counts into the same keys.
        with use(Intake(writer=False)) as other_host:
            send(client, body(outcome="rolled_back"))
            other_host.write_batch()
        assert read()[("photocraft", "0.6.0")]["rolled_back"] == OutcomeCounts(reports=1, installs=1)
        assert reports_document(["photocraft"])["where"] == "redis"
    assert not (state_dir / "reports.sqlite3").exists()
    keys = {k.decode() if isinstance(k, bytes) else k for k in redis_client.keys("*")}
    assert all(redis_client.ttl(k) > 0 for k in keys), "every key expires"
    assert "craftApps:releases:reports:photocraft:0.6.0:installed:installs" in keys


def test_redis_down_still_answers_202_and_counts_the_drop(
    client: Client, state_dir: Path, fresh_redis_server: RedisServer
) -> None:
    url = fresh_redis_server.url
    fresh_redis_server.kill()
    before = value(meters.NOT_COUNTED, reason="unwritable")
    with reports_settings(state_dir, url), use(Intake(writer=False)) as intake:
        send(client, body(), body())
        assert intake.write_batch() == 0
        assert reports_document(["photocraft"])["problem"] is not None
    assert value(meters.NOT_COUNTED, reason="unwritable") == before + 2


def test_the_writer_thread_counts_in_the_background(client: Client, state_dir: Path) -> None:
    with reports_settings(state_dir), use(Intake()) as intake:
        send(client, body())
        intake.close()  # waits for the batch it took
        while intake.write_batch():  # and anything it left
            pass
        assert read()[("photocraft", "0.6.0")]["installed"] == OutcomeCounts(reports=1, installs=1)


def test_an_install_over_its_rate_is_left_out_and_counted(client: Client, state_dir: Path) -> None:
    install = str(uuid.uuid4())
    before = value(meters.NOT_COUNTED, reason="install_rate")
    with reports_settings(state_dir), use(Intake(writer=False, monotonic=lambda: 0.0)) as intake:
        send(client, *[body(install_id=install)] * 8)
        assert intake.queue.qsize() == 5
    assert value(meters.NOT_COUNTED, reason="install_rate") == before + 3


def test_an_address_over_its_rate_is_left_out_and_counted(client: Client, state_dir: Path) -> None:
    before = value(meters.NOT_COUNTED, reason="address_rate")
    with reports_settings(state_dir), use(Intake(writer=False, monotonic=lambda: 0.0)) as intake:
        send(client, *[body() for _ in range(130)], address="198.51.100.7")
        send(client, body(), address="198.51.100.8")
        assert intake.queue.qsize() == 121
    assert value(meters.NOT_COUNTED, reason="address_rate") == before + 10


def test_a_bucket_refills_with_time_and_the_buckets_are_bounded() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(Bucket(burst=2, every_s=10.0), lambda: clock.now_ms() / 1000, max_keys=3)
    assert [buckets.take("a") for _ in range(3)] == [True, True, False]
    clock.advance(10)
    assert [buckets.take("a") for _ in range(2)] == [True, False]
    for key in "bcde":
        buckets.take(key)
    assert len(buckets) == 3


def test_craft_apps_status_shows_the_counts(client: Client, state_dir: Path) -> None:
    with reports_settings(state_dir), use(Intake(writer=False)) as intake:
        fleet_of_reports(client, intake)
        text, as_json = io.StringIO(), io.StringIO()
        call_command("craft_apps_status", stdout=text)
        call_command("craft_apps_status", "--json", stdout=as_json)
    assert "photocraft 0.6.0: 3 installs (installed 2, failed 0, crashed 1, rolled_back 0)" in text.getvalue()
    reports = json.loads(as_json.getvalue())["reports"]
    assert reports["where"] == "state_dir" and reports["kept_days"] == 30
    assert {r["version"] for r in reports["releases"]} == {"0.5.0", "0.6.0"}
