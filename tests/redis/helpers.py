"""Shared test data: fixed instants and a release."""

from __future__ import annotations

from datetime import UTC, datetime

from craft_apps.domain import (
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
)
from craft_apps.timefmt import datetime_to_ms

BASE_MS = datetime_to_ms(datetime(2026, 10, 10, 12, 0, tzinfo=UTC))


def t(minute: float) -> int:
    """``minute`` minutes after 2026-10-10T12:00Z, in Unix ms."""
    return BASE_MS + round(minute * 60_000)


def release(version: str = "0.5.0") -> Release:
    return Release(
        tag=f"v{version}",
        version=version,
        name=f"PhotoCraft v{version}",
        published_at=datetime(2026, 10, 10, 11, 0, tzinfo=UTC),
        html_url=f"https://github.com/storytold/photocraft/releases/tag/v{version}",
        prerelease=False,
        notes_markdown="Notes ✨",
        assets=(
            ReleaseAsset(
                name=f"PhotoCraft_{version}_x64.msi",
                size_bytes=1234,
                download_url=f"https://github.com/storytold/photocraft/releases/download/v{version}/a.msi",
                sha256="ab" * 32,
                platform=AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI),
            ),
        ),
    )
