"""Fixtures for the state file and lease tests: real, file-backed SQLite in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from craft_apps.domain import (
    AppState,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
)
from craft_apps.lease import Lease
from craft_apps.state_store import StateStore
from craft_apps.testing.clock import START_MS, FakeClock


def make_release(tag: str = "v1.2.0", notes: str = "Faster exports.") -> Release:
    version = tag.removeprefix("v")
    return Release(
        tag=tag,
        version=version,
        name=f"PhotoCraft {version}",
        published_at=datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC),
        html_url=f"https://github.com/storytold/photocraft/releases/tag/{tag}",
        prerelease=False,
        notes_markdown=notes,
        assets=(
            ReleaseAsset(
                name=f"photocraft-{version}-windows-x64.msi",
                size_bytes=73_400_320,
                download_url=f"https://github.com/storytold/photocraft/releases/download/{tag}/x.msi",
                sha256="ab" * 32,
                platform=AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI),
            ),
        ),
    )


def fetched(at_ms: int = START_MS, tag: str = "v1.2.0", etag: str | None = '"etag-1"') -> AppState:
    return AppState(latest_release=make_release(tag), fetched_ms=at_ms, etag=etag)


@pytest.fixture
def store(state_dir: Path) -> Iterator[StateStore]:
    store = StateStore(state_dir, busy_timeout_s=0.05)
    yield store
    store.close()


@pytest.fixture
def writer(store: StateStore, fake_clock: FakeClock) -> Lease:
    """A lease held on ``store``: its fence is what writes carry."""
    lease = Lease(store, holder="host-a:1:aaaa", clock=fake_clock)
    assert lease.try_acquire()
    return lease


@pytest.fixture
def fence(writer: Lease) -> int:
    assert writer.fence is not None
    return writer.fence
