"""``poll_craft_releases`` as a real process for the tests: ``poller_environment`` (the demo
site's settings, a state directory, the GitHub stand-in), ``Poller`` (one process, its output
in a file) and ``wait_until`` (a condition, bounded by a deadline)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from craft_apps.testing.fake_github import FakeGitHub
from tests.support import TWO_APPS

ROOT = Path(__file__).resolve().parents[2]
APPS = TWO_APPS
TTL_S, RETRY_S = 3.0, 0.5


def poller_environment(github: FakeGitHub, state_dir: Path, **extra: str) -> dict[str, str]:
    """A poller's environment: the demo site's settings, this state directory, the stand-in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
        CRAFT_APPS_RELEASE_APPS=",".join(f"{a.key}={a.name}={a.repo}" for a in APPS),
        **extra,
    )
    return env


class Poller:
    """One `poll_craft_releases` process, its output collected in a file."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "poll_craft_releases", *args],
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 20) -> float:
        """Seconds until `text` appears in the output."""
        return wait_until(
            lambda: text in self.output(), timeout, lambda: f"{text!r} in {self.log.name}: {self.output()}"
        )

    def finish(self, timeout: float = 20) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._out.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.finish()


def wait_until(condition: Callable[[], bool], timeout: float, what: str | Callable[[], str]) -> float:
    """Seconds until ``condition()`` holds; ``what`` (or what it returns, at the failure) names it."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            named = what if isinstance(what, str) else what()
            raise AssertionError(f"timed out after {timeout} s waiting for {named}")
        time.sleep(0.02)
    return time.monotonic() - started
