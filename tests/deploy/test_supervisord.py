"""The supervisord example (examples/deploy/supervisord.conf) runs a new ``startproject`` site set
up as docs/installation.md says: its placeholders filled for that site and this virtual
environment, supervisord from PyPI starts the web workers and the poller, the site answers
(its endpoint, a static file, and a health check that sees the poller's lease in the shared state
directory), and supervisorctl stops both cleanly."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.deploy.support import EXAMPLES, PLACEHOLDER, filled
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT, free_port
from tests.support.new_site import HOST, NewSite, new_site, wait_until_served

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

CONF = EXAMPLES / "supervisord.conf"
PROGRAMS = ("craft_apps_web", "craft_apps_poller")
GUNICORN_BIND = "127.0.0.1:8000"
STARTS_WITHIN_S = 60


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return err.code


def until_status(url: str, wanted: int, log: Path) -> None:
    """Until ``url`` answers ``wanted``: the poller taking the lease is what changes it."""
    deadline = time.monotonic() + STARTS_WITHIN_S
    while (status := status_of(url)) != wanted:
        assert time.monotonic() < deadline, (url, status, log.read_text(errors="replace")[-2000:])
        time.sleep(0.1)  # another process's progress, not a timer under test


def until_logged(log: Path, lines: list[str]) -> None:
    """Until ``log`` holds each of ``lines``: supervisord writes them when a program is RUNNING."""
    deadline = time.monotonic() + STARTS_WITHIN_S
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        if all(line in text for line in lines):
            return
        assert time.monotonic() < deadline, text[-2000:]
        time.sleep(0.1)  # another process's progress, not a timer under test


def test_the_example_names_its_placeholders_and_runs_both_programs():
    text = CONF.read_text()
    assert set(PLACEHOLDER.findall(text)) == {
        "@SITE_DIR@",
        "@VENV_DIR@",
        "@SETTINGS_MODULE@",
        "@WSGI_APPLICATION@",
        "@STATE_DIR@",
        "@SUPERVISOR_DIR@",
    }
    assert all(f";   {placeholder} " in text for placeholder in PLACEHOLDER.findall(text)), "each explained"
    assert [line for line in text.splitlines() if line.startswith("[program:")] == [
        f"[program:{name}]" for name in PROGRAMS
    ]


def supervisor_conf(site: NewSite, tmp_path: Path, port: int) -> Path:
    """The example for ``site`` in this virtual environment, gunicorn on ``port``."""
    supervisor_dir = tmp_path / "supervisor"
    supervisor_dir.mkdir()
    text = filled(
        CONF.read_text(),
        {
            "@SITE_DIR@": str(site.directory),
            "@VENV_DIR@": str(Path(sys.executable).parent.parent),
            "@SETTINGS_MODULE@": site.settings_module,
            "@WSGI_APPLICATION@": site.wsgi_application,
            "@STATE_DIR@": str(tmp_path / "state"),
            "@SUPERVISOR_DIR@": str(supervisor_dir),
        },
    )
    assert text.count(GUNICORN_BIND) == 1
    conf = tmp_path / "supervisord.conf"
    conf.write_text(text.replace(GUNICORN_BIND, f"{HOST}:{port}"))
    return conf


def test_supervisord_runs_the_sites_web_workers_and_poller(tmp_path: Path):
    site = new_site(tmp_path / "site")
    port = free_port()
    conf = supervisor_conf(site, tmp_path, port)
    supervisor_dir = tmp_path / "supervisor"
    bin_dir = Path(sys.executable).parent
    ctl = [str(bin_dir / "supervisorctl"), "-c", str(conf)]
    with FakeGitHub() as github:
        github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        env = site.env | {
            "CRAFT_APPS_RELEASE_GITHUB_API_URL": github.url,
            "CRAFT_APPS_RELEASE_APPS": f"{PHOTOCRAFT.key}={PHOTOCRAFT.name}={PHOTOCRAFT.repo}",
        }
        supervisord = subprocess.Popen(
            [str(bin_dir / "supervisord"), "-c", str(conf)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            url = f"http://{HOST}:{port}"
            web_log = supervisor_dir / "web.log"
            wait_until_served(f"{url}/v1/craft_apps/release_info", supervisord, web_log, STARTS_WITHIN_S)
            assert status_of(f"{url}/static/admin/css/base.css") == 200, "collected, served by WhiteNoise"
            # The web workers read the lease the poller holds in the state directory they share.
            until_status(f"{url}/v1/craft_apps/health?rules=poller", 200, supervisor_dir / "poller.log")
            assert "this poller is active" in (supervisor_dir / "poller.log").read_text()
            # A program is RUNNING once it has stayed up for its startsecs: supervisord logs when.
            running_lines = [f"success: {name} entered RUNNING state" for name in PROGRAMS]
            until_logged(supervisor_dir / "supervisord.log", running_lines)
            status = subprocess.run([*ctl, "status"], env=env, capture_output=True, text=True, timeout=20)
            running = [line.split()[:2] for line in status.stdout.splitlines()]
            assert sorted(running) == sorted([name, "RUNNING"] for name in PROGRAMS), status.stdout
            stopped = subprocess.run([*ctl, "stop", "all"], env=env, capture_output=True, text=True)
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            log = (supervisor_dir / "supervisord.log").read_text()
            assert all(f"stopped: {name} (exit status 0)" in log for name in PROGRAMS), log
        finally:
            subprocess.run([*ctl, "shutdown"], env=env, capture_output=True, timeout=60)
            supervisord.wait(60)
