"""Two gunicorn workers (real processes) on the test database, for the tests that watch what
both serve: ``workers`` starts them on a published state, ``database_for_the_workers`` gives
them the test database and a way to take it away, ``database_locked`` holds a real lock on it,
and ``logged_by`` says which workers logged a line."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Model

from craft_apps.content.models import NOTICE_MODELS, AppChannel, NoticesVersion, ReleaseControl
from craft_apps.kernel.domain import AppState
from tests.content.tcp_proxy import TcpProxy
from tests.support import free_port, publish

ROOT = Path(__file__).resolve().parents[2]
FETCHED_MS = 1_790_000_000_000
ABOUT_A_SECOND = 2.0  # the look a second after the last one ended, the look itself (a new connection
# on PostgreSQL) and a loaded machine's request latency: CI's PostgreSQL pass once took 1.9 s


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
        DJANGO_SETTINGS_MODULE="tests.content.worker_site",
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


@contextmanager
def database_locked() -> Iterator[None]:
    """No one else reads the notices' tables until the block ends."""
    if connection.vendor == "postgresql":
        models: list[type[Model]] = [NoticesVersion, *NOTICE_MODELS, AppChannel, ReleaseControl]
        tables = ", ".join(model._meta.db_table for model in models)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
            yield
        return
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def logged_by(site: Workers, text: str) -> set[str]:
    """The worker pids that logged ``text``."""
    return {line.split()[0] for line in site.output().splitlines() if text in line}
