"""The site ``bench.cdn`` puts launchers in front of: the GitHub stand-in with the 13 demo
releases, the demo site's database, ``poll_craft_releases`` and gunicorn (two workers, signing
with a key made for the run), and, unless the launchers ask the origin straight, Varnish or
nginx as configured by ``examples/cdn/`` (``tests.cdn.support`` runs them).

Changes come the way they come in production: a release is published on the stand-in and GitHub's
signed webhook is posted to the origin (the poller asks at once); a yank is a release control
row written through the ORM, as the admin writes it. gunicorn writes an access log: the origin
requests that launchers caused are its lines with their User-Agent (Varnish's health probe has
none). An outage stops gunicorn and starts it again on the same port.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from bench.cdn_fleet import USER_AGENT
from craft_apps.conf import DEFAULT_APPS
from craft_apps.kernel import signing
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.cdn.support import Nginx, Server, Varnish, until_listening
from tests.support import free_port, release_event, webhook_headers

SAVED = "saved"  # what the yank's process says once its row is saved

ROOT = Path(__file__).resolve().parent.parent
PATH = "/v1/craft_apps/release_info"
WEBHOOK_PATH = "/v1/craft_apps/github_webhook"
SECRET = "bench-cdn-webhook-secret"
TOKEN = "bench-cdn-token"
READY_TIMEOUT_S = 60.0
# The poller's line at the end of a round that asked GitHub.
ROUND_DONE = re.compile(r"Craft app releases \((?:coordinated|standalone)\): \d+ fetched")
APP: AppSpec = DEFAULT_APPS[0]


class Origin:
    """GitHub's stand-in, the poller and gunicorn on one state directory and one database."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.key = signing.generate()
        self.port = free_port()
        self.access_log = workdir / "access.log"
        self.github = FakeGitHub(authenticated_limit=1_000_000).start()
        # Its files on its own address, as the poller is told (GITHUB_WEB_URL), never github.com.
        self.github.web_url = self.github.url
        self.github.load_demo()
        self.env = self._env()
        self._read_lines = 0
        self.gunicorn: subprocess.Popen[bytes] | None = None
        self.poller: subprocess.Popen[bytes] | None = None

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DJANGO_DEBUG="false",
            DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
            DJANGO_DB_NAME=str(self.workdir / "site.sqlite3"),
            DJANGO_LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
            PYTHONPATH=str(ROOT),
            CRAFT_APPS_STATE_DIR=str(self.workdir / "state"),
            CRAFT_APPS_RELEASE_GITHUB_API_URL=self.github.url,
            CRAFT_APPS_RELEASE_GITHUB_WEB_URL=self.github.web_url,
            CRAFT_APPS_RELEASE_GITHUB_TOKEN=TOKEN,
            CRAFT_APPS_RELEASE_GITHUB_WEBHOOK_SECRET=SECRET,
            CRAFT_APPS_SIGNING_KEY=signing.private_key_text(self.key),
        )
        return env

    def start(self) -> None:
        """Migrates, starts the poller and gunicorn, and waits until every app is fetched."""
        manage = [sys.executable, str(ROOT / "manage.py")]
        done = subprocess.run(
            [*manage, "migrate", "--noinput", "-v", "0"],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"migrate failed: {done.stderr[-500:]}")
        with (self.workdir / "poller.log").open("ab") as out:
            self.poller = subprocess.Popen(
                [*manage, "poll_craft_releases"], env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )
        self.start_gunicorn()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "no-store" in self._header_or_none("cache-control"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the poller didn't fetch every app: {self.tail('poller.log')}")
            time.sleep(0.2)  # the poller's first round, against the fake GitHub
        # The first round then asks each app's release list; a webhook is read after the round.
        while not ROUND_DONE.search((self.workdir / "poller.log").read_text(errors="replace")):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the poller's first round didn't end: {self.tail('poller.log')}")
            time.sleep(0.2)

    def start_gunicorn(self) -> None:
        command = [
            sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", "2",
            "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning",
            "--access-logfile", str(self.access_log), "--access-logformat", "%(s)s %(m)s %(U)s %(a)s",
        ]  # fmt: skip
        with (self.workdir / "gunicorn.log").open("ab") as out:
            self.gunicorn = subprocess.Popen(
                command, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )
        until_listening(self.port, self.gunicorn, self.workdir / "gunicorn.log", timeout=READY_TIMEOUT_S)

    def stop_gunicorn(self) -> None:
        _stop(self.gunicorn)

    def stop(self) -> None:
        _stop(self.gunicorn)
        _stop(self.poller)
        self.github.stop()

    def get_header(self, name: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{PATH}", timeout=30) as answer:
            return str(answer.headers.get(name, ""))

    def _header_or_none(self, name: str) -> str:
        """``get_header``, or "no-store" while the origin is still starting."""
        try:
            return self.get_header(name)
        except OSError:
            return "no-store"

    def max_age_s(self) -> int:
        for part in self.get_header("cache-control").split(","):
            name, _, value = part.strip().partition("=")
            if name == "max-age":
                return int(value)
        raise RuntimeError("the origin's answer has no max-age")

    def launcher_requests(self) -> int:
        """Origin requests caused by launchers since the last call (the access log's new lines)."""
        try:
            lines = self.access_log.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return 0
        new = lines[self._read_lines :]
        self._read_lines = len(lines)
        return sum(1 for line in new if USER_AGENT in line)

    def tail(self, name: str) -> str:
        try:
            return " | ".join((self.workdir / name).read_text(errors="replace").strip().splitlines()[-8:])
        except OSError:
            return "(no log)"

    # --- the changes --------------------------------------------------------------------------

    def release(self, version: str) -> str:
        """Publishes ``version`` of the first app on the stand-in and posts GitHub's webhook."""
        published = demo_release(APP, version, datetime.now(UTC), web_url=self.github.web_url)
        self.github.publish(APP.repo, published)
        body = json.dumps(release_event(APP.repo)).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{WEBHOOK_PATH}",
            data=body,
            headers={"Content-Type": "application/json", **webhook_headers(body, SECRET)},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            if answer.status != 202:
                raise RuntimeError(f"the webhook answered {answer.status}")
        return str(published["tag_name"])

    def yank(self, tag: str) -> None:
        """A yank of ``tag`` of the first app, saved as the admin saves it (``python -m
        bench.cdn_site yank TAG`` on the origin's database). Returns as soon as the process
        says the row is saved, not when it has ended (its exit takes up to a second)."""
        command = [sys.executable, "-m", "bench.cdn_site", "yank", tag]
        process = subprocess.Popen(
            command, env=self.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        said = process.stdout.readline()  # "saved" right after the row's commit, or "" at exit
        if said.strip() == SAVED:
            threading.Thread(target=process.communicate, daemon=True).start()  # let it end
            return
        _, errors = process.communicate(timeout=60)
        raise RuntimeError(f"the yank failed: {errors[-500:]}")


def save_yank(tag: str) -> None:
    """In the origin's environment (Django set up): the yank row, checked as the admin checks it."""
    from craft_apps.content.models import ReleaseControl
    from craft_apps.controls.rules import YANK

    row = ReleaseControl(app_key=APP.key, action=YANK, tag=tag, reason="bench: a bad build")
    row.full_clean()
    row.save()


def start_proxy(kind: str, workdir: Path, origin_port: int) -> Server:
    """Varnish or nginx with the shipped example, in front of ``origin_port``."""
    directory = workdir / kind
    directory.mkdir()
    if kind == "varnish":
        return Varnish(directory, origin_port)
    if kind == "nginx":
        return Nginx(directory, origin_port)
    raise ValueError(f"unknown proxy {kind!r}")


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


if __name__ == "__main__":
    if sys.argv[1:2] != ["yank"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m bench.cdn_site yank TAG (in the origin's environment)")
    import django

    django.setup()
    save_yank(sys.argv[2])
    print(SAVED, flush=True)
