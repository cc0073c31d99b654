"""Cloudflare's purge by URL against a local stand-in of its API (a small HTTP server in this
process that checks the bearer token and records the URLs it was asked to drop), with the real
sender and a real state file; the backoff's waits run on a fake clock, the timeouts for real.
A 500 and a timeout are retried; a purge never taken is given up with one log line, a metric
and a line of ``craft_apps_status``, and never shows the token."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from craft_apps.cdn.plan import RELEASE_INFO
from craft_apps.cdn.purger import Purger
from craft_apps.cdn.sender import Sender
from craft_apps.conf import app_settings
from craft_apps.host.counters import record
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN as METRICS_TOKEN
from tests.api.support import scrape
from tests.cdn.edge import serve
from tests.support import publish, release

pytestmark = pytest.mark.django_db

TOKEN = "cf-s3cret-api-token"
ZONE = "0123abcd"
BETA = RELEASE_INFO + "?channel=beta"
PUBLIC = "https://updates.example.com"


class CloudflareStandIn:
    """``POST /client/v4/zones/<zone>/purge_cache``, answering from a script: ``ok``, ``500`` or
    ``hang`` (no answer until the test ends: the client's timeout)."""

    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.files: list[list[str]] = []
        self.authorizations: list[str | None] = []
        self.released = threading.Event()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.authorizations.append(self.headers.get("Authorization"))
                step = stand_in.script.pop(0) if stand_in.script else "ok"
                if self.path != f"/client/v4/zones/{ZONE}/purge_cache":
                    return self.answer(404, {"success": False, "errors": [{"message": "no route"}]})
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self.answer(403, {"success": False, "errors": [{"code": 10000}]})
                if step == "hang":
                    stand_in.released.wait(10)
                    return None
                if step == "500":
                    return self.answer(500, {"success": False, "errors": [{"message": "internal"}]})
                stand_in.files.append(body["files"])
                return self.answer(200, {"success": True, "errors": [], "result": {"id": "1"}})

            def answer(self, status: int, document: object) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = serve(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/client/v4"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> Iterator[CloudflareStandIn]:
    running = CloudflareStandIn([])
    yield running
    running.close()


@pytest.fixture
def cloudflare(stand_in: CloudflareStandIn, state_dir: Path, settings) -> StateStore:
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "METRICS_TOKEN": METRICS_TOKEN,
        "CDN_PURGE_KIND": "cloudflare",
        "CDN_PURGE_URL": stand_in.url,
        "CDN_PURGE_TOKEN": TOKEN,
        "CDN_PURGE_ZONE": ZONE,
        "CDN_PUBLIC_URL": PUBLIC,
        "CDN_PURGE_TIMEOUT_SECS": 0.3,
    }
    publish(state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=1)})
    store = StateStore(state_dir)
    store.open_for_writing()
    return store


def purger(store: StateStore, clock: FakeClock) -> Purger:
    target = app_settings.CDN_PURGE
    assert target is not None
    return Purger(
        target,
        answers=dict,
        is_leader=lambda: True,
        send=Sender(target),
        record=lambda update: record(store, update),
        clock=clock,
    )


def status() -> str:
    out = StringIO()
    call_command("craft_apps_status", stdout=out)
    return out.getvalue()


def test_the_changed_urls_are_purged_with_the_bearer_token(cloudflare: StateStore, stand_in, fake_clock):
    assert purger(cloudflare, fake_clock).purge((RELEASE_INFO, BETA)) is True
    assert stand_in.files == [[PUBLIC + RELEASE_INFO, PUBLIC + BETA]]
    assert stand_in.authorizations == [f"Bearer {TOKEN}"]
    line = next(line for line in status().splitlines() if line.startswith("cdn purge"))
    assert "cloudflare purge by URL to http://127.0.0.1:" in line and "(token set)" in line
    assert "1 purged, 0 retried, 0 given up" in line and TOKEN not in line


def test_a_500_and_a_timeout_are_retried(cloudflare: StateStore, stand_in, fake_clock):
    stand_in.script[:] = ["500", "hang"]
    assert purger(cloudflare, fake_clock).purge((RELEASE_INFO,)) is True
    assert stand_in.files == [[PUBLIC + RELEASE_INFO]]
    assert fake_clock.sleeps == [0.5, 1.0]
    assert "1 purged, 2 retried, 0 given up" in status()


def test_given_up_it_says_so_once_in_the_log_the_metrics_and_the_status(
    cloudflare: StateStore, stand_in, fake_clock, client, caplog
):
    stand_in.script[:] = ["500", "hang", "500", "500"]
    with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
        assert purger(cloudflare, fake_clock).purge((RELEASE_INFO,)) is False
    assert stand_in.files == []
    reason = f"POST {stand_in.url}/zones/{ZONE}/purge_cache: HTTP 500, 4 tries"
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("craft_apps.cdn")]
    assert len(lines) == 1 and reason in lines[0] and TOKEN not in lines[0]
    samples = scrape(client)
    purges = samples["craft_apps_cdn_purges_total"]
    assert {labels[0][1]: value for labels, value in purges.items()} == {
        "purged": 0,
        "retried": 3,
        "failed": 1,
        "unconfirmed": 0,
    }
    assert samples["craft_apps_cdn_purge_last_failure_timestamp_seconds"][()] == fake_clock.now_ms() / 1000
    text = status()
    assert "0 purged, 3 retried, 1 given up; gave up " in text and reason in text
    assert TOKEN not in text


def test_a_wrong_token_is_refused_once_and_never_shown(
    cloudflare: StateStore, stand_in, fake_clock, settings, caplog
):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "CDN_PURGE_TOKEN": "wrong-s3cret"}
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        assert purger(cloudflare, fake_clock).purge((RELEASE_INFO,)) is False
    assert stand_in.authorizations == ["Bearer wrong-s3cret"]  # refused for good: not tried again
    assert "HTTP 403, 1 try" in caplog.text and "s3cret" not in caplog.text
