"""Fixtures for tests against a real redis-server (see tests/redis/server.py).

``redis_server``: one server for the whole session; ``redis_client``: a client of it, the
server FLUSHALLed (and its scripts flushed) before each test; ``fresh_redis_server``: a server of
the test's own, for tests that kill, pause, reconfigure or make it a replica.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.redis.server import RedisServer, RedisServerMissing


def _start(directory: Path) -> RedisServer:
    try:
        return RedisServer.start(directory)
    except RedisServerMissing as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = _start(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis_server.client()
    client.flushall()
    client.script_flush()
    yield client
    client.close()


@pytest.fixture
def fresh_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = _start(tmp_path / "redis")
    yield server
    server.stop()
