"""The poller's own Redis connection, taken from a django-redis cache alias, and its checks.

``poller_redis_client(alias)`` returns the alias's client, or None when it isn't configured;
``alias_problems(alias)`` returns the checks' problems when the alias lacks the bounds of
``fleet.options.poller_cache``. django-redis builds its pools without redis-py's retries, so a
call fails once within those bounds and the poller carries on alone. ``describe_error(err)``
returns the one-line, credential-free text of every Redis log line and ``RedisTrouble``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, cast

import redis
from django.conf import settings

from craft_apps.conf import Problem
from craft_apps.fleet.options import (
    HEALTH_CHECK_INTERVAL_SECS,
    MAX_POOL_CONNECTIONS,
    POLLER_CLIENT_NAME,
    SOCKET_CONNECT_TIMEOUT_SECS,
    SOCKET_TIMEOUT_SECS,
)
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"
MAX_SOCKET_TIMEOUT_SECS = SOCKET_TIMEOUT_SECS
MAX_SOCKET_CONNECT_TIMEOUT_SECS = SOCKET_CONNECT_TIMEOUT_SECS

_MAX_ERROR_CHARS = 300
# user:password@ in a URL, and password=... in a query string or an option dump.
_URL_CREDENTIALS = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s]*@")
_PASSWORD_PARAM = re.compile(r"(?i)(password['\"]?\s*[=:]\s*['\"]?)[^&\s,'\"}]+")


def describe_error(err: BaseException) -> str:
    """``Type: message`` on one line, shortened, with any password in it masked."""
    # Masked before it is cut, so that no cut leaves a piece of a password behind.
    text = one_line(err) or "no details"
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    text = _PASSWORD_PARAM.sub(r"\1***", text)
    return f"{type(err).__name__}: {one_line(text, _MAX_ERROR_CHARS)}"


def _caches() -> Mapping[str, Any]:
    configured = getattr(settings, "CACHES", None)
    return configured if isinstance(configured, Mapping) else {}


def poller_redis_client(alias: str) -> redis.Redis | None:
    """The Redis client of cache ``alias``; None when there is no such alias or it can't give
    one (the poller then works alone). Connects lazily, so an unreachable Redis isn't an error
    here."""
    caches = _caches()
    if alias not in caches:
        return None
    backend = caches[alias].get("BACKEND") if isinstance(caches[alias], Mapping) else None
    if backend != DJANGO_REDIS_BACKEND:
        logger.warning(
            "Craft app releases: cache alias %r is not a django-redis cache (%s); "
            "coordinating through Redis is off.",
            alias,
            backend,
        )
        return None
    try:
        from django_redis import get_redis_connection

        return cast(redis.Redis, get_redis_connection(alias))
    except Exception as err:  # a bad URL or option: configuration, reported by the checks too
        logger.warning(
            "Craft app releases: can't make a Redis client for cache alias %r (%s); "
            "coordinating through Redis is off.",
            alias,
            describe_error(err),
        )
        return None


def alias_problems(alias: str) -> list[Problem]:
    """What is wrong with cache ``alias`` as the poller's connection (nothing when it isn't
    configured: coordination is then simply off)."""
    caches = _caches()
    config = caches.get(alias)
    if config is None:
        return []
    where = f"CACHES[{alias!r}]"
    if not isinstance(config, Mapping) or config.get("BACKEND") != DJANGO_REDIS_BACKEND:
        backend = config.get("BACKEND") if isinstance(config, Mapping) else config
        details = {"where": where, "backend": backend, "expected": DJANGO_REDIS_BACKEND}
        return [Problem("not_django_redis", details)]
    return _timeout_problems(where, config) + _shared_url_problems(alias, where, config, caches)


def _positive_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _timeout_problems(where: str, config: Mapping[str, Any]) -> list[Problem]:
    raw_options = config.get("OPTIONS")
    options: Mapping[str, Any] = raw_options if isinstance(raw_options, Mapping) else {}
    problems: list[Problem] = []
    for option, limit, what in (
        ("SOCKET_TIMEOUT", MAX_SOCKET_TIMEOUT_SECS, "every read and write"),
        ("SOCKET_CONNECT_TIMEOUT", MAX_SOCKET_CONNECT_TIMEOUT_SECS, "connecting"),
    ):
        seconds = _positive_number(options.get(option))
        if seconds is None or seconds > limit:
            state = "is not set" if option not in options else f"is {options[option]!r}"
            details = {"where": where, "option": option, "state": state, "limit": limit, "what": what}
            problems.append(Problem("redis_timeout", details))
    pool_kwargs = options.get("CONNECTION_POOL_KWARGS")
    max_connections = pool_kwargs.get("max_connections") if isinstance(pool_kwargs, Mapping) else None
    if (
        isinstance(max_connections, bool)
        or not isinstance(max_connections, int)
        or not 0 < max_connections <= MAX_POOL_CONNECTIONS
    ):
        state = "is not set" if max_connections is None else f"is {max_connections!r}"
        details = {
            "where": where,
            "state": state,
            "limit": MAX_POOL_CONNECTIONS,
            "health_check": HEALTH_CHECK_INTERVAL_SECS,
        }
        problems.append(Problem("redis_pool_size", details))
    return problems


def _locations(config: object) -> list[str]:
    location = config.get("LOCATION") if isinstance(config, Mapping) else None
    if isinstance(location, str):
        location = location.split(",") if "," in location else [location]
    if not isinstance(location, list | tuple):
        return []
    return [item.strip() for item in location if isinstance(item, str) and item.strip()]


def _shared_url_problems(
    alias: str, where: str, config: Mapping[str, Any], caches: Mapping[str, Any]
) -> list[Problem]:
    """django-redis keeps one pool per URL: an alias with the same URL shares the pool."""
    own = set(_locations(config))
    sharing = sorted(
        str(other)
        for other, other_config in caches.items()
        if other != alias and own & set(_locations(other_config))
    )
    if not sharing:
        return []
    details = {
        "where": where,
        "sharing": ", ".join(repr(s) for s in sharing),
        "client_name": POLLER_CLIENT_NAME,
    }
    return [Problem("redis_shared_url", details)]
