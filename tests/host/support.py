"""What the state file and lease tests build on: a release and the app state a poll leaves."""

from __future__ import annotations

from craft_apps.domain import AppState, Release
from craft_apps.testing.clock import START_MS
from tests.support import release


def make_release(tag: str = "v1.2.0", notes: str = "Faster exports.") -> Release:
    return release(tag.removeprefix("v"), notes=notes)


def fetched(at_ms: int = START_MS, tag: str = "v1.2.0", etag: str | None = '"etag-1"') -> AppState:
    return AppState(latest_release=make_release(tag), fetched_ms=at_ms, etag=etag)
