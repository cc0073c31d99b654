"""The poller's django-redis cache alias, as a site should configure it (no Django import here,
so a settings module can use it).

At most 2 connections; connect within 3 s; every read and write, the health-check ``PING``
included, within 5 s. The health check runs on a connection unused for 60 s: longer than a tick
(30 s +/- 10%), so an idle tick stays one round trip. ``client_name`` gives the alias a URL of
its own, since django-redis keeps one pool per URL.
"""

from __future__ import annotations

from typing import Any

POLLER_CLIENT_NAME = "craft_apps_poller"
MAX_POOL_CONNECTIONS = 2
SOCKET_CONNECT_TIMEOUT_SECS = 3
SOCKET_TIMEOUT_SECS = 5
HEALTH_CHECK_INTERVAL_SECS = 60


def poller_cache(url: str) -> dict[str, Any]:
    """The ``CACHES`` entry for the poller's alias on the Redis at ``url``."""
    if "client_name=" not in url:
        url += ("&" if "?" in url else "?") + f"client_name={POLLER_CLIENT_NAME}"
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": url,
        "OPTIONS": {
            "CONNECTION_POOL_KWARGS": {
                "max_connections": MAX_POOL_CONNECTIONS,
                "health_check_interval": HEALTH_CHECK_INTERVAL_SECS,
            },
            "SOCKET_CONNECT_TIMEOUT": SOCKET_CONNECT_TIMEOUT_SECS,
            "SOCKET_TIMEOUT": SOCKET_TIMEOUT_SECS,
        },
    }
