"""What the GitHub stand-in's tests build on: a hand-set clock and the stand-in's URLs."""

from __future__ import annotations

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


def latest_url(stand_in: FakeGitHub, repo: str) -> str:
    return f"{stand_in.url}/repos/{repo}/releases/latest"
