"""``python -m craft_apps.testing.fake_github``: serves the demo set until SIGTERM or SIGINT."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Starts the stand-in on a port the OS picks; returns the process and its logged URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the command must not need a Django project
    process = subprocess.Popen(
        [sys.executable, "-m", "craft_apps.testing.fake_github", "--port", "0", *args],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], 15)
    if not ready:
        process.kill()
        pytest.fail("the stand-in logged nothing within 15 s")
    line = process.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert found, line
    return process, found[0]


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def stopped_within(process: subprocess.Popen[str], seconds: float) -> int:
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the stand-in did not exit within {seconds} s")


def test_serves_the_demo_set_and_exits_0_on_sigterm(processes):
    process, url = start()
    processes.append(process)

    response = requests.get(f"{url}/repos/storytold/photocraft/releases/latest", timeout=5)
    assert response.status_code == 200
    assert response.json()["tag_name"] == "v0.5.0"
    assert response.headers["x-ratelimit-limit"] == "60"

    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert stopped_within(process, 5) == 0
    assert time.monotonic() - started < 2


def test_empty_serves_404_and_exits_0_on_sigint(processes):
    process, url = start("--empty")
    processes.append(process)

    response = requests.get(f"{url}/repos/storytold/photocraft/releases/latest", timeout=5)
    assert response.status_code == 404

    process.send_signal(signal.SIGINT)
    assert stopped_within(process, 5) == 0


def test_web_url_points_the_release_links_at_itself_so_they_work_offline(processes):
    process, url = start("--web-url", "http://127.0.0.1:1")  # a placeholder: the port comes later
    processes.append(process)
    release = requests.get(f"{url}/repos/storytold/photocraft/releases/latest", timeout=5).json()
    assert release["html_url"] == "http://127.0.0.1:1/storytold/photocraft/releases/tag/v0.5.0"
    name = release["assets"][0]["name"]
    file = requests.get(f"{url}/storytold/photocraft/releases/download/v0.5.0/{name}", timeout=5)
    assert file.status_code == 200 and name in file.text
    process.send_signal(signal.SIGTERM)
    assert stopped_within(process, 5) == 0
