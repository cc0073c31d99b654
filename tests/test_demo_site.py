"""The demo site: start-up log line without credentials, and the poller's Redis alias."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.test import override_settings

from config.startup import connection_settings, log_connection_settings, without_credentials

ROOT = Path(__file__).resolve().parent.parent


def test_passwords_are_never_shown():
    assert (
        without_credentials("redis://user:s3cret@redis.internal:6380/1")
        == "redis://user:***@redis.internal:6380/1"
    )
    assert without_credentials("redis://:s3cret@localhost/0") == "redis://:***@localhost/0"
    assert without_credentials("redis://localhost:6379/0") == "redis://localhost:6379/0"


def test_the_start_up_line_names_the_database_and_redis_without_credentials(caplog):
    databases = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "craft",
            "HOST": "db",
            "PORT": "5432",
            "USER": "web",
            "PASSWORD": "dbpass",
        }
    }
    caches: dict[str, dict[str, Any]] = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://:redispass@redis:6379/0?client_name=craft_apps_poller",
            "OPTIONS": {
                "SOCKET_CONNECT_TIMEOUT": 3,
                "SOCKET_TIMEOUT": 5,
                "CONNECTION_POOL_KWARGS": {"max_connections": 2},
            },
        },
    }
    line = connection_settings(databases, caches)
    with override_settings(CACHES=caches), caplog.at_level(logging.INFO, logger="config"):
        log_connection_settings()
    assert "engine=django.db.backends.postgresql, name=craft, host=db, port=5432, user=web" in line
    assert "redis://:***@redis:6379/0?client_name=craft_apps_poller" in line
    assert "max connections 2" in line
    assert "dbpass" not in caplog.text and "redispass" not in caplog.text
    [logged] = [r.getMessage() for r in caplog.records]
    assert "redis://:***@redis:6379/0?client_name=craft_apps_poller" in logged


def test_the_demo_site_gives_the_poller_its_own_redis_url():
    script = "from django.conf import settings; print(settings.CACHES['craft_apps']['LOCATION'])"
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CRAFT_APPS_REDIS_URL": "redis://127.0.0.1:6399/0",
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "redis://127.0.0.1:6399/0?client_name=craft_apps_poller"
