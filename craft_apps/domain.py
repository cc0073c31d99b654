"""Plain typed objects that carry release data between the poller, the stores and the view.

They mirror the reference's ``release_info.rs`` types. Nothing here knows about HTTP, SQLite or
Redis: ``codec`` turns a release into JSON for storage, ``serializers`` at the HTTP edge.
Instants the poller keeps are Unix milliseconds (``int``); ``published_at`` comes from GitHub
as a timestamp and stays a ``datetime``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from craft_apps.compat import StrEnum


class CraftAppOs(StrEnum):
    WINDOWS = "windows"
    MACOS = "macos"
    LINUX = "linux"
    FREEBSD = "freebsd"
    WEB = "web"  # the browser build


class CraftAppArch(StrEnum):
    X64 = "x64"
    X86 = "x86"
    ARM64 = "arm64"
    UNIVERSAL = "universal"  # macOS universal binary


class CraftAppPackageType(StrEnum):
    MSI = "msi"
    PORTABLE_ZIP = "portable_zip"
    DMG = "dmg"
    CLI_ZIP = "cli_zip"
    APP_IMAGE = "app_image"
    APP_IMAGE_ZSYNC = "app_image_zsync"
    DEB = "deb"
    RPM = "rpm"
    FLATPAK = "flatpak"
    TAR_GZ = "tar_gz"
    WEB_ZIP = "web_zip"


@dataclass(frozen=True, slots=True)
class AssetPlatform:
    os: CraftAppOs
    arch: CraftAppArch | None  # None for builds that are not for one CPU (the web build)
    package_type: CraftAppPackageType


@dataclass(frozen=True, slots=True)
class ReleaseAsset:
    name: str
    size_bytes: int
    download_url: str
    sha256: str | None  # lowercase hex, when GitHub published a digest
    platform: AssetPlatform | None  # None when the name doesn't follow the naming scheme


@dataclass(frozen=True, slots=True)
class Release:
    tag: str
    version: str
    name: str
    published_at: datetime | None
    html_url: str
    prerelease: bool
    notes_markdown: str
    assets: tuple[ReleaseAsset, ...] = ()


@dataclass(frozen=True, slots=True)
class AppSpec:
    """One configured app: its key (lowercase machine name), display name and GitHub repo."""

    key: str
    name: str
    repo: str


@dataclass(slots=True)
class AppState:
    """What one host knows about one app.

    ``latest_release`` is None both before the first fetch and when the repository has no
    release; ``fetched_ms`` tells the two apart. ``failed_ms``/``failures`` only count while the
    failure is newer than the last fetch.
    """

    latest_release: Release | None = None
    fetched_ms: int | None = None
    etag: str | None = None
    failed_ms: int | None = None
    failures: int = 0

    def is_failing(self) -> bool:
        if self.failed_ms is None:
            return False
        return self.fetched_ms is None or self.failed_ms > self.fetched_ms


@dataclass(frozen=True, slots=True)
class Backoff:
    """No request to GitHub before ``until_ms``; ``trouble`` counts troubled rounds in a row."""

    until_ms: int | None = None
    trouble: int = 0

    def is_active(self, now_ms: int) -> bool:
        return self.until_ms is not None and self.until_ms > now_ms


@dataclass(frozen=True, slots=True)
class AppReleaseInfo:
    """One app as the endpoint lists it."""

    name: str
    repo: str
    latest_release: Release | None
    app_last_fetched: datetime | None


@dataclass(frozen=True, slots=True)
class ReleaseInfo:
    apps: dict[str, AppReleaseInfo] = field(default_factory=dict)  # sorted by key
    last_fetched: datetime | None = None
