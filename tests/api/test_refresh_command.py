"""`manage.py craft_apps_refresh [APP_KEY ...]`: the webhook's marks, by hand."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import override_settings

from craft_apps.fleet.options import poller_cache
from craft_apps.host.due import HostDueMarks
from tests.fleet.server import RedisServer
from tests.support import publish

ROOT = Path(__file__).resolve().parents[2]
APPS = "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft"
LOCAL = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("craft_apps_refresh", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_named_apps_are_marked_due_for_the_fleet_and_the_host(
    state_dir: Path, redis_server: RedisServer, redis_client: redis.Redis
):
    publish(state_dir, {})
    caches = {"default": LOCAL, "craft_apps": poller_cache(redis_server.url)}
    with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), "APPS": APPS}, CACHES=caches):
        output = run("PhotoCraft")
        assert "Marked photocraft due in Redis and this host's state file" in output
        assert set(redis_client.hgetall("craftApps:releases:due")) == {b"photocraft"}
        assert [(m.app, m.shared) for m in HostDueMarks(state_dir).marks()] == [("photocraft", True)]
        run()
    assert set(redis_client.hgetall("craftApps:releases:due")) == {b"photocraft", b"vectorcraft"}
    assert redis_client.get("craftApps:releases:due:seq") == b"2"


def test_without_redis_only_this_host_is_marked_and_it_says_so(state_dir: Path):
    publish(state_dir, {})
    with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), "APPS": APPS}, CACHES={"default": LOCAL}):
        output = run("vectorcraft")
    assert "the other hosts at their next scheduled check" in output
    assert [m.app for m in HostDueMarks(state_dir).marks()] == ["vectorcraft"]


def test_unknown_app_keys_are_an_error_naming_them(state_dir: Path):
    publish(state_dir, {})
    with (
        override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), "APPS": APPS}, CACHES={"default": LOCAL}),
        pytest.raises(CommandError, match=r"unknown app key\(s\): nope, zzz; the configured ones are"),
    ):
        run("photocraft", "nope", "zzz")
    assert HostDueMarks(state_dir).marks() == [], "nothing marked"


def test_nowhere_to_mark_is_an_error(state_dir: Path):
    with (
        override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), "APPS": APPS}, CACHES={"default": LOCAL}),
        pytest.raises(CommandError, match="doesn't exist yet"),
    ):
        run()


@pytest.mark.slow
def test_an_unknown_key_exits_1(state_dir: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", CRAFT_APPS_STATE_DIR=str(state_dir))
    done = subprocess.run(
        [sys.executable, "manage.py", "craft_apps_refresh", "nope"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "unknown app key(s): nope" in done.stderr
