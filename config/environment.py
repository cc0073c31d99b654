"""What the production settings (config/production.py) read from the environment, each value checked.

Every function takes the environment as a mapping (so tests pass their own) and raises
``ImproperlyConfigured`` with one line naming the variable when the value can't be used. A
secret's value is never part of a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

SECRET_KEY_VARIABLE = "DJANGO_SECRET_KEY"
ALLOWED_HOSTS_VARIABLE = "DJANGO_ALLOWED_HOSTS"
CSRF_TRUSTED_ORIGINS_VARIABLE = "DJANGO_CSRF_TRUSTED_ORIGINS"
DATABASE_URL_VARIABLE = "DATABASE_URL"

# The demo's key (config/settings.py) and the placeholder the examples ship (the Kubernetes
# Secret, the systemd environment file): both are public, so a site running on one has no secret.
DEMO_SECRET_KEY = "demo-only-not-secret"
PLACEHOLDER_SECRET_KEY = "CHANGE-ME-to-50-or-more-random-characters"
KNOWN_SECRET_KEYS = frozenset({DEMO_SECRET_KEY, PLACEHOLDER_SECRET_KEY})
# Django's own deployment check (security.W009) asks for at least 50 characters.
MIN_SECRET_KEY_LENGTH = 50
MAKE_A_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"

# A database that doesn't answer within this many seconds fails the connection instead of
# holding the process; DATABASE_URL's own connect_timeout parameter wins.
CONNECT_TIMEOUT_S = "5"
POSTGRES_SCHEMES = frozenset({"postgres", "postgresql"})


def secret_key(env: Mapping[str, str]) -> str:
    key = env.get(SECRET_KEY_VARIABLE, "").strip()
    if not key:
        raise ImproperlyConfigured(f"{SECRET_KEY_VARIABLE} is not set: make one with {MAKE_A_KEY}")
    if key in KNOWN_SECRET_KEYS:
        raise ImproperlyConfigured(
            f"{SECRET_KEY_VARIABLE} is the example's public value: make one with {MAKE_A_KEY}"
        )
    if len(key) < MIN_SECRET_KEY_LENGTH:
        raise ImproperlyConfigured(
            f"{SECRET_KEY_VARIABLE} has {len(key)} characters, fewer than {MIN_SECRET_KEY_LENGTH}: "
            f"make one with {MAKE_A_KEY}"
        )
    return key


def comma_list(env: Mapping[str, str], variable: str) -> list[str]:
    return [item.strip() for item in env.get(variable, "").split(",") if item.strip()]


def allowed_hosts(env: Mapping[str, str]) -> list[str]:
    hosts = comma_list(env, ALLOWED_HOSTS_VARIABLE)
    if not hosts:
        raise ImproperlyConfigured(
            f"{ALLOWED_HOSTS_VARIABLE} is not set: list the site's host names, comma separated"
        )
    return hosts


def csrf_trusted_origins(env: Mapping[str, str]) -> list[str]:
    origins = comma_list(env, CSRF_TRUSTED_ORIGINS_VARIABLE)
    for origin in origins:
        if urlsplit(origin).scheme not in {"http", "https"} or not urlsplit(origin).netloc:
            raise ImproperlyConfigured(
                f"{CSRF_TRUSTED_ORIGINS_VARIABLE} holds {origin!r}, not an origin such as "
                "https://craft-apps.example.com"
            )
    return origins


def database(env: Mapping[str, str]) -> dict[str, Any]:
    """The site database from ``DATABASE_URL``: ``postgresql://user:password@host:port/name``,
    query parameters passed to libpq (``?sslmode=require``). Only PostgreSQL: every host and pod
    shares the site database, so an edit in the admin reaches all of them."""
    url = env.get(DATABASE_URL_VARIABLE, "").strip()
    if not url:
        raise ImproperlyConfigured(
            f"{DATABASE_URL_VARIABLE} is not set: postgresql://user:password@host:5432/name"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(
            f"{DATABASE_URL_VARIABLE} is not a URL such as postgresql://user:password@host:5432/name"
        ) from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise ImproperlyConfigured(
            f"{DATABASE_URL_VARIABLE} names {parts.scheme or 'no'} scheme: the production settings "
            "take PostgreSQL only (postgresql://...)"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured(f"{DATABASE_URL_VARIABLE} names no database (…:5432/name)")
    options: dict[str, str] = {"connect_timeout": CONNECT_TIMEOUT_S}
    options.update(parse_qsl(parts.query))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(port or ""),
        "OPTIONS": options,
        # One connection per worker kept between requests, checked before reuse.
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
