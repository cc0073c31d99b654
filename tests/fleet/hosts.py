"""Hosts of a fleet for the tests: ``Host``, one in the test process (its own state directory,
lease, GitHub client and Redis client); ``poller_env``, ``start_once`` and ``finish``, a
``poll_craft_releases --once`` process of the demo site and its clean end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from craft_apps.conf import DEFAULT_APPS
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppSpec
from craft_apps.kernel.source import Source
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import TWO_APPS, S

ROOT = Path(__file__).resolve().parents[2]


class Host:
    """One host of the fleet: its own state directory, lease, GitHub client and Redis client."""

    def __init__(
        self,
        name: str,
        root: Path,
        clock: FakeClock,
        github: FakeGitHub,
        client: redis.Redis | None,
        apps: tuple[AppSpec, ...] = TWO_APPS,
        source: Source | None = None,
        interval_s: int = 1800,
    ) -> None:
        self.name = name
        self.store = StateStore(root / name)
        self.store.open_for_writing()
        lease = Lease(self.store, holder=name, clock=clock)
        assert lease.try_acquire() and lease.fence is not None
        self.shared = None if client is None else SharedStore(client, hostname=name)
        self.client = GitHubClient(api_url=github.url, web_url="https://github.com", token=None, clock=clock)
        self.poller = Poller(
            config=PollConfig(apps, interval_ms=interval_s * S, max_backoff_ms=14_400 * S),
            github=source or self.client,
            host=self.store,
            fence=lease.fence,
            clock=clock,
            shared=self.shared,
        )
        self.poller.load_host_state()

    def served_tags(self) -> dict[str, str | None]:
        apps = self.store.read().apps
        return {key: (s.latest_release.tag if s.latest_release else None) for key, s in apps.items()}


def poller_env(
    github: FakeGitHub, redis_url: str | None, apps: tuple[AppSpec, ...] = DEFAULT_APPS
) -> dict[str, str]:
    """The environment of a ``poll_craft_releases`` process of the demo site."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url)
    if apps != DEFAULT_APPS:
        env["CRAFT_APPS_RELEASE_APPS"] = ",".join(f"{a.key}={a.name}={a.repo}" for a in apps)
    if redis_url:
        env["CRAFT_APPS_REDIS_URL"] = redis_url + "?client_name=craft_apps_poller"
    return env


def start_once(env: dict[str, str], state_dir: Path, index: int) -> subprocess.Popen[bytes]:
    """A ``--once`` poller process with its own state directory and GitHub token (every host
    has its own GitHub quota, as hosts with their own IPs do)."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "poll_craft_releases", "--once"],
        cwd=ROOT,
        env={
            **env,
            "CRAFT_APPS_STATE_DIR": str(state_dir),
            "CRAFT_APPS_RELEASE_GITHUB_TOKEN": f"token-{index}",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(process: subprocess.Popen[bytes]) -> None:
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr.decode()
