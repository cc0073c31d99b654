"""The host's state file deleted under a running gunicorn and a running poller (issue 9, item 1).

Real processes: gunicorn with two workers serving the demo site, ``poll_craft_releases`` beside
it, the GitHub stand-in. The endpoint must keep serving the last good answer (and say so once
per worker), and the poller must make the file anew from what it holds, so that nothing it knew
(releases, ETags, fetch times) is lost and the next round revalidates instead of fetching again.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from craft_apps.domain import AppSpec
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.test_command import ROOT, Poller, state_files, wait_until

APPS = (
    AppSpec("photocraft", "PhotoCraft", "storytold/photocraft"),
    AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher"),
)
DB = "craft_apps_state.sqlite3"

pytestmark = pytest.mark.slow


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app in APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


@pytest.fixture
def env(github: FakeGitHub, state_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
        CRAFT_APPS_RELEASE_APPS=",".join(f"{a.key}={a.name}={a.repo}" for a in APPS),
        CRAFT_APPS_LEASE_TTL_SECS="3",
        CRAFT_APPS_LEASE_RETRY_SECS="0.5",
    )
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Site:
    """gunicorn with two sync workers; its access log says which worker sent which answer."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{self.port}",
                "--access-logfile", "-", "--access-logformat", "access %(p)s %(s)s %({cache-control}o)s",
                "config.wsgi:application",
            ],
            cwd=ROOT, env=env, stdout=self._out, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def get(self) -> tuple[int, str, bytes]:
        url = f"http://127.0.0.1:{self.port}/v1/craft_apps/release_info"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.headers["Cache-Control"], answer.read()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def workers_that_answered(self, cache_control: str) -> set[str]:
        lines = [line.split(" ", 3) for line in self.output().splitlines() if line.startswith("access ")]
        return {pid for _, pid, status, header in lines if status == "200" and header == cache_control}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._out.close()


def stored(state_dir: Path) -> dict[str, tuple[str, str, int]]:
    """app key -> (release JSON, ETag, fetch time) as the state file has them."""
    db = sqlite3.connect(f"{(state_dir / DB).as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT key, release_json, etag, fetched_ms FROM app_state").fetchall()
    finally:
        db.close()
    return {key: (release, etag, fetched) for key, release, etag, fetched in rows}


def test_a_deleted_state_file_loses_nothing_the_endpoint_or_the_poller_knew(
    env: dict[str, str], github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    poller = Poller(env, tmp_path / "poller.log", "--no-startup-delay")
    site = Site(env, tmp_path / "gunicorn.log")
    try:
        poller.wait_for("2 fetched")
        before = stored(state_dir)
        assert len(before) == 2 and all(etag for _, etag, _ in before.values())

        # Both workers serve the full answer before the file goes.
        wait_until(lambda: site.process.poll() is None and _answers(site), 30, "gunicorn to answer")
        status, cache_control, good = site.get()
        assert (status, cache_control) == (200, "public, max-age=60")
        warm = lambda: len(site.workers_that_answered("public, max-age=60")) == 2  # noqa: E731
        wait_until(lambda: _burst(site) and warm(), 30, "both workers to serve the full answer")

        for path in state_files(state_dir):
            path.unlink(missing_ok=True)
        deleted_at = time.monotonic()
        answers = []
        while not (state_dir / DB).exists() or time.monotonic() - deleted_at < 0.5:
            answers.append(site.get())
            assert time.monotonic() - deleted_at < 5, "the poller makes it anew within a second or so"
        assert {(s, c) for s, c, _ in answers} == {(200, "public, max-age=60")}
        assert all(body == good for _, _, body in answers), "every answer was the last good one"

        # Nothing the poller knew was lost: releases, ETags and fetch times are all back.
        assert stored(state_dir) == before
        assert "was deleted; made it anew from memory (2 apps" in poller.output()
        requests_so_far = len(github.requests)
        out = site.output()
        missing_lines = [line for line in out.splitlines() if "serving the last good answer" in line]
        assert 1 <= len(missing_lines) <= 2, out  # one line per worker that noticed
        assert all(f"{state_dir / DB} is missing" in line for line in missing_lines)
        assert "serving the not-fetched-yet answer" not in out
    finally:
        site.stop()
        poller.process.send_signal(signal.SIGTERM)
        poller.finish()

    assert len(github.requests) == requests_so_far, "the poller fetched nothing again"
    # The next round revalidates what the made-anew file holds (an hour on, every app is due).
    db = sqlite3.connect(state_dir / DB)
    db.execute("UPDATE app_state SET fetched_ms = fetched_ms - 3600000")
    db.commit()
    db.close()
    github.reset_requests()
    again = Poller(env, tmp_path / "again.log", "--once")
    assert again.finish() == 0, again.output()
    assert [r.status for r in github.requests] == [304, 304]
    assert all(r.header("If-None-Match") == github.etag_of(str(r.repo)) for r in github.requests)


def _answers(site: Site) -> bool:
    try:
        return site.get()[0] == 200
    except OSError:
        return False


def _burst(site: Site) -> bool:
    """Eight requests at once, so that both sync workers get some."""
    threads = [threading.Thread(target=site.get) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return True
