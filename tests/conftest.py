"""Fixtures every test may use. Area-specific fixtures live beside their tests.

``redis_server``: one real redis-server per test session (per xdist worker); ``redis_client``:
a client of it, the server FLUSHALLed (and its scripts flushed) before each test;
``fresh_redis_server``: a server of the test's own, for tests that kill, pause, reconfigure it.
``install_runtime``: puts a web process's runtime of the test's parts in place (a fake clock,
no reuse window, a feed on fake time) until the test ends; after every test the process's
runtime stops its background looks (``runtime.quiet``).
Django's test database is the site's engine (``DJANGO_DB_ENGINE``, see config/settings.py); a
SQLite one is a file (never ``:memory:``) so that other processes can open it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from craft_apps.testing.clock import FakeClock
from tests.fleet.server import RedisServer, RedisServerMissing
from tests.support.slow_share import outside_share, parse_share

if TYPE_CHECKING:
    from craft_apps.api.runtime import Runtime


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from django.conf import settings

    database: dict[str, Any] = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A fresh, not yet created state directory (file-backed, never :memory:)."""
    return tmp_path / "state"


def _start_redis(directory: Path) -> RedisServer:
    try:
        return RedisServer.start(directory)
    except RedisServerMissing as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = _start_redis(tmp_path_factory.mktemp("redis"))
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
    server = _start_redis(tmp_path / "redis")
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _quiet_runtime() -> Iterator[None]:
    """After each test, the web process's background looks stop: a beat left running would look
    at the next test's database (or none) and log into its records."""
    yield
    import sys

    runtime = sys.modules.get("craft_apps.api.runtime")  # only if a test made one
    if runtime is not None:
        runtime.quiet()


@pytest.fixture
def install_runtime() -> Iterator[Callable[..., Runtime]]:
    """``install_runtime(**parts)`` makes ``Runtime(**parts)`` the web process's runtime until the
    test ends (the one before is back then, and the test's is closed); returns it."""
    from craft_apps.api.runtime import Runtime, use  # Django is set up by now

    with ExitStack() as stack:
        yield lambda **parts: stack.enter_context(use(Runtime(**parts)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow-share",
        metavar="K/N",
        help="Run only the K-th of N shares of the tests marked slow (a share is a set of files); "
        "the matrix shares them between its two end pairs.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the slow tests outside ``--slow-share K/N``; keep every other test."""
    share = config.getoption("--slow-share")
    if not share:
        return
    slow = [item.nodeid for item in items if item.get_closest_marker("slow")]
    outside = outside_share(slow, *parse_share(str(share)))
    dropped = [item for item in items if item.nodeid in outside]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid not in outside]
