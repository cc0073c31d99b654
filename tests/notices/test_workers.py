"""Two gunicorn workers (real processes) on the test database: an edit, a window opening and
closing, each shows on both within about a second; with the database gone both keep answering
with the releases and the last notices, and each logs it once."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from craft_apps.domain import AppState
from craft_apps.notices.models import Alert
from tests.notices.support import alert
from tests.notices.tcp_proxy import TcpProxy
from tests.support import ONE_AT_A_TIME, free_port, publish

ROOT = Path(__file__).resolve().parents[2]
FETCHED_MS = 1_790_000_000_000
ABOUT_A_SECOND = 1.6  # the once-a-second look, plus a loaded machine's request latency

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]


@dataclass(frozen=True)
class Served:
    pid: str
    alerts: tuple[str, ...]
    last_fetched: str | None


class Workers:
    """gunicorn with two sync workers; ``burst`` sends concurrent requests so both answer."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--workers",
                "2",
                "--bind",
                f"127.0.0.1:{self.port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )
        self._pool = concurrent.futures.ThreadPoolExecutor(6)

    def get(self) -> Served:
        url = f"http://127.0.0.1:{self.port}/v1/craft_apps/release_info"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200
            body = json.loads(response.read())
            return Served(
                response.headers["X-Worker-Pid"],
                tuple(a["title"] for a in body["important_notices"]["alerts"]),
                body["release_info"]["last_fetched"],
            )

    def status(self, path: str) -> int:
        """The status of ``GET path``, a redirect not followed."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            connection.request("GET", path)
            return connection.getresponse().status
        finally:
            connection.close()

    def burst(self) -> list[Served]:
        return list(self._pool.map(lambda _: self.get(), range(12)))

    def until_both(self, condition: Callable[[Served], bool], timeout: float, what: str) -> float:
        """Seconds until each worker has served an answer meeting ``condition``."""
        started, met = time.monotonic(), set[str]()
        while len(met) < 2:
            met |= {served.pid for served in self.burst() if condition(served)}
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{what}: only {sorted(met)} after {timeout} s\n{self.output()}")
        return time.monotonic() - started

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self._pool.shutdown()
        self.process.terminate()
        self.process.wait(timeout=10)
        self._out.close()


@contextmanager
def workers(
    tmp_path: Path,
    database: dict[str, str],
    state: AppState | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Workers]:
    state_dir = tmp_path / "state"
    publish(state_dir, {"photocraft": state or AppState(fetched_ms=FETCHED_MS)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.notices.worker_site",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_APPS="photocraft=PhotoCraft=storytold/photocraft",
        **{f"DJANGO_DB_{key}": value for key, value in database.items()},
        **(extra_env or {}),
    )
    running = Workers(env, tmp_path / "gunicorn.log")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                running.get()
                break
            except OSError:
                assert running.process.poll() is None, running.output()
                assert time.monotonic() < deadline, running.output()
                time.sleep(0.05)
        yield running
    finally:
        running.stop()


@contextmanager
def database_for_the_workers() -> Iterator[tuple[dict[str, str], Callable[[], None]]]:
    """The workers' database settings (the test database) and how to take it away from them."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        proxy = TcpProxy(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432))
        settings = {"ENGINE": "postgresql", "NAME": db["NAME"], "HOST": "127.0.0.1", "PORT": str(proxy.port)}
        settings["USER"] = db["USER"] or ""
        yield settings, proxy.cut
        proxy.cut()
        return
    path = Path(db["NAME"])
    away = path.with_name(path.name + ".away")

    def take_away() -> None:
        path.rename(away)

    yield {"ENGINE": "sqlite3", "NAME": str(path)}, take_away
    if away.exists():  # put the test database back where the test process's teardown expects it
        connection.close()
        path.unlink(missing_ok=True)  # the empty file the workers' next connection made
        away.rename(path)


def test_two_workers_follow_edits_and_windows_within_a_second_and_survive_the_database(tmp_path: Path):
    item = alert(title="first", visible_from=timezone.now() - timedelta(minutes=1))
    with database_for_the_workers() as (database, take_away), workers(tmp_path, database) as site:
        site.until_both(lambda s: s.alerts == ("first",), 10, "both workers serve the alert")

        Alert.objects.filter(pk=item.pk).update(title="edited")
        took = site.until_both(lambda s: s.alerts == ("edited",), 5, "the edit on both workers")
        assert took < ABOUT_A_SECOND

        opens = timezone.now() + timedelta(seconds=1)
        alert(title="window", visible_from=opens, visible_until=opens + timedelta(seconds=0.6))
        while timezone.now() < opens - timedelta(seconds=0.1):
            assert all("window" not in s.alerts for s in site.burst()), "not before it opens"
        took = site.until_both(lambda s: s.alerts == ("window", "edited"), 5, "the window opening")
        assert took < ABOUT_A_SECOND, "opens on time, with no edit"
        took = site.until_both(lambda s: s.alerts == ("edited",), 5, "the window closing")
        assert 0.3 < took < ABOUT_A_SECOND, "closes 0.6 s later, with no edit"

        take_away()
        logged = "the database can't be read"
        started = time.monotonic()
        while len({line.split()[0] for line in site.output().splitlines() if logged in line}) < 2:
            for served in site.burst():
                assert served.alerts == ("edited",), "the last notices"
                assert served.last_fetched == "2026-09-21T14:13:20Z", "and the releases"
            assert time.monotonic() - started < 10, site.output()
        for served in site.burst():
            assert served.alerts == ("edited",)
        lines = [line for line in site.output().splitlines() if logged in line]
        assert len(lines) == 2, lines  # one per worker
        assert all("serving the last 1 notices and renames this process had" in line for line in lines)
