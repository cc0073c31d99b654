"""GitHub's "latest release" JSON read into a ``Release``, keeping only what is safe to serve.

Contract: ``parse_release`` returns a ``Release`` or raises ``ReleaseRejected`` with a one-line
reason; no other exception escapes, whatever the bytes. ``parse_platform`` is total: a platform
or None. Invariants of a returned release: every link points into the repository's own releases
on ``web_url`` (a tampered answer cannot send users elsewhere), every text is bounded, and every
asset has a safe file name and a non-negative integer size.

Repository names are compared exactly. GitHub treats them case-insensitively, but the
configured name is expected to be spelled as GitHub spells it; a differently-cased answer only
costs the links (the release page link is rebuilt, assets are dropped), never safety.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, TypeGuard
from urllib.parse import quote

from craft_apps.domain import (
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
)
from craft_apps.timefmt import instant_or_none

MAX_TAG_CHARS = 64
MAX_NAME_CHARS = 200
MAX_NOTES_BYTES = 64 * 1024
MAX_ASSETS = 200
MAX_FILE_NAME_CHARS = 200
ELLIPSIS = "…"

_FORBIDDEN_FILE_NAME_CHARS = frozenset('/\\:<>"|?*')
_SHA256_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class ReleaseRejected(Exception):
    """GitHub's answer holds no usable release; ``reason`` is one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_release(body: bytes, repo: str, web_url: str = "https://github.com") -> Release:
    """Reads ``GET /repos/{repo}/releases/latest``; see the module docstring for the guarantees."""
    release = _json_object(body)
    draft = release.get("draft")
    if draft is not None and draft is not False:
        raise ReleaseRejected("the release is a draft (or its draft flag is not false)")
    tag = _tag(release.get("tag_name"))
    releases_page = f"{web_url}/{repo}/releases/"
    html_url = release.get("html_url")
    if not (_is_clean_url(html_url) and html_url.startswith(releases_page)):
        html_url = f"{releases_page}tag/{quote(tag, safe='/')}"
    return Release(
        tag=tag,
        # A tag of just "v" keeps itself as the version rather than an empty one.
        version=tag[1:] if tag[0] in "vV" and len(tag) > 1 else tag,
        name=_name(release.get("name"), tag),
        published_at=_published_at(release.get("published_at")),
        html_url=html_url,
        prerelease=release.get("prerelease") is True,
        notes_markdown=_notes(release.get("body")),
        assets=_assets(release.get("assets", []), f"{releases_page}download/"),
    )


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ReleaseRejected(f"the answer is not UTF-8 (bad byte at offset {err.start})") from None
    try:
        data = json.loads(text)
    except ValueError as err:  # JSONDecodeError, and integers too long to convert
        raise ReleaseRejected(f"the answer is not JSON: {_first_line(str(err))}") from None
    except RecursionError:
        raise ReleaseRejected("the answer is not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ReleaseRejected(f"the answer is JSON {type(data).__name__}, not an object")
    return data


def _tag(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ReleaseRejected("the release has no tag")
    if len(value) > MAX_TAG_CHARS:
        raise ReleaseRejected(f"the tag is {len(value)} characters long, over {MAX_TAG_CHARS}")
    # Git refuses such tags, so one here means the answer is not GitHub's.
    if not value.isprintable() or any(c.isspace() for c in value):
        raise ReleaseRejected("the tag holds spaces or control characters")
    return value


def _name(value: object, tag: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return tag
    value = _LONE_SURROGATE.sub("\ufffd", value)
    return value if len(value) <= MAX_NAME_CHARS else value[:MAX_NAME_CHARS] + ELLIPSIS


def _notes(value: object) -> str:
    if not isinstance(value, str):
        return ""
    encoded = _LONE_SURROGATE.sub("\ufffd", value).encode("utf-8")
    if len(encoded) <= MAX_NOTES_BYTES:
        return encoded.decode("utf-8")
    # "ignore" drops only the character the cut went through.
    return encoded[:MAX_NOTES_BYTES].decode("utf-8", errors="ignore") + ELLIPSIS


def _published_at(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return instant_or_none(value)
    except ValueError:
        return None


def _assets(value: object, download_prefix: str) -> tuple[ReleaseAsset, ...]:
    if not isinstance(value, list):
        raise ReleaseRejected(f"the release's assets are JSON {type(value).__name__}, not a list")
    assets: list[ReleaseAsset] = []
    for item in value:
        asset = _asset(item, download_prefix)
        if asset is not None:
            assets.append(asset)
            if len(assets) == MAX_ASSETS:
                break
    return tuple(assets)


def _asset(item: object, download_prefix: str) -> ReleaseAsset | None:
    if not isinstance(item, dict):
        return None
    name = item.get("name")
    url = item.get("browser_download_url")
    size = item.get("size")
    if not (isinstance(name, str) and is_valid_file_name(name)):
        return None
    if not (_is_clean_url(url) and url.startswith(download_prefix)):
        return None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    digest = item.get("digest")
    match = _SHA256_DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    return ReleaseAsset(
        name=name,
        size_bytes=size,
        download_url=url,
        sha256=match.group(1).lower() if match else None,
        platform=parse_platform(name),
    )


def is_valid_file_name(name: str) -> bool:
    """Non-empty, at most 200 characters, no leading dot, no path or shell-special characters.

    Besides control characters this refuses every other invisible or format character
    (lone surrogates, right-to-left overrides) that could make a name look like another one.
    """
    return (
        0 < len(name) <= MAX_FILE_NAME_CHARS
        and not name.startswith(".")
        and all((c == " " or c.isprintable()) and c not in _FORBIDDEN_FILE_NAME_CHARS for c in name)
    )


def _is_clean_url(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.isprintable() and not any(c.isspace() for c in value)


def _first_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + ELLIPSIS


# --- Asset names ----------------------------------------------------------------------------------

# Longest first, so ".AppImage.zsync" is not read as ".zsync" and "-portable.zip" not as ".zip".
_PACKAGE_SUFFIXES: tuple[tuple[str, CraftAppPackageType], ...] = (
    ("-portable.zip", CraftAppPackageType.PORTABLE_ZIP),
    (".AppImage.zsync", CraftAppPackageType.APP_IMAGE_ZSYNC),
    (".AppImage", CraftAppPackageType.APP_IMAGE),
    (".tar.gz", CraftAppPackageType.TAR_GZ),
    (".msi", CraftAppPackageType.MSI),
    (".dmg", CraftAppPackageType.DMG),
    (".deb", CraftAppPackageType.DEB),
    (".rpm", CraftAppPackageType.RPM),
    (".flatpak", CraftAppPackageType.FLATPAK),
    (".zip", CraftAppPackageType.CLI_ZIP),
)
_OSES = {
    "windows": CraftAppOs.WINDOWS,
    "macos": CraftAppOs.MACOS,
    "linux": CraftAppOs.LINUX,
    "freebsd": CraftAppOs.FREEBSD,
}
_ARCHES = {
    "x64": CraftAppArch.X64,
    "x86_64": CraftAppArch.X64,
    "x86": CraftAppArch.X86,
    "arm64": CraftAppArch.ARM64,
    "aarch64": CraftAppArch.ARM64,
    "universal": CraftAppArch.UNIVERSAL,
}
# The systems each package type exists for (the contract documents them so).
_OSES_BY_PACKAGE: dict[CraftAppPackageType, frozenset[CraftAppOs]] = {
    CraftAppPackageType.MSI: frozenset({CraftAppOs.WINDOWS}),
    CraftAppPackageType.PORTABLE_ZIP: frozenset({CraftAppOs.WINDOWS}),
    CraftAppPackageType.DMG: frozenset({CraftAppOs.MACOS}),
    CraftAppPackageType.CLI_ZIP: frozenset({CraftAppOs.MACOS}),
    CraftAppPackageType.APP_IMAGE: frozenset({CraftAppOs.LINUX}),
    CraftAppPackageType.APP_IMAGE_ZSYNC: frozenset({CraftAppOs.LINUX}),
    CraftAppPackageType.DEB: frozenset({CraftAppOs.LINUX}),
    CraftAppPackageType.RPM: frozenset({CraftAppOs.LINUX}),
    CraftAppPackageType.FLATPAK: frozenset({CraftAppOs.LINUX}),
    CraftAppPackageType.TAR_GZ: frozenset({CraftAppOs.LINUX, CraftAppOs.FREEBSD}),
}
# "<app>-<version>": an app key (may hold dashes), then a version starting with a digit.
_APP_VERSION = re.compile(r".+-[vV]?[0-9].*")
_APP_CLI_VERSION = re.compile(r".+-cli-[vV]?[0-9].*")
# Greedy, so the last "-web-" splits app from version: an app key may hold "-web-" itself.
_WEB_BUILD = re.compile(r".+-web-[vV]?[0-9].*\.zip")


def parse_platform(name: str) -> AssetPlatform | None:
    """What an asset's file name says it is, or None when it does not follow the naming scheme.

    ``<app>-<version>-<os>-<arch>[-portable].<ext>``, ``<app>-cli-<version>-macos-<arch>.zip``
    and ``<app>-web-<version>.zip``, matched case-sensitively. A name ending in a known
    ``-<os>-<arch>`` is judged by that form alone, so "-web-" inside an app key or version
    never turns a native package into the web build.
    """
    native = _native_parts(name)
    if native is not None:
        return _native_platform(*native)
    if _WEB_BUILD.fullmatch(name) and not name.endswith("-portable.zip"):
        return AssetPlatform(os=CraftAppOs.WEB, arch=None, package_type=CraftAppPackageType.WEB_ZIP)
    return None


def _native_parts(name: str) -> tuple[str, CraftAppOs, CraftAppArch, CraftAppPackageType] | None:
    """``(prefix, os, arch, package type)`` when the name ends in a known os, arch and suffix."""
    for suffix, package_type in _PACKAGE_SUFFIXES:
        if name.endswith(suffix):
            parts = name[: -len(suffix)].rsplit("-", 2)
            if len(parts) != 3 or parts[1] not in _OSES or parts[2] not in _ARCHES:
                return None
            return parts[0], _OSES[parts[1]], _ARCHES[parts[2]], package_type
    return None


def _native_platform(
    prefix: str, os: CraftAppOs, arch: CraftAppArch, package_type: CraftAppPackageType
) -> AssetPlatform | None:
    if os not in _OSES_BY_PACKAGE[package_type]:
        return None
    if arch is CraftAppArch.UNIVERSAL and os is not CraftAppOs.MACOS:
        return None
    # A bare ".zip" is only ever the macOS command-line tools.
    pattern = _APP_CLI_VERSION if package_type is CraftAppPackageType.CLI_ZIP else _APP_VERSION
    if not pattern.fullmatch(prefix):
        return None
    return AssetPlatform(os=os, arch=arch, package_type=package_type)
