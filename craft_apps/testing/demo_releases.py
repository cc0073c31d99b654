"""A deterministic set of realistic GitHub releases for the 13 Craft Apps.

``demo_release(...)`` returns one release exactly as ``GET /repos/{repo}/releases/latest``
answers it, with the fields the poller must ignore; ``SHA256SUMS.txt`` really lists the other
assets' digests, and identical arguments give an identical release. ``demo_releases`` holds them
all; LightCraft (``TAURI_APP``) is a tauri-action release whose file bytes ``demo_files`` gives,
each ``.sig`` signed with the demo's minisign key, so ``minisign -V`` accepts the bundle.
"""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta
from typing import Any

from craft_apps.conf import DEFAULT_APPS, DEFAULT_GITHUB_API_URL, DEFAULT_GITHUB_WEB_URL
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.tauri.fake_release import (
    INSTALLERS,
    SIGNED,
    SecretKey,
    TauriNames,
    TauriRelease,
    tauri_action_release,
)

# One (version, publication instant) per app of DEFAULT_APPS, in its order.
_DEMO_VERSIONS: tuple[tuple[str, datetime], ...] = (
    ("0.5.0", datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)),
    ("1.3.2", datetime(2026, 9, 30, 9, 12, 4, tzinfo=UTC)),
    ("0.9.1", datetime(2026, 10, 1, 17, 40, 33, tzinfo=UTC)),
    ("2.0.0", datetime(2026, 8, 19, 11, 5, 0, tzinfo=UTC)),
    ("1.1.0", datetime(2026, 9, 2, 8, 30, 12, tzinfo=UTC)),
    ("0.4.7", datetime(2026, 10, 5, 20, 1, 45, tzinfo=UTC)),
    ("1.0.3", datetime(2026, 9, 24, 13, 18, 9, tzinfo=UTC)),
    ("3.2.1", datetime(2026, 7, 28, 15, 44, 27, tzinfo=UTC)),
    ("2.4.0", datetime(2026, 9, 14, 10, 0, 0, tzinfo=UTC)),
    ("1.8.5", datetime(2026, 10, 3, 7, 25, 51, tzinfo=UTC)),
    ("0.7.0", datetime(2026, 9, 9, 16, 36, 18, tzinfo=UTC)),
    ("1.2.0", datetime(2026, 9, 19, 12, 12, 12, tzinfo=UTC)),
    ("0.6.3", datetime(2026, 10, 7, 18, 9, 2, tzinfo=UTC)),
)

TAURI_APP = "lightcraft"  # the key of the demo app released with tauri-action

# The demo's key pair, made once with ``minisign -G -W``. This secret key is published on
# purpose and protects nothing: it signs only the demo's made-up bundles. Never sign a real
# app with it; a real app's key stays in its CI secrets (TAURI_SIGNING_PRIVATE_KEY).
DEMO_SECRET_KEY = (
    "untrusted comment: minisign encrypted secret key\n"
    "RWQAAEIyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAbBTNbOj4pLlGvXucHbNVQ+6F"
    "WpKI70qLvmO1KEhwHetEUXPBarV/55vI0VWxQUS0N8fFFQ3hXPNXg0DS5iEh/DTlAhWgacy9AAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAA=\n"
)
# What ``minisign -V -P`` takes; its ``.pub`` file is ``untrusted comment: minisign public key
# B9A4F8E86CCD146C`` and this line.
DEMO_PUBLIC_KEY = "RWRsFM1s6PikuZvI0VWxQUS0N8fFFQ3hXPNXg0DS5iEh/DTlAhWgacy9"

_MIB = 1024 * 1024

