"""`manage.py craft_apps_status` as real processes after a real poller round, with a real Redis,
and in process for what only Redis can show (the fleet's backoff and claims)."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from craft_apps.fleet.store import SharedStore
from craft_apps.host.counters import CountersUpdate, record
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState, Backoff
from craft_apps.kernel.instants import datetime_to_ms, parse_rfc3339
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.server import RedisServer
from tests.support import apps_setting, free_port, publish, publish_history, release, stand_in

ROOT = Path(__file__).resolve().parents[2]
APPS_SETTING = apps_setting()

pytestmark = pytest.mark.slow


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with stand_in() as server:
        yield server


@pytest.fixture
def env(github: FakeGitHub, state_dir: Path, redis_server: RedisServer, redis_client) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
        CRAFT_APPS_RELEASE_APPS=APPS_SETTING,
        CRAFT_APPS_REDIS_URL=redis_server.url,
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_after_a_coordinated_round_it_shows_every_app_the_lease_and_the_quota(env: dict[str, str]):
    assert manage(env, "poll_craft_releases", "--once").returncode == 0
    done = manage(env, "craft_apps_status", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["format"] == 1 and doc["mode"] == "coordinated"
    assert [app["key"] for app in doc["apps"]] == ["artcraft-launcher", "photocraft"]
    for app in doc["apps"]:
        assert app["tag"] == "v0.5.0" and app["etag"] is True and app["failures"] == 0
        assert app["published_at"] == "2026-10-08T00:00:00Z"
        assert 0 <= app["last_fetched_age_s"] < 60 and app["next_due_at"] is not None
        assert app["fleet_claim"]["by"] == socket.gethostname()
    assert doc["lease"]["active"] is False and doc["lease"]["expires_at"] is None  # released cleanly
    assert doc["poller"]["stopped_at"] is not None
    # Each app's latest, and its release list with its first latest: 4 of the 60.
    assert doc["github_quota"]["limit"] == 60 and doc["github_quota"]["remaining"] == 56
    assert doc["github_requests"] == {"fetched": 4, "not_modified": 0, "failed": 0, "rate_limited": 0}
    redis = {key: doc["redis"][key] for key in ("configured", "problem", "errors")}
    assert redis == {"configured": True, "problem": None, "errors": 0}
    assert doc["fleet_backoff"] == {"until": None, "trouble": 0}
    assert doc["health"] == {
        "status": "ok",
        "rules": ["state_file", "poller", "stale", "gone"],
        "problems": [],
    }
    text = manage(env, "craft_apps_status")
    assert text.returncode == 0
    assert text.stdout.splitlines()[0].split() == [
        "APP", "TAG", "PUBLISHED", "FETCHED", "FAILURES", "NEXT", "DUE", "ETAG", "HISTORY", "FLEET", "CLAIM",
        "BETA",
    ]  # fmt: skip
    assert "github quota     56 of 60 left, resets in " in text.stdout
    assert "health           ok" in text.stdout


def test_a_redis_key_the_poller_refused_is_counted_and_shown(env: dict[str, str], redis_client):
    key = "craftApps:releases:app:photocraft"
    redis_client.hset(key, mapping={"v": "1", "fetched_ms": "1", "etag": "", "release": "{"})
    polled = manage(env, "poll_craft_releases", "--once")
    assert polled.returncode == 0, polled.stderr
    assert polled.stderr.count(f"ignoring what can't be read in Redis key {key}") == 1

    doc = json.loads(manage(env, "craft_apps_status", "--json").stdout)
    assert (doc["redis"]["errors"], doc["redis"]["unreadable_keys"]) == (0, 1)
    assert [app["tag"] for app in doc["apps"] if app["key"] == "photocraft"] == ["v0.5.0"]
    text = manage(env, "craft_apps_status").stdout
    assert "redis            reachable; 0 errors, 1 unreadable key refused counted by the poller" in text

    assert manage(env, "poll_craft_releases", "--once").returncode == 0  # the entry is ours now
    assert json.loads(manage(env, "craft_apps_status", "--json").stdout)["redis"]["unreadable_keys"] == 1


def test_check_exits_1_with_one_line_per_problem(env: dict[str, str], state_dir: Path):
    assert manage(env, "poll_craft_releases", "--once").returncode == 0
    assert manage(env, "craft_apps_status", "--check").returncode == 0
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    with db:
        db.execute("UPDATE app_state SET fetched_ms = fetched_ms - 5 * 3600 * 1000")
    db.close()
    checked = manage(env, "craft_apps_status", "--check")
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("stale: ") for line in lines), lines
    assert "photocraft was last fetched 5 h" in checked.stdout


def test_check_takes_the_rules_asked_for_and_speaks_json(settings, state_dir: Path):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": APPS_SETTING}
    publish(state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=1)})  # long ago
    record(StateStore(state_dir), CountersUpdate(stopped_ms=int(time.time() * 1000)))  # just stopped
    assert status("--check", "--rule", "poller") == ""
    with pytest.raises(CommandError) as failed:
        status("--check", "--json", "--rule", "stale")
    assert failed.value.returncode == 1
    with pytest.raises(CommandError):
        out = StringIO()
        call_command("craft_apps_status", "--check", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["status"] == "unhealthy"
    details = [problem["detail"] for problem in body["problems"]]
    assert [detail.split(" ")[0] for detail in details] == ["photocraft", "artcraft-launcher"]


def test_each_app_s_history_depth_shows_in_the_table_and_the_json(settings, state_dir: Path):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": APPS_SETTING}
    publish(state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=1)})
    publish_history(state_dir, "photocraft", [release("0.5.0"), release("0.4.0"), release("0.3.0")])
    apps = {app["key"]: app for app in json.loads(status("--json"))["apps"]}
    assert apps["photocraft"]["history_depth"] == 3
    assert apps["artcraft-launcher"]["history_depth"] == 0  # none known yet
    lines = status().splitlines()
    header, photocraft = lines[0], next(line for line in lines if line.startswith("photocraft "))
    column = header.index("HISTORY")  # the table's columns are aligned
    assert photocraft[column:].split()[0] == "3"


def redis_alias(url: str) -> dict[str, object]:
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": url + "?client_name=craft_apps_poller",
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 3, "SOCKET_TIMEOUT": 5},
    }


def status(*args: str) -> str:
    out = StringIO()
    call_command("craft_apps_status", *args, stdout=out)
    return out.getvalue()


def test_redis_trouble_is_reported_and_never_fatal(settings, state_dir: Path):
    settings.CACHES = {**settings.CACHES, "craft_apps": redis_alias(f"redis://127.0.0.1:{free_port()}/0")}
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": APPS_SETTING}
    publish(state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=1)})
    doc = json.loads(status("--json"))
    assert doc["redis"]["configured"] is True and "ConnectionError" in doc["redis"]["problem"]
    assert doc["fleet_backoff"] is None and doc["apps"][1]["tag"] == "v0.5.0"
    assert "fleet backoff    unknown (Redis can't be read)" in status()


def test_the_fleet_backoff_and_a_claim_in_redis_show(
    settings, state_dir: Path, redis_server: RedisServer, redis_client
):
    settings.CACHES = {**settings.CACHES, "craft_apps": redis_alias(redis_server.url)}
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": APPS_SETTING}
    shared = SharedStore(redis_client, hostname="host-b")
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    assert shared.claims.claim("photocraft", now_ms - 5000)
    shared.entries.write_backoff(Backoff(until_ms=now_ms + 600_000, trouble=2))
    doc = json.loads(status("--json"))
    claims = {app["key"]: app["fleet_claim"] for app in doc["apps"]}
    assert claims["artcraft-launcher"] is None
    assert claims["photocraft"]["by"] == "host-b" and claims["photocraft"]["active"] is True
    assert doc["fleet_backoff"]["trouble"] == 2 and doc["fleet_backoff"]["until"] is not None
    assert doc["state_file"]["exists"] is False
    assert [p["rule"] for p in doc["health"]["problems"]] == ["poller", "stale", "stale"]
    text = status()
    assert "2 troubled rounds in a row" in text and "host-b 5 s ago" in text


def test_a_refresh_asked_for_shows_as_the_next_due_time_and_why(env: dict[str, str], redis_client):
    """A refresh marked by `craft_apps_refresh` (as by a webhook), in Redis and on the host's
    state file, is the next due time: the last request plus the 11 s gap, not the interval."""
    assert manage(env, "poll_craft_releases", "--once").returncode == 0
    assert manage(env, "craft_apps_refresh", "photocraft").returncode == 0
    assert redis_client.hexists("craftApps:releases:due", "photocraft")
    doc = json.loads(manage(env, "craft_apps_status", "--json").stdout)
    apps = {app["key"]: app for app in doc["apps"]}
    photocraft, launcher = apps["photocraft"], apps["artcraft-launcher"]
    assert photocraft["next_due_reason"] == "refresh" and photocraft["refresh_requested_at"] is not None
    fetched_ms = datetime_to_ms(parse_rfc3339(photocraft["last_fetched_at"]))
    if photocraft["next_due_at"] is not None:  # None: the 11 s are over, due at the next look
        assert datetime_to_ms(parse_rfc3339(photocraft["next_due_at"])) <= fetched_ms + 11_000
    assert launcher["next_due_reason"] == "schedule" and launcher["refresh_requested_at"] is None
    assert datetime_to_ms(parse_rfc3339(launcher["next_due_at"])) > fetched_ms + 20 * 60_000
    text = manage(env, "craft_apps_status").stdout
    assert re.search(r"^photocraft .*(now|in \d+ s) \(refresh\)", text, re.M), text


@pytest.mark.django_db
def test_each_apps_beta_channel_shows_in_text_and_json(settings, state_dir: Path):
    from craft_apps.content.models import AppChannel

    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": APPS_SETTING}
    publish(state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=1)})
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    doc = json.loads(status("--json"))
    assert {app["key"]: app["beta"] for app in doc["apps"]} == {
        "artcraft-launcher": False,
        "photocraft": True,
    }
    lines = status().splitlines()
    assert lines[0].split()[-1] == "BETA"
    assert [line.split()[-1] for line in lines[1:3]] == ["off", "on"]


def test_the_controls_the_fleet_shares_show_with_redis(env: dict[str, str], redis_client):
    from craft_apps.controls.kept import encode
    from craft_apps.controls.rules import YANK, Control

    doc = json.loads(manage(env, "craft_apps_status", "--json").stdout)
    assert doc["redis"]["shared_controls"] is None
    assert "fleet controls   missing from Redis: " in manage(env, "craft_apps_status").stdout

    read_ms = datetime_to_ms(parse_rfc3339("2026-12-01T09:00:00Z"))
    store = SharedStore(redis_client, hostname="host-a")
    assert store.controls.write(encode((Control("photocraft", YANK, "v0.5.0"),)), read_ms)
    doc = json.loads(manage(env, "craft_apps_status", "--json").stdout)
    assert doc["redis"]["shared_controls"] == {
        "controls": 1,
        "read_at": "2026-12-01T09:00:00Z",
        "problem": None,
    }
    assert (
        "fleet controls   1 shared, read from the site's database " in manage(env, "craft_apps_status").stdout
    )

    assert store.controls.write("not the controls", read_ms + 1)
    shared = json.loads(manage(env, "craft_apps_status", "--json").stdout)["redis"]["shared_controls"]
    assert shared["controls"] is None and shared["problem"].startswith("they don't read as controls: ")
    redis_client.hset("craftApps:releases:controls", "v", "9")  # a hash of another format shows too
    shared = json.loads(manage(env, "craft_apps_status", "--json").stdout)["redis"]["shared_controls"]
    assert shared["controls"] is None and shared["problem"].startswith("controls of format '9'")
