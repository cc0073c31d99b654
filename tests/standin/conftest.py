"""Fixtures for the GitHub stand-in: a running server on a free port with a hand-set clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from craft_apps.testing.fake_github import FakeGitHub

START_EPOCH_S = 1_790_000_000.25


class ManualTime:
    """The stand-in's ``now``: epoch seconds that only move when a test says so."""

    def __init__(self, start: float = START_EPOCH_S) -> None:
        self.value = start

    def __call__(self) -> float:
        return self.value

    def advance(self, seconds: float) -> None:
        self.value += seconds


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


def latest_url(stand_in: FakeGitHub, repo: str) -> str:
    return f"{stand_in.url}/repos/{repo}/releases/latest"