# (file name pattern, content type, smallest size, largest size); {app} and {version} filled in.
_ASSET_KINDS: tuple[tuple[str, str, int, int], ...] = (
    ("{app}-{version}-windows-x64.msi", "application/x-msi", 90 * _MIB, 160 * _MIB),
    ("{app}-{version}-windows-arm64.msi", "application/x-msi", 85 * _MIB, 150 * _MIB),
    ("{app}-{version}-windows-x64-portable.zip", "application/zip", 95 * _MIB, 170 * _MIB),
    ("{app}-{version}-macos-universal.dmg", "application/x-apple-diskimage", 150 * _MIB, 260 * _MIB),
    ("{app}-cli-{version}-macos-universal.zip", "application/zip", 8 * _MIB, 25 * _MIB),
    ("{app}-{version}-linux-x86_64.AppImage", "application/octet-stream", 110 * _MIB, 190 * _MIB),
    ("{app}-{version}-linux-x86_64.AppImage.zsync", "application/octet-stream", 200_000, 600_000),
    ("{app}-{version}-linux-x86_64.deb", "application/vnd.debian.binary-package", 70 * _MIB, 130 * _MIB),
    ("{app}-{version}-linux-x86_64.rpm", "application/x-rpm", 72 * _MIB, 135 * _MIB),
    ("{app}-{version}-linux-x86_64.flatpak", "application/octet-stream", 80 * _MIB, 140 * _MIB),
    ("{app}-{version}-freebsd-x86_64.tar.gz", "application/gzip", 60 * _MIB, 120 * _MIB),
    ("{app}-web-{version}.zip", "application/zip", 15 * _MIB, 40 * _MIB),
)

_RELEASE_BOT = {
    "login": "craft-release-bot[bot]",
    "id": 191_203_774,
    "node_id": "BOT_kgDOC2WT_g",
    "avatar_url": "https://avatars.githubusercontent.com/in/1032177?v=4",
    "gravatar_id": "",
    "type": "Bot",
    "user_view_type": "public",
    "site_admin": False,
}

_HIGHLIGHTS = (
    "Layers panel opens twice as fast on large documents",
    "New export presets for print and web",
    "Colour management follows the system profile on every platform",
    "Brush engine rewritten for lower latency with pen tablets",
    "Autosave now keeps the last ten versions of each document",
    "Dark theme refreshed with higher-contrast icons",
    "Plugins can register their own keyboard shortcuts",
    "Command palette searches menus, settings and recent files",
    "Native Apple Silicon and Windows on Arm builds",
    "Cloud libraries sync in the background without blocking the canvas",
)
_FIXES = (
    "Fixed a crash when closing a document while an export was running",
    "Fixed the zoom level resetting after undo",
    "Fixed fonts with long family names being truncated in the picker",
    "Fixed a memory leak when scrolling through very large folders",
    "Fixed keyboard focus getting lost after dismissing a dialog",
    "Fixed the installer asking for a restart on Windows when none was needed",
    "Fixed drag and drop from the file manager on Wayland",
    "Fixed wrong thumbnails for files renamed outside the app",
    "Fixed the update check ignoring the proxy settings",
    "Fixed rounding errors when resizing by percentage",
    "Fixed a hang when a network drive disappeared mid-save",
    "Fixed tooltips appearing on the wrong monitor",
)
_INTERNALS = (
    "Updated the bundled runtime to the latest long-term-support release",
    "Crash reports now include the GPU driver version",
    "Start-up reads preferences lazily, saving about 80 ms on a cold start",
    "The document format writes a schema version so older releases refuse newer files cleanly",
    "Translations updated for German, Japanese, Brazilian Portuguese and Korean",
    "Build reproducibility: every package is built twice in CI and compared byte for byte",
    "Telemetry stays off by default and is documented in PRIVACY.md",
)
_KNOWN_ISSUES = (
    "The FreeBSD build does not yet support hardware acceleration.",
    "On some Linux desktops the AppImage needs `libfuse2` installed.",
    "The web build stores documents in the browser; export them before clearing site data.",
)


