"""Builders shared by the endpoint, poller and command tests."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from craft_apps.compat import UTC
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
from craft_apps.testing.clock import FakeClock

SHA = "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1"


def release(
    version: str = "0.5.0",
    *,
    notes: str = "Notes",
    app: str = "photocraft",
    repo: str = "storytold/photocraft",
) -> Release:
    """A small release with one Windows installer and a checksum file."""
    base = f"https://github.com/{repo}/releases/download/v{version}/"

    def asset(name: str, platform: AssetPlatform | None, sha: str | None = SHA) -> ReleaseAsset:
        return ReleaseAsset(
            name=name, size_bytes=1234, download_url=base + name, sha256=sha, platform=platform
        )

    return Release(
        tag=f"v{version}",
        version=version,
        name=f"PhotoCraft v{version}",
        published_at=datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC),
        html_url=f"https://github.com/{repo}/releases/tag/v{version}",
        prerelease=False,
        notes_markdown=notes,
        assets=(
            asset(
                f"{app}-{version}-windows-x64.msi",
                AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI),
            ),
            asset("SHA256SUMS.txt", None, sha=None),
        ),
    )


def publish(state_dir: Path, apps: dict[str, AppState], clock: FakeClock | None = None) -> StateStore:
    """Writes ``apps`` to the host state file as a poller holding the lease would."""
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="test-writer", clock=clock or FakeClock())
    assert lease.try_acquire()
    assert lease.fence is not None
    for key, state in apps.items():
        assert store.put_app(key, state, fence=lease.fence)
    lease.release()
    return store
