"""Fixtures for the GitHub stand-in: a running server on a free port with a hand-set clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from craft_apps.testing.fake_github import FakeGitHub
from tests.standin.support import ManualTime


@pytest.fixture
def epoch() -> ManualTime:
    return ManualTime()


@pytest.fixture
def github(epoch: ManualTime) -> Iterator[FakeGitHub]:
    with FakeGitHub(now=epoch) as stand_in:
        yield stand_in


@pytest.fixture
def demo_github(github: FakeGitHub) -> FakeGitHub:
    return github.load_demo()


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session
