"""A purge waits for every host of the fleet: each host shares in a real Redis the lowest version
its live web processes serve, the host that purges reads the others' and waits until each
serves the change (at most the settle), and a Redis that can't answer leaves it to wait for its
own host alone, said once."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import redis

from craft_apps.cdn.fleet_serving import HOST_KEY, HOSTS_KEY, FleetServing, lowest_served
from craft_apps.cdn.plan import RELEASE_INFO, PurgeRequest
from craft_apps.cdn.purger import SETTLE_S, Purger
from craft_apps.cdn.readiness import STALE_MS
from craft_apps.cdn.wiring import purger_from_settings
from craft_apps.conf import PurgeTarget
from craft_apps.content.served_versions import ServedReport, write_report
from craft_apps.host.counters import CountersUpdate
from craft_apps.testing.clock import FakeClock
from tests.fleet.server import RedisServer

NOW = 5_000_000
V1, V2 = 10, 20
PREFIX = "craftApps:releases:"  # the default key prefix
WAIT_S = 15  # how long a signal may take before the test fails; never waited out when it works
TARGET = PurgeTarget("http", "http://127.0.0.1:6081{path}", "PURGE", "https://updates.example.com", 1.0)


class Edge:
    """The CDN: takes every purge request it is sent."""

    def __init__(self) -> None:
        self.sent: list[PurgeRequest] = []

    def __call__(self, request: PurgeRequest) -> None:
        self.sent.append(request)


def live(*versions: int | None, at_ms: int = NOW) -> list[ServedReport]:
    return [ServedReport(pid, version, at_ms) for pid, version in enumerate(versions, start=1)]


def test_a_host_is_as_far_as_its_slowest_live_web_process():
    stale = ServedReport(9, 1, NOW - STALE_MS - 1)
    assert lowest_served([*live(V2, V1), stale], NOW) == ServedReport(2, V1, NOW)
    assert lowest_served(live(V2, None), NOW) == ServedReport(2, None, NOW)  # never read the database
    assert lowest_served([stale], NOW) is None


def test_each_host_reads_the_others_versions_not_its_own(redis_client: redis.Redis):
    host_a = FleetServing(redis_client, PREFIX, "a:/srv/state")
    host_b = FleetServing(redis_client, PREFIX, "b:/srv/state")
    host_c = FleetServing(redis_client, PREFIX, "c:/srv/state")
    host_a.publish(live(V2, V2), NOW)
    host_b.publish(live(V2, V1), NOW)
    host_c.publish(live(None), NOW)
    assert sorted(host_a.others(NOW + 1), key=str) == sorted(
        [ServedReport(0, V1, NOW + 1), ServedReport(0, None, NOW + 1)], key=str
    )
    assert host_b.others(NOW) == (ServedReport(0, V2, NOW), ServedReport(0, None, NOW))
    # A host's word lasts as long as a web process's report: a host that stops writing drops out.
    assert 0 < redis_client.pttl(PREFIX + HOST_KEY + "b:/srv/state") <= STALE_MS
    redis_client.delete(PREFIX + HOST_KEY + "b:/srv/state")
    assert host_a.others(NOW) == (ServedReport(0, None, NOW),)
    assert redis_client.pttl(PREFIX + HOSTS_KEY) > STALE_MS


def test_a_host_with_no_live_web_process_says_nothing(redis_client: redis.Redis):
    host_a = FleetServing(redis_client, PREFIX, "a")
    FleetServing(redis_client, PREFIX, "b").publish(live(V1, at_ms=NOW - STALE_MS - 1), NOW)
    assert host_a.others(NOW) == ()
    redis_client.set(PREFIX + HOST_KEY + "c", "garbage")
    redis_client.sadd(PREFIX + HOSTS_KEY, "c")
    assert host_a.others(NOW) == (ServedReport(0, None, NOW),), "unreadable: it serves no version yet"


def test_a_redis_that_cant_answer_is_said_once_and_its_return_too(
    fresh_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
):
    client = fresh_redis_server.client()
    host = FleetServing(client, PREFIX, "a")
    fresh_redis_server.kill()
    with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
        host.publish(live(V1), NOW)
        assert host.others(NOW) == ()
        fresh_redis_server.restart()
        host.publish(live(V1), NOW)
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if "Redis can't share" in line]) == 1, lines
    assert "Craft apps CDN purge: Redis shares which version each host serves again." in lines


def test_the_purge_waits_until_the_other_host_serves_the_change(
    redis_client: redis.Redis, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
):
    here = FleetServing(redis_client, PREFIX, "a")
    there = FleetServing(redis_client, PREFIX, "b")
    there.publish(live(V1), fake_clock.now_ms())
    catch_up_at: list[int] = []
    edge, answers, version = Edge(), {RELEASE_INFO: 'W/"1"'}, [V1]
    counted: list[CountersUpdate] = []

    def served(now_ms: int) -> tuple[ServedReport, ...]:
        there.publish(live(version[0] if now_ms >= catch_up_at[0] else V1, at_ms=now_ms), now_ms)
        return (*live(version[0], at_ms=now_ms), *here.others(now_ms))  # this host serves it at once

    purger = Purger(
        TARGET,
        answers=lambda: dict(answers),
        is_leader=lambda: True,
        send=edge,
        record=counted.append,
        clock=fake_clock,
        version=lambda: version[0],
        served=served,
    )
    purger.look()
    answers[RELEASE_INFO], version[0] = 'W/"2"', V2  # a yank
    seen = fake_clock.now_ms()
    catch_up_at.append(seen + 900)
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
    assert len(edge.sent) == 1
    assert seen + 900 < fake_clock.now_ms() < seen + SETTLE_S * 1000, (
        "when host b served it, not at the settle"
    )
    assert "purging all the same" not in caplog.text

    # A host that never catches up holds the purge for the settle, no longer.
    catch_up_at[0] = 10**15
    answers[RELEASE_INFO], version[0] = 'W/"3"', V2 + 1
    seen = fake_clock.now_ms()
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        assert purger.look() == (RELEASE_INFO,) and purger.finish(10)
    assert fake_clock.now_ms() - seen == SETTLE_S * 1000
    assert "1 of 2 web processes and other hosts didn't serve it yet 2 s after the change" in caplog.text


@pytest.mark.django_db
def test_the_purge_thread_shares_what_its_host_serves(
    settings, tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis
):
    state_dir = tmp_path / "state"
    write_report(state_dir, ServedReport(41, V2, int(time.time() * 1000)))
    write_report(state_dir, ServedReport(42, V1, int(time.time() * 1000)))
    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": redis_server.url},
    }
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "CDN_PURGE_KIND": "http",
        "CDN_PURGE_URL": "http://127.0.0.1:9{path}",
        "CDN_PUBLIC_URL": "https://updates.example.com",
    }
    purger = purger_from_settings(is_leader=lambda: True)
    assert purger is not None
    purger.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not (names := redis_client.smembers(PREFIX + HOSTS_KEY)):
            assert time.monotonic() < deadline, "the purge thread never shared what its host serves"
            time.sleep(0.05)  # another thread's progress, not a timer under test
    finally:
        purger.stop()
    (name,) = [raw.decode() if isinstance(raw, bytes) else raw for raw in names]
    assert name.endswith(f":{state_dir}")
    assert redis_client.get(PREFIX + HOST_KEY + name) == str(V1).encode()