def demo_release(
    app: AppSpec,
    version: str,
    published_at: datetime,
    web_url: str = DEFAULT_GITHUB_WEB_URL,
    api_url: str = DEFAULT_GITHUB_API_URL,
) -> dict[str, Any]:
    """GitHub's release JSON for ``app`` at ``version`` (tag ``v<version>``)."""
    web_url = web_url.rstrip("/")
    api_url = api_url.rstrip("/")
    repo = app.repo
    tag = f"v{version}"
    release_id = _number(repo, version, "release", low=150_000_000, high=260_000_000)
    created_at = published_at - timedelta(minutes=_number(repo, version, "build", low=12, high=48))
    api_release = f"{api_url}/repos/{repo}/releases/{release_id}"
    assets = _binary_assets(app, version, created_at, web_url, api_url)
    assets.append(_checksums_asset(app, version, created_at, web_url, api_url, assets))
    return {
        "url": api_release,
        "assets_url": f"{api_release}/assets",
        "upload_url": f"https://uploads.github.com/repos/{repo}/releases/{release_id}/assets{{?name,label}}",
        "html_url": f"{web_url}/{repo}/releases/tag/{tag}",
        "id": release_id,
        "author": _RELEASE_BOT,
        "node_id": _node_id("RE_kwDO", repo, version),
        "tag_name": tag,
        "target_commitish": "main",
        "name": f"{app.name} {tag}",
        "draft": False,
        "immutable": False,
        "prerelease": "-" in version,
        "created_at": _timestamp(created_at),
        "updated_at": _timestamp(published_at),
        "published_at": _timestamp(published_at),
        "assets": assets,
        "tarball_url": f"{api_url}/repos/{repo}/tarball/{tag}",
        "zipball_url": f"{api_url}/repos/{repo}/zipball/{tag}",
        "body": release_notes(app, version, web_url),
        "mentions_count": _number(repo, version, "mentions", low=0, high=6),
    }


def demo_releases(
    web_url: str = DEFAULT_GITHUB_WEB_URL, api_url: str = DEFAULT_GITHUB_API_URL
) -> dict[str, dict[str, Any]]:
    """One release per app of ``DEFAULT_APPS``, keyed by repository (``org/project``)."""
    releases = {
        app.repo: demo_release(app, version, published_at, web_url=web_url, api_url=api_url)
        for app, (version, published_at) in zip(DEFAULT_APPS, _DEMO_VERSIONS, strict=True)
    }
    app, version, published_at = _tauri_app()
    releases[app.repo] = demo_tauri_release(app, version, published_at, web_url, api_url).release
    return releases


def demo_files(
    web_url: str = DEFAULT_GITHUB_WEB_URL, api_url: str = DEFAULT_GITHUB_API_URL
) -> dict[str, dict[str, bytes]]:
    """The bytes of the files the demo releases serve, by repository and file name."""
    app, version, published_at = _tauri_app()
    return {app.repo: demo_tauri_release(app, version, published_at, web_url, api_url).files}


def _tauri_app() -> tuple[AppSpec, str, datetime]:
    """The demo's Tauri app, its version and when it was published."""
    [(app, (version, published_at))] = [
        pair for pair in zip(DEFAULT_APPS, _DEMO_VERSIONS, strict=True) if pair[0].key == TAURI_APP
    ]
    return app, version, published_at


def release_notes(app: AppSpec, version: str, web_url: str = DEFAULT_GITHUB_WEB_URL) -> str:
    """A few KiB of Markdown release notes, the same for the same app and version."""
    web_url = web_url.rstrip("/")
    rng = random.Random(f"{app.repo}@{version}")
    highlights = rng.sample(_HIGHLIGHTS, 5)
    fixes = rng.sample(_FIXES, 9)
    lines = [
        f"# {app.name} {version}",
        "",
        f"This release of **{app.name}** brings the improvements below. Thanks to everyone who "
        "reported problems and tested the preview builds!",
        "",
        "## Highlights",
        "",
        *(_linked(item, web_url, app.repo, rng.randint(200, 4000)) for item in highlights),
        "",
        "## Fixes",
        "",
        *(f"- {item} (#{rng.randint(200, 4000)})." for item in fixes),
        "",
        "## Under the hood",
        "",
        *(f"- {item}." for item in rng.sample(_INTERNALS, 4)),
        "",
        "## Known issues",
        "",
        *(f"- {item}" for item in _KNOWN_ISSUES),
        "",
        "## Downloads",
        "",
        "| Platform | Package |",
        "|---|---|",
        f"| Windows (x64, Arm64) | `{app.key}-{version}-windows-x64.msi`, "
        f"`{app.key}-{version}-windows-arm64.msi`, portable zip |",
        f"| macOS (Intel and Apple Silicon) | `{app.key}-{version}-macos-universal.dmg` |",
        "| Linux | AppImage, .deb, .rpm, Flatpak |",
        "| FreeBSD | tar.gz |",
        f"| Browser | `{app.key}-web-{version}.zip` |",
        "",
        "Verify a download with `sha256sum --check SHA256SUMS.txt --ignore-missing`.",
        "",
        f"**Full changelog**: {web_url}/{app.repo}/commits/v{version}",
        "",
    ]
    return "\n".join(lines)


