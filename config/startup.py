"""Says once per process, at start-up (manage.py, wsgi.py, asgi.py), what the demo site connects to."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings

logger = logging.getLogger("config")

# Greedy: the user info runs to the last "@", so a password holding an unencoded "/", "?" or
# "#" is hidden whole rather than cut where a URL parser would end the host.
_USER_INFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)(.*)@", re.DOTALL)
_PASSWORD_PARAM = re.compile(r"(?i)([?&;]password=)[^&;#]*")


def without_credentials(url: str) -> str:
    """``url`` with any password replaced by ``***``: after ``user:`` in the user info (the user
    name is kept) and in a ``password=`` query parameter, which redis-py also reads."""

    def mask_user_info(match: re.Match[str]) -> str:
        user, colon, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}:***@" if colon else match.group(0)

    return _PASSWORD_PARAM.sub(r"\1***", _USER_INFO.sub(mask_user_info, url, count=1))


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
