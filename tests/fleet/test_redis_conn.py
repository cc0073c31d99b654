"""The poller's connection settings: the system-check problems of its alias, and the client."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis

from craft_apps.checks import Finding, finding
from craft_apps.fleet.connection import alias_problems as alias_problem_data
from craft_apps.fleet.connection import describe_error, poller_redis_client
from tests.fleet.server import RedisServer

ALIAS = "craft_apps"
GOOD_OPTIONS = {
    "CLIENT_CLASS": "django_redis.client.DefaultClient",
    "CONNECTION_POOL_KWARGS": {"max_connections": 2, "health_check_interval": 60},
    "SOCKET_CONNECT_TIMEOUT": 3,
    "SOCKET_TIMEOUT": 5,
}


def alias(location: Any = "redis://127.0.0.1:6379/1", **options: Any) -> dict[str, Any]:
    merged = {**GOOD_OPTIONS, **options}
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": location,
        "OPTIONS": {key: value for key, value in merged.items() if value is not None},
    }


def alias_problems(alias: str) -> list[Finding]:
    """The alias's problems as ``manage.py check`` words them."""
    return [finding(problem) for problem in alias_problem_data(alias)]


def ids(problems: list[Any]) -> list[str]:
    return [problem.id for problem in problems]


def test_the_recommended_alias_has_no_problem(settings: Any) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        ALIAS: alias(),
    }
    assert alias_problems(ALIAS) == []


def test_no_alias_means_no_coordination_and_no_problem(settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert alias_problems(ALIAS) == []
    assert poller_redis_client(ALIAS) is None


def test_an_alias_that_is_not_django_redis_is_an_error(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.CACHES = {ALIAS: {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    problems = alias_problems(ALIAS)
    assert ids(problems) == ["craft_apps.E003"]
    assert "django_redis.cache.RedisCache" in problems[0].hint
    caplog.set_level(logging.WARNING, logger="craft_apps.fleet.connection")
    assert poller_redis_client(ALIAS) is None
    assert "not a django-redis cache" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"SOCKET_TIMEOUT": None}, "SOCKET_TIMEOUT"),
        ({"SOCKET_TIMEOUT": 30}, "SOCKET_TIMEOUT"),
        ({"SOCKET_TIMEOUT": 0}, "SOCKET_TIMEOUT"),
        ({"SOCKET_TIMEOUT": "5"}, "SOCKET_TIMEOUT"),
        ({"SOCKET_CONNECT_TIMEOUT": None}, "SOCKET_CONNECT_TIMEOUT"),
        ({"SOCKET_CONNECT_TIMEOUT": 3.5}, "SOCKET_CONNECT_TIMEOUT"),
        ({"CONNECTION_POOL_KWARGS": None}, "max_connections"),
        ({"CONNECTION_POOL_KWARGS": {"health_check_interval": 60}}, "max_connections"),
        ({"CONNECTION_POOL_KWARGS": {"max_connections": 50}}, "max_connections"),
    ],
)
def test_missing_timeouts_or_a_large_pool_are_warnings(
    settings: Any, options: dict[str, Any], named: str
) -> None:
    settings.CACHES = {ALIAS: alias(**options)}
    problems = alias_problems(ALIAS)
    assert ids(problems) == ["craft_apps.W005"]
    assert named in problems[0].msg and named in problems[0].hint
    assert "\n" not in problems[0].msg + problems[0].hint


def test_smaller_timeouts_and_pool_are_fine(settings: Any) -> None:
    settings.CACHES = {
        ALIAS: alias(
            SOCKET_TIMEOUT=0.5, SOCKET_CONNECT_TIMEOUT=1, CONNECTION_POOL_KWARGS={"max_connections": 1}
        )
    }
    assert alias_problems(ALIAS) == []


def test_an_alias_without_options_gets_every_warning(settings: Any) -> None:
    settings.CACHES = {ALIAS: {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://h/0"}}
    assert ids(alias_problems(ALIAS)) == ["craft_apps.W005"] * 3


@pytest.mark.parametrize(
    ("ours", "theirs", "shared"),
    [
        ("redis://:pw@cache:6379/0", "redis://:pw@cache:6379/0", True),
        (["redis://cache:6379/0", "redis://replica:6379/0"], "redis://replica:6379/0", True),
        ("redis://cache:6379/0,redis://replica:6379/0", ["redis://replica:6379/0"], True),
        ("redis://cache:6379/0?client_name=craft_apps_poller", "redis://cache:6379/0", False),
        ("redis://cache:6379/1", "redis://cache:6379/0", False),
    ],
)
def test_an_alias_sharing_its_url_shares_the_pool(
    settings: Any, ours: Any, theirs: Any, shared: bool
) -> None:
    settings.CACHES = {"default": alias(theirs), ALIAS: alias(ours)}
    problems = alias_problems(ALIAS)
    assert ids(problems) == (["craft_apps.W006"] if shared else [])
    if shared:
        assert "'default'" in problems[0].msg and "client_name=craft_apps_poller" in problems[0].hint
        assert "pw" not in problems[0].msg + problems[0].hint, "the URL (and its password) is never shown"


def test_the_client_comes_from_the_alias_read_at_call_time(settings: Any, redis_server: RedisServer) -> None:
    settings.CACHES = {ALIAS: alias(redis_server.url + "?client_name=craft_apps_poller")}
    client = poller_redis_client(ALIAS)
    assert isinstance(client, redis.Redis)
    assert client.ping()
    assert client.client_getname() in ("craft_apps_poller", b"craft_apps_poller")
    settings.CACHES = {}
    assert poller_redis_client(ALIAS) is None


def test_a_bad_url_gives_no_client_and_one_log_line(settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="craft_apps.fleet.connection")
    settings.CACHES = {ALIAS: alias("http://user:secret@cache:6379/0")}
    assert poller_redis_client(ALIAS) is None
    [record] = caplog.records
    message = record.getMessage()
    assert "can't make a Redis client" in message and "ValueError" in message
    assert "secret" not in message and "\n" not in message


def test_describe_error_masks_credentials_and_stays_short() -> None:
    err = redis.ConnectionError("redis://poller:hunter2@cache:6379/0 failed\n" + "x" * 1000)
    text = describe_error(err)
    assert text.startswith("ConnectionError: redis://***@cache:6379/0 failed x")
    assert "hunter2" not in text and "\n" not in text and len(text) < 350
    assert describe_error(ValueError("connect failed: password=hunter2&db=0")).count("hunter2") == 0
    assert describe_error(RuntimeError()) == "RuntimeError: no details"
