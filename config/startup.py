"""Says once per process, at start-up (manage.py, wsgi.py, asgi.py), what the demo site connects to."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

logger = logging.getLogger("config")


def without_credentials(url: str) -> str:
    """``url`` with any password replaced by ``***`` (the user name is kept)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def connection_settings(
    databases: dict[str, dict[str, Any]] | None = None, caches: dict[str, dict[str, Any]] | None = None
) -> str:
    """The database and Redis settings in one line, never a password."""
    db = (databases or settings.DATABASES)["default"]
    database = ", ".join(
        f"{name}={db.get(key) or '-'}"
        for name, key in (
            ("engine", "ENGINE"),
            ("name", "NAME"),
            ("host", "HOST"),
            ("port", "PORT"),
            ("user", "USER"),
        )
    )
    redis_alias: dict[str, Any] | None = (caches or settings.CACHES).get("craft_apps")
    redis = "none (the poller works alone)"
    if redis_alias:
        options: dict[str, Any] = dict(redis_alias.get("OPTIONS") or {})
        redis = (
            f"{without_credentials(str(redis_alias['LOCATION']))} "
            f"(connect timeout {options.get('SOCKET_CONNECT_TIMEOUT')} s, "
            f"timeout {options.get('SOCKET_TIMEOUT')} s, "
            f"max connections {options.get('CONNECTION_POOL_KWARGS', {}).get('max_connections')})"
        )
    return f"Database: {database}; Redis for craft_apps: {redis}"


def log_connection_settings() -> None:
    logger.info("%s", connection_settings())