def _linked(item: str, web_url: str, repo: str, number: int) -> str:
    return f"- {item}. ([#{number}]({web_url}/{repo}/pull/{number}))"


def _binary_assets(
    app: AppSpec, version: str, created_at: datetime, web_url: str, api_url: str
) -> list[dict[str, Any]]:
    assets = []
    for pattern, content_type, smallest, largest in _ASSET_KINDS:
        name = pattern.format(app=app.key, version=version)
        digest = hashlib.sha256(f"{app.repo}/{version}/{name}".encode()).hexdigest()
        size = _number(app.repo, version, name, low=smallest, high=largest)
        assets.append(
            _asset(app.repo, version, name, content_type, size, digest, created_at, web_url, api_url)
        )
    return assets


def _checksums_asset(
    app: AppSpec,
    version: str,
    created_at: datetime,
    web_url: str,
    api_url: str,
    assets: list[dict[str, Any]],
) -> dict[str, Any]:
    content = "".join(f"{a['digest'].removeprefix('sha256:')}  {a['name']}\n" for a in assets).encode()
    digest = hashlib.sha256(content).hexdigest()
    return _asset(
        app.repo, version, "SHA256SUMS.txt", "text/plain", len(content), digest, created_at, web_url, api_url
    )


def _asset(
    repo: str,
    version: str,
    name: str,
    content_type: str,
    size: int,
    sha256_hex: str,
    created_at: datetime,
    web_url: str,
    api_url: str,
) -> dict[str, Any]:
    asset_id = _number(repo, version, name, "id", low=280_000_000, high=320_000_000)
    uploaded_at = created_at + timedelta(seconds=_number(repo, version, name, "upload", low=20, high=900))
    return {
        "url": f"{api_url}/repos/{repo}/releases/assets/{asset_id}",
        "id": asset_id,
        "node_id": _node_id("RA_kwDO", repo, version, name),
        "name": name,
        "label": "",
        "uploader": _RELEASE_BOT,
        "content_type": content_type,
        "state": "uploaded",
        "size": size,
        "digest": f"sha256:{sha256_hex}",
        "download_count": _number(repo, version, name, "downloads", low=0, high=25_000),
        "created_at": _timestamp(uploaded_at),
        "updated_at": _timestamp(uploaded_at),
        "browser_download_url": f"{web_url}/{repo}/releases/download/v{version}/{name}",
    }


def _number(*parts: str, low: int, high: int) -> int:
    """A number in [low, high] that depends only on ``parts``."""
    seed = int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")
    return low + seed % (high - low + 1)


def _node_id(prefix: str, *parts: str) -> str:
    return prefix + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16].upper()


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def demo_tauri_release(
    app: AppSpec,
    version: str,
    published_at: datetime,
    web_url: str = DEFAULT_GITHUB_WEB_URL,
    api_url: str = DEFAULT_GITHUB_API_URL,
) -> TauriRelease:
    """``app``'s release at ``version``, its installers' bytes and its signed ``.sig`` files."""
    names = TauriNames(app.name, version)
    contents = {names.of(pattern): bundle_bytes(app, version, names.of(pattern)) for pattern, _ in INSTALLERS}
    key = SecretKey.from_text(DEMO_SECRET_KEY)
    signed_at = int((published_at - timedelta(minutes=3)).timestamp())
    signatures = {
        names.of(pattern): key.tauri_signature(contents[names.of(pattern)], names.of(pattern), signed_at)
        for pattern in SIGNED
    }
    return tauri_action_release(
        app.repo,
        app.name,
        version,
        published_at,
        tag_prefix=f"{app.key}-v",
        signatures=signatures,
        contents=contents,
        web_url=web_url,
        api_url=api_url,
    )


def bundle_bytes(app: AppSpec, version: str, name: str) -> bytes:
    """The demo's stand-in for an installer: a few lines of text, the same every time."""
    line = f"{app.name} {version}: the demo's stand-in for {name}, signed with the demo key.\n"
    return line.encode() * 4
