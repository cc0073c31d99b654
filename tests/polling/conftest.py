"""The polling tests' fixtures for real poller processes: the GitHub stand-in with the demo
releases, a poller's environment with a short lease, and ``pollers``, which starts them and
kills what is left at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from craft_apps.testing.fake_github import FakeGitHub
from tests.polling.processes import APPS, RETRY_S, TTL_S, Poller, poller_environment
from tests.support import stand_in


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with stand_in(APPS) as server:
        yield server


@pytest.fixture
def poller_env(github: FakeGitHub, state_dir: Path) -> dict[str, str]:
    return poller_environment(
        github, state_dir, CRAFT_APPS_LEASE_TTL_SECS=str(TTL_S), CRAFT_APPS_LEASE_RETRY_SECS=str(RETRY_S)
    )


@pytest.fixture
def pollers(poller_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Poller]]:
    started: list[Poller] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Poller:
        poller = Poller(env or poller_env, tmp_path / f"poller-{len(started)}.log", *args)
        started.append(poller)
        return poller

    yield start
    for poller in started:
        poller.kill()
