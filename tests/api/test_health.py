"""GET /v1/craft_apps/health on real state files: 200 or 503, never cached, never Redis."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from craft_apps.host.counters import CountersUpdate, record
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import START_MS, FakeClock
from tests.support import release

URL = "/v1/craft_apps/health"
INTERVAL_S = 1800


@pytest.fixture
def clock(install_runtime) -> FakeClock:
    clock = FakeClock(START_MS)
    install_runtime(clock=clock)
    return clock


@pytest.fixture
def site(settings, state_dir: Path, clock: FakeClock) -> Path:
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "POLL_INTERVAL_SECS": INTERVAL_S,
    }
    return state_dir


def poller_holding_the_lease(state_dir: Path, clock: FakeClock, fetched_ms: int | None = START_MS) -> Lease:
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="web-1:42:abcd", clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    if fetched_ms is not None:
        store.put_app(
            "photocraft", AppState(latest_release=release(), fetched_ms=fetched_ms), fence=lease.fence
        )
    return lease


def get(client: Client, query: str = "") -> tuple[int, dict[str, Any], str]:
    response = client.get(URL + query)
    return response.status_code, json.loads(response.content), response["Cache-Control"]


def test_a_healthy_host_answers_200_ok_never_cached(site: Path, client: Client, clock: FakeClock):
    poller_holding_the_lease(site, clock)
    status, body, cache_control = get(client)
    assert (status, cache_control) == (200, "no-store")
    assert body == {"status": "ok", "rules": ["state_file", "poller", "stale", "gone"], "problems": []}


def test_a_stale_app_gives_503_with_the_problem(site: Path, client: Client, clock: FakeClock):
    lease = poller_holding_the_lease(site, clock)
    clock.advance(2 * INTERVAL_S + 121)
    assert lease.try_acquire()  # the poller is there; only GitHub failed it
    status, body, cache_control = get(client)
    assert (status, body["status"], cache_control) == (503, "unhealthy", "no-store")
    assert body["problems"] == [
        {
            "rule": "stale",
            "detail": "photocraft was last fetched 1 h 2 min ago, over the 1 h 2 min allowed "
            "(twice the interval plus 2 min)",
        }
    ]
    assert get(client, "?rules=state_file,poller")[0] == 200, "a load balancer's rules leave staleness out"


def test_a_dead_poller_counts_after_the_takeover_time(site: Path, client: Client, clock: FakeClock):
    lease = poller_holding_the_lease(site, clock)
    store = lease.store
    record(store, CountersUpdate(stopped_ms=clock.now_ms()))
    lease.release()
    clock.advance(32)  # TTL 30 s + retry 2 s
    assert get(client)[0] == 200
    clock.advance(1)
    status, body, _ = get(client, "?rules=poller")
    assert status == 503 and body["problems"][0]["rule"] == "poller"


def test_a_corrupt_state_file_is_unhealthy(site: Path, client: Client):
    site.mkdir()
    (site / "craft_apps_state.sqlite3").write_bytes(b"this is not SQLite" * 500)
    status, body, _ = get(client, "?rules=stale")
    assert status == 503
    [problem] = body["problems"]
    assert problem["rule"] == "state_file" and "is corrupt" in problem["detail"]


def test_a_missing_state_file_is_a_poller_problem(site: Path, client: Client):
    status, body, _ = get(client)
    assert status == 503
    assert [p["rule"] for p in body["problems"]] == ["poller", "stale"]


def test_unknown_rules_are_a_400_and_other_methods_a_405(site: Path, client: Client):
    status, body, _ = get(client, "?rules=poller,fresh")
    assert status == 400 and "unknown health rule 'fresh'" in json.dumps(body)
    response = client.post(URL)
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


def test_head_has_the_headers_and_no_body(site: Path, client: Client, clock: FakeClock):
    poller_holding_the_lease(site, clock)
    response = client.head(URL)
    assert response.status_code == 200 and response.content == b""
    assert int(response["Content-Length"]) > 10


def test_it_never_touches_redis_even_when_redis_hangs(site: Path, client: Client, clock: FakeClock, settings):
    # A Redis alias on a port that accepts nothing: any Redis call would take its timeouts.
    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://10.255.255.1:6379/0?client_name=craft_apps_poller",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 3, "SOCKET_TIMEOUT": 5},
        },
    }
    poller_holding_the_lease(site, clock)
    started = time.monotonic()
    assert get(client)[0] == 200
    assert time.monotonic() - started < 2.5, "less than Redis's 3 s connect timeout"


@pytest.mark.parametrize(
    "key", ["CHANGE-ME", "AAAA" * 19, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"]
)
def test_a_signing_key_that_cant_be_used_fails_every_rule_set_and_is_counted(
    site: Path, client: Client, clock: FakeClock, settings, key: str
):
    """Healthy otherwise: the ``signing`` rule applies whatever ``?rules=`` asks (the load
    balancer's check included), names the setting and never the key; the metric and
    ``craft_apps_status`` say it too; with the key fixed, all is well again."""
    import io

    from django.core.management import CommandError, call_command

    from craft_apps.kernel import signing
    from tests.api.support import TOKEN, scrape
    from tests.signing.vectors import KEY_A

    poller_holding_the_lease(site, clock)
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": key, "METRICS_TOKEN": TOKEN}
    for query in ("", "?rules=state_file,poller", "?rules=stale"):
        status, body, _ = get(client, query)
        assert status == 503 and [p["rule"] for p in body["problems"]] == ["signing"], query
        assert "CRAFT_APPS_SIGNING_KEY" in body["problems"][0]["detail"] and key not in json.dumps(body)
    assert scrape(client)["craft_apps_health_problems"][(("rule", "signing"),)] == 1
    out = io.StringIO()
    call_command("craft_apps_status", stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("signing ")]
    assert "UNUSABLE KEY" in line and "CRAFT_APPS_SIGNING_KEY" in line and key not in out.getvalue()
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 health problems"):
        call_command("craft_apps_status", "--check", "--rule", "gone", stdout=out)
    assert out.getvalue().startswith("signing: CRAFT_APPS['SIGNING_KEY']")

    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": signing.private_key_text(KEY_A)}
    assert get(client, "?rules=state_file,poller")[0] == 200
    assert scrape(client)["craft_apps_health_problems"][(("rule", "signing"),)] == 0
    out = io.StringIO()
    call_command("craft_apps_status", stdout=out)
    assert f"signed by {KEY_A.key_id}" in out.getvalue()
