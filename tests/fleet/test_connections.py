"""Redis that can't be reached or stops answering: every call fails as RedisTrouble, within the
connect or I/O timeout, and the store works again once Redis is back. Real sockets, short
timeouts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from craft_apps.fleet.connection import poller_redis_client
from craft_apps.fleet.errors import RedisTrouble
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import Backoff
from tests.fleet.helpers import release, t
from tests.fleet.server import RedisServer
from tests.fleet.silent_redis import SilentRedis
from tests.support import free_port

REPO = "storytold/photocraft"  # the repository every shared fetch here is of

ALIAS = "craft_apps_test"


def calls(pod: SharedStore) -> dict[str, Callable[[], object]]:
    return {
        "read": lambda: pod.entries.read(["photocraft", "vectorcraft"]),
        "claim": lambda: pod.claims.claim("photocraft", t(0)),
        "write_fetched": lambda: pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO),
        "write_backoff": lambda: pod.entries.write_backoff(Backoff(until_ms=t(9), trouble=1)),
    }


def fails_within(seconds: float, call: Callable[[], object]) -> RedisTrouble:
    started = time.monotonic()
    with pytest.raises(RedisTrouble) as caught:
        call()
    elapsed = time.monotonic() - started
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.fixture
def silent_redis() -> Iterator[SilentRedis]:
    with SilentRedis() as silent:
        yield silent


def django_redis_alias(
    url: str, *, socket_timeout: float, connect_timeout: float, **pool: object
) -> dict[str, object]:
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": url,
        "OPTIONS": {
            "CLIENT_CLASS": "django_redis.client.DefaultClient",
            "CONNECTION_POOL_KWARGS": {"max_connections": 2, **pool},
            "SOCKET_CONNECT_TIMEOUT": connect_timeout,
            "SOCKET_TIMEOUT": socket_timeout,
        },
    }


def test_an_unreachable_redis_fails_within_the_connect_timeout() -> None:
    client = redis.Redis(
        port=free_port(), socket_connect_timeout=3, socket_timeout=5, retry=Retry(NoBackoff(), 0)
    )
    pod = SharedStore(client, hostname="pod-a")
    for name, call in calls(pod).items():
        err = fails_within(3, call)
        assert "ConnectionError" in str(err) and "refused" in str(err).lower(), name
    assert not pod.writes.scripts_refused


def test_a_redis_that_goes_silent_after_the_handshake_fails_within_the_io_timeout(
    silent_redis: SilentRedis,
) -> None:
    client = redis.Redis.from_url(silent_redis.url, socket_timeout=0.3, socket_connect_timeout=0.3)
    pod = SharedStore(client, hostname="pod-a")
    for name, call in calls(pod).items():
        err = fails_within(2, call)
        assert "TimeoutError" in str(err), name
    names = [command[0].upper() for command in silent_redis.unanswered]
    assert names[:3] == [b"HMGET", b"HMGET", b"HGETALL"], "one pipelined read: two apps and the backoff"
    assert b"EVALSHA" in names and b"MULTI" in names
    assert not pod.writes.scripts_refused


def test_the_poller_alias_bounds_every_call_including_the_health_check(
    silent_redis: SilentRedis, settings: Any
) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        ALIAS: django_redis_alias(
            silent_redis.url, socket_timeout=0.5, connect_timeout=0.5, health_check_interval=0.001
        ),
    }
    client = poller_redis_client(ALIAS)
    assert client is not None
    pod = SharedStore(client, hostname="pod-a")
    fails_within(2, calls(pod)["read"])
    assert silent_redis.unanswered[0][0].upper() == b"PING", "the pool's health check got no answer"
    fails_within(2, calls(pod)["claim"])


def test_the_poller_alias_does_not_retry_an_unreachable_redis(settings: Any) -> None:
    settings.CACHES = {
        ALIAS: django_redis_alias(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=5, connect_timeout=3)
    }
    client = poller_redis_client(ALIAS)
    assert client is not None
    assert client.connection_pool.max_connections == 2
    connection: Any = client.connection_pool.make_connection()
    assert connection.retry.get_retries() == 0
    assert (connection.socket_timeout, connection.socket_connect_timeout) == (5, 3)
    fails_within(3, calls(SharedStore(client, hostname="pod-a"))["read"])


def test_a_paused_redis_times_out_and_is_used_again_once_it_answers(fresh_redis_server: RedisServer) -> None:
    pod = SharedStore(fresh_redis_server.client(socket_timeout=0.5), hostname="pod-a")
    assert pod.claims.claim("photocraft", t(0))
    fresh_redis_server.pause()
    try:
        fails_within(2, calls(pod)["read"])
        fails_within(2, calls(pod)["write_fetched"])
    finally:
        fresh_redis_server.resume()
    assert pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    assert not pod.writes.scripts_refused


def test_a_killed_redis_is_trouble_and_a_restarted_one_is_used_again(fresh_redis_server: RedisServer) -> None:
    pod = SharedStore(fresh_redis_server.client(), hostname="pod-a")
    assert pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    fresh_redis_server.kill()
    fails_within(3, calls(pod)["read"])
    fresh_redis_server.restart()
    assert pod.entries.read(["photocraft"]) == ([None], Backoff()), "an empty Redis after the restart"
    assert pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO), (
        "the script is loaded again"
    )
