"""One host polling in the test process for the tests, GitHub faked with ``responses``:
``Host`` (its state file, its lease and a poller, made again by ``restart``), the stand-in's
``API`` address, the ``url`` of an app's latest release there and its ``release_json``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, AppState
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from tests.support import TWO_APPS, S

API = "https://api.github.com"
APPS = TWO_APPS
PUBLISHED = datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)


def url(app: AppSpec) -> str:
    return f"{API}/repos/{app.repo}/releases/latest"


def release_json(app: AppSpec, version: str = "0.5.0") -> dict[str, Any]:
    return demo_release(app, version, PUBLISHED)


class Host:
    """A host: its state file, its lease and a poller; `restart()` makes a new poller."""

    def __init__(self, state_dir: Path, clock: FakeClock, apps=APPS, token: str | None = None):
        self.clock = clock
        self.apps = apps
        self.token = token
        self.store = StateStore(state_dir)
        self.store.open_for_writing()
        self.lease = Lease(self.store, holder="host-a", clock=clock)
        assert self.lease.try_acquire()
        self.poller = self.new_poller()

    def new_poller(self) -> Poller:
        assert self.lease.fence is not None
        github = GitHubClient(api_url=API, web_url="https://github.com", token=self.token, clock=self.clock)
        poller = Poller(
            config=PollConfig(self.apps, interval_ms=1800 * S, max_backoff_ms=14_400 * S),
            github=github,
            host=self.store,
            fence=self.lease.fence,
            clock=self.clock,
        )
        poller.load_host_state()
        return poller

    def restart(self) -> None:
        self.poller = self.new_poller()

    def saved(self, key: str) -> AppState:
        return self.store.read().apps[key]
