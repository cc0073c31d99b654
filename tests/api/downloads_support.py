"""Releases built from file names (read by the real parser's naming rule) for the download tests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.github.parsing import parse_platform
from craft_apps.kernel.domain import Release, ReleaseAsset
from tests.support import SHA, apps_setting, release

FETCHED_MS = 1_791_000_000_000


def url_of(name: str, repo: str = "storytold/photocraft", version: str = "0.5.0") -> str:
    return f"https://github.com/{repo}/releases/download/v{version}/{name}"


def release_of(
    *suffixes: str, app: str = "photocraft", repo: str = "storytold/photocraft", version: str = "0.5.0"
) -> Release:
    """A release whose files are ``<app>-<version>-<suffix>`` (``cli:`` for the CLI naming)."""
    assets = []
    for index, suffix in enumerate(suffixes):
        if suffix.startswith("cli:"):
            name = f"{app}-cli-{version}-{suffix[4:]}"
        elif suffix.startswith("="):
            name = suffix[1:]
        else:
            name = f"{app}-{version}-{suffix}"
        assets.append(
            ReleaseAsset(
                name=name,
                size_bytes=1_000_000 * (index + 1),
                download_url=url_of(name, repo, version),
                sha256=SHA,
                platform=parse_platform(name),
            )
        )
    return replace(release(version, app=app, repo=repo), assets=tuple(assets))


EVERY_FILE = (
    "windows-x64.msi",
    "windows-arm64.msi",
    "windows-x64-portable.zip",
    "windows-x86-portable.zip",
    "macos-universal.dmg",
    "macos-arm64.dmg",
    "cli:macos-universal.zip",
    "linux-x86_64.AppImage",
    "linux-x86_64.AppImage.zsync",
    "linux-x86_64.deb",
    "linux-aarch64.deb",
    "linux-x86_64.rpm",
    "linux-x86_64.flatpak",
    "freebsd-x86_64.tar.gz",
    "=photocraft-web-0.5.0.zip",
    "=SHA256SUMS.txt",
)


@pytest.fixture
def download_site(state_dir: Path, settings, install_runtime) -> Path:
    """Two configured apps on a fresh state file; every request looks at the state file."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    install_runtime(recheck_s=0.0)
    return state_dir
