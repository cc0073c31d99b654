"""The demo site: start-up log line without credentials, one warning line for a bad ``Host``,
and the poller's Redis alias."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
import requests
from django.test import override_settings

from config.startup import connection_settings, log_connection_settings, without_credentials
from tests.support import free_port
from tests.support.source import copy_of_the_source

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://user:s3cret@redis.internal:6380/1", "redis://user:***@redis.internal:6380/1"),
        ("redis://:s3cret@localhost/0", "redis://:***@localhost/0"),
        ("rediss://:s3cret@[::1]:6380/0", "rediss://:***@[::1]:6380/0"),
        ("unix://:s3cret@/run/redis.sock?db=0", "unix://:***@/run/redis.sock?db=0"),
        ("redis://localhost/0?password=s3cret", "redis://localhost/0?password=***"),
        ("redis://localhost/0?db=1&Password=s3cret&x=1", "redis://localhost/0?db=1&Password=***&x=1"),
        ("redis://user:s3cret@localhost/0?password=s3cret", "redis://user:***@localhost/0?password=***"),
        # Unencoded "#", "/", "@" or a bad port in the password: still hidden whole.
        ("redis://:s3#cret@localhost/0", "redis://:***@localhost/0"),
        ("redis://:s3/cret@localhost/0", "redis://:***@localhost/0"),
        ("redis://:s3@cret@localhost/0", "redis://:***@localhost/0"),
        ("redis://:s3cret@localhost:port/0", "redis://:***@localhost:port/0"),
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://user@localhost:6379/0?client_name=x", "redis://user@localhost:6379/0?client_name=x"),
    ],
)
def test_passwords_are_never_shown(url: str, shown: str) -> None:
    assert without_credentials(url) == shown


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_app_installs_as_a_distribution_with_its_lua_script(tmp_path: Path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(copy_of_the_source(tmp_path / "source")),  # not the clone's build/lib
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("django_craft_apps-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "craft_apps/fleet/guarded_write.lua" in names
    assert "craft_apps/py.typed" in names
    assert "craft_apps/management/commands/poll_craft_releases.py" in names
    assert "craft_apps/testing/fake_github.py" in names  # for a staging site and a site's tests
    assert "craft_apps/migrations/0001_notices.py" in names
    assert "craft_apps/templates/admin/craft_apps/change_list.html" in names
    for template in ("page.html", "card.html", "styles.css", "copy.js"):
        assert f"craft_apps/templates/craft_apps/downloads/{template}" in names
    assert not any(name.startswith(("config/", "tests/")) for name in names)


@pytest.mark.slow
def test_under_gunicorn_no_password_is_logged_and_a_bad_host_is_one_warning_line(tmp_path: Path):
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DB_NAME": str(tmp_path / "demo.sqlite3"),
        "CRAFT_APPS_STATE_DIR": str(tmp_path / "state"),
        "CRAFT_APPS_REDIS_URL": "redis://user:userS3cret@127.0.0.1:6399/0?password=queryS3cret",
    }
    command = [sys.executable, "-m", "gunicorn", "--workers", "1", "--bind", f"127.0.0.1:{port}"]
    command += ["--no-control-socket", "config.wsgi:application"]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1/craft_apps/release_info"
        deadline = time.monotonic() + 20
        while True:
            try:
                # The worker may still be booting while the socket already accepts: a request
                # then waits in the backlog, so a read timeout is "not up yet" too.
                assert requests.get(url, timeout=2).status_code == 200
                break
            except (requests.ConnectionError, requests.Timeout):
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        assert requests.get(url, headers={"Host": "evil.example"}, timeout=2).status_code == 400
        assert requests.get(url, headers={"Host": "bad host\\x"}, timeout=2).status_code == 400
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    text = log.read_text()
    assert "Redis for craft_apps: redis://user:***@127.0.0.1:6399/0?password=***&client_name=" in text
    assert "S3cret" not in text
    assert "Traceback" not in text and " ERROR " not in text
    bad_hosts = [line for line in text.splitlines() if "DisallowedHost" in line]
    assert len(bad_hosts) == 2, text
    assert bad_hosts[0].endswith(
        " WARNING django.security.DisallowedHost: Invalid HTTP_HOST header: 'evil.example'. "
        "You may need to add 'evil.example' to ALLOWED_HOSTS."
    )
    assert " WARNING django.security.DisallowedHost: Invalid HTTP_HOST header: " in bad_hosts[1]


@pytest.mark.slow
def test_the_demo_site_migrates_a_fresh_database_for_the_notices_and_their_admin(tmp_path: Path):
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DB_NAME": str(tmp_path / "demo.sqlite3"),
        "CRAFT_APPS_STATE_DIR": str(tmp_path / "state"),
        "PATH": "/usr/bin:/bin",
    }
    script = (
        "import django, json; django.setup();"
        "from django.core.management import call_command; call_command('migrate', verbosity=0);"
        "from django.test import Client; from django.contrib.auth.models import User;"
        "client = Client(HTTP_HOST='localhost');"
        "client.force_login(User.objects.create(username='op', is_staff=True, is_superuser=True));"
        "print(client.get('/admin/craft_apps/alert/').status_code)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "200", out.stderr
