"""``bash .ci/demo`` as the README runs it, in this test's environment (``DEMO_VENV``): gunicorn
serves the endpoint and the offline docs after one poller round, with one line saying what runs
where, the database line once, no migration or development-server warning; ``DEMO_REAL_GITHUB=1``
polls the GitHub it is given (here a stand-in of the test's own) with the token, never shown.
Its set-up installs no test tool. The landing page links every feature, and the quickstart's
Tauri update answers 200 with a bundle whose signature its commands verify."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.docs_pages import check_offline
from tests.polling.processes import APPS
from tests.support import ONE_AT_A_TIME, apps_setting, free_port
from tests.support.demo_site import FEATURES, LIGHTCRAFT

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "ghp_demo-token-never-shown"
DEMO_APPS = (*APPS, LIGHTCRAFT)  # LightCraft: the demo's Tauri app
QUICKSTART = (ROOT / "docs" / "quickstart.md").read_text()

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]


@dataclass
class Demo:
    process: subprocess.Popen[bytes]
    log: Path
    site: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def fetch(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.site + path, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def wait_until_serving(self) -> None:
        deadline = time.monotonic() + 60
        while "Demo: " not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.05)


def demo_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_", "DEMO_"))}
    env.update(
        DEMO_VENV=sys.prefix,
        DEMO_PORT=str(free_port()),
        DEMO_GITHUB_PORT=str(free_port()),
        CRAFT_APPS_STATE_DIR=str(tmp_path / "state"),
        DJANGO_DB_NAME=str(tmp_path / "demo.sqlite3"),
        CRAFT_APPS_RELEASE_APPS=",".join(f"{a.key}={a.name}={a.repo}" for a in APPS),
    )
    return env | extra


@pytest.fixture
def start_demo(tmp_path: Path) -> Iterator[object]:
    started: list[Demo] = []

    def start(**extra: str) -> Demo:
        env = demo_env(tmp_path, **extra)
        port = env["DEMO_PORT"]
        log = tmp_path / f"demo-{len(started)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", ".ci/demo"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Ctrl-C as a terminal sends it: a suite started in the background (``cmd &``
                # without job control) ignores SIGINT, and bash can't trap a signal ignored on entry.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        demo = Demo(process, log, f"http://127.0.0.1:{port}")
        started.append(demo)
        demo.wait_until_serving()
        return demo

    yield start
    for demo in started:
        if demo.process.poll() is None:
            demo.process.send_signal(signal.SIGINT)
            demo.process.wait(20)


def check_the_quickstarts_tauri_update(demo: Demo, directory: Path) -> None:
    """The quickstart's Tauri URL answers 200, and its commands verify the bundle named."""
    status, body = demo.fetch(FEATURES["Tauri updater"])
    assert status == 200, body
    answer = json.loads(body)
    github = answer["url"].split("/storytold/", 1)[0]
    assert answer["version"] == "2.0.0"
    assert answer["url"].replace(github, "http://127.0.0.1:8765") in QUICKSTART, "the URL the page shows"
    block = QUICKSTART.split("## A Tauri update", 1)[1].split("```sh\n")[2].split("```", 1)[0]
    assert "minisign -V" in block
    checked = subprocess.run(
        ["sh", "-ec", block.replace("http://127.0.0.1:8765", github)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Signature and comment signature verified" in checked.stdout
    signature = (directory / "LightCraft_2.0.0_amd64.AppImage.minisig").read_bytes()
    assert base64.b64decode(answer["signature"]) == signature, "the answer's signature is the .sig"


def test_the_demo_serves_the_endpoint_and_offline_docs_with_gunicorn(start_demo, tmp_path):
    demo = start_demo(CRAFT_APPS_RELEASE_APPS=apps_setting(DEMO_APPS))
    status, body = demo.fetch("/v1/craft_apps/release_info")
    apps = json.loads(body)["release_info"]["apps"]
    assert status == 200 and set(apps) == {app.key for app in DEMO_APPS}
    assert all(app["latest_release"]["version"] for app in apps.values()), "fetched from the stand-in"
    check_offline(demo.fetch, demo.site, "/api/docs/")
    check_offline(demo.fetch, demo.site, "/api/redoc/")
    out = demo.output()
    [line] = [line for line in out.splitlines() if line.startswith("Demo: ")]
    assert "served by gunicorn" in line and "GitHub stand-in" in line and "poll_craft_releases" in line
    assert out.count("Database: ") == 1, out
    status, landing = demo.fetch("/")
    assert status == 200 and f"{demo.site}/ " in line
    for link in ("/api/docs/", "/api/redoc/", "/admin/", *FEATURES.values()):
        assert f'href="{link}"'.encode() in landing
    check_offline(demo.fetch, demo.site, "/")  # every link answers 200: the Tauri update too
    check_the_quickstarts_tauri_update(demo, tmp_path)

    # The status command the line ends with, run as printed, reads the demo's state.
    command = line.split("shown by: ", 1)[1].split(" - Ctrl-C", 1)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env["CRAFT_APPS_RELEASE_APPS"] = apps_setting(DEMO_APPS)
    shown = subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "not fetched yet" not in shown.stdout and all(app.key in shown.stdout for app in DEMO_APPS), (
        shown.stdout
    )
    assert "unapplied migration" not in out and "development server" not in out, out

    children = subprocess.run(["pgrep", "-P", str(demo.process.pid)], capture_output=True, text=True)
    pids = [int(pid) for pid in children.stdout.split()]
    assert len(pids) == 3, "the stand-in, the poller and gunicorn"
    demo.process.send_signal(signal.SIGINT)
    assert demo.process.wait(20) in (0, 130)
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_demo_real_github_polls_the_given_github_with_the_token_never_shown(start_demo):
    with FakeGitHub() as github:
        github_url = github.url
        for app in APPS:
            github.publish(app.repo, demo_release(app, "0.6.0", datetime(2026, 11, 1, tzinfo=UTC)))
        demo = start_demo(
            DEMO_REAL_GITHUB="1",
            CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
            CRAFT_APPS_RELEASE_GITHUB_TOKEN=TOKEN,
        )
        status, body = demo.fetch("/v1/craft_apps/release_info")
        apps = json.loads(body)["release_info"]["apps"]
        assert status == 200 and {app["latest_release"]["version"] for app in apps.values()} == {"0.6.0"}
        assert all(r.header("Authorization") == f"Bearer {TOKEN}" for r in github.requests)
    out = demo.output()
    [line] = [line for line in out.splitlines() if line.startswith("Demo: ")]
    assert f"GitHub at {github_url} with a token" in line
    assert "stand-in" not in line and "fake GitHub serving" not in out
    assert TOKEN not in out


@pytest.mark.parametrize("variable", ["DEMO_PORT", "DEMO_GITHUB_PORT"])
def test_a_busy_port_stops_the_demo_before_any_success_line_naming_its_variable(tmp_path, variable):
    env = demo_env(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env[variable] = str(port)
        result = subprocess.run(
            ["bash", ".ci/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    assert result.returncode != 0
    assert f"Port {port} is in use" in result.stderr and f"set {variable} to a free port" in result.stderr
    assert "Demo: " not in result.stdout + result.stderr
    assert not (tmp_path / "demo.sqlite3").exists(), "nothing started"


def test_the_demo_set_up_takes_any_supported_python_and_no_system_tool():
    setup = (ROOT / ".ci" / "setup").read_text()
    demo_branch = (
        setup.split('if [ "$profile" = dev ]; then', 1)[1].split("\nelse\n", 1)[1].split("\nfi\n", 1)[0]
    )
    assert "3.11" not in demo_branch and "(3, 10) <= sys.version_info[:2] <= (3, 13)" in demo_branch
    for tool in ("redis-server", "systemd-analyze"):
        [check] = [
            line for line in setup.splitlines() if f"command -v {tool}" in line and line.startswith("if")
        ]
        assert '[ "$profile" = dev ] &&' in check


def test_the_demo_environment_has_no_test_tools():
    def requirements(path: Path) -> set[str]:
        names: set[str] = set()
        for line in path.read_text().splitlines():
            if line.startswith("-r "):
                names |= requirements(path.parent / line.split()[1])
            elif match := re.match(r"([A-Za-z0-9_.-]+)==", line):
                names.add(match.group(1).lower())
        return names

    setup = (ROOT / ".ci" / "setup").read_text()
    [demo_line] = [line for line in setup.splitlines() if line.strip().startswith("demo)")]
    files = re.findall(r"-r ([^\s)]+)", demo_line)
    assert files == ["requirements/demo.txt", "requirements/django-5.2.txt"]
    demo = set().union(*(requirements(ROOT / file) for file in files))
    assert {"django", "gunicorn", "whitenoise", "drf-spectacular-sidecar"} <= demo
    tools = {
        "pytest",
        "pytest-django",
        "pytest-xdist",
        "responses",
        "ruff",
        "mypy",
        "nox",
        "supervisor",
        "build",
    }
    assert not demo & tools
    assert tools <= requirements(ROOT / "requirements" / "test.txt") | requirements(
        ROOT / "requirements" / "lint.txt"
    )
