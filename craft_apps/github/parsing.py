"""GitHub's release JSON read into a ``Release``, keeping only what is safe to serve (docs/endpoint.md).

``parse_release(body, repo, web_url)`` returns a ``Release`` or raises ``ReleaseRejected`` with a
one-line reason; no other exception escapes, whatever the bytes. ``read_release`` also returns the
repository the links were checked against and the assets dropped by reason;
``read_release_list`` reads a release list entry by entry by the same rules; ``rejudge`` checks
a stored release again by them. ``parse_platform`` gives an asset name's platform, or None.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote

from craft_apps.kernel.domain import (
    MAX_ASSET_ID,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
    tag_problem,
)
from craft_apps.kernel.instants import format_rfc3339, instant_or_none
from craft_apps.kernel.links import link_under, on_another_host, segments_under
from craft_apps.kernel.source import DROP_REASONS, MAX_ASSETS
from craft_apps.kernel.text import ELLIPSIS, one_line
from craft_apps.kernel.versions import served_version
from craft_apps.tauri.files import updater_judged
from craft_apps.tauri.names import tauri_platform

MAX_NAME_CHARS = 200
MAX_NOTES_BYTES = 64 * 1024
MAX_FILE_NAME_CHARS = 200
# The largest integer a JSON client reading numbers as doubles (JavaScript, jq...) keeps exact.
MAX_SAFE_SIZE = 2**53 - 1

_FORBIDDEN_FILE_NAME_CHARS = frozenset('/\\:<>"|?*')
_SHA256_DIGEST = re.compile(r"sha256:([0-9a-fA-F]{64})")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline (a carriage return is turned into a newline first), DEL and
# the C1 controls: invisible, and some of them drive terminals.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAK = re.compile("\r\n?")
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ParsedRelease:
    """A release, the repository its links were judged against (as GitHub spells it, or its
    new name after a rename), and the assets dropped by reason (only reasons with a count)."""

    release: Release
    repo: str
    dropped: tuple[tuple[str, int], ...] = ()


class ReleaseRejected(Exception):
    """GitHub's answer holds no usable release; ``reason`` is one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_release(body: bytes, repo: str, web_url: str = "https://github.com") -> Release:
    """Reads ``GET /repos/{repo}/releases/latest``; see the module docstring for the guarantees."""
    return read_release(body, repo, web_url).release


def read_release(
    body: bytes,
    repo: str,
    web_url: str = "https://github.com",
    *,
    renamed: bool = False,
    keep_ids: bool = False,
) -> ParsedRelease:
    """``parse_release`` telling which repository the links were judged against and what was
    dropped. ``renamed``: GitHub redirected the request, so the answer may be another repository's
    (the configured one renamed or transferred), and is judged as that repository's.
    ``keep_ids``: each asset keeps GitHub's id (a private app's, served through its API)."""
    return _read_object(_json_object(body), repo, web_url, renamed, keep_ids)


@dataclass(frozen=True)
class ParsedList:
    """GitHub's release list as judged: each usable release (``read_release``'s rules, in the
    answer's order), and one line for each entry refused whole. Drafts are neither: they are
    not published, so they are left out without a word."""

    releases: tuple[ParsedRelease, ...]
    refused: tuple[str, ...] = ()


def read_release_list(
    body: bytes,
    repo: str,
    web_url: str = "https://github.com",
    *,
    renamed: bool = False,
    keep_ids: bool = False,
) -> ParsedList:
    """Reads ``GET /repos/{repo}/releases``: every entry judged by exactly the rules of
    ``read_release`` (one parser for the latest and the list). Raises ``ReleaseRejected`` when
    the answer is not a JSON list."""
    items = _json_value(body)
    if not isinstance(items, list):
        raise ReleaseRejected(f"the answer is JSON {type(items).__name__}, not a list")
    releases: list[ParsedRelease] = []
    refused: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            refused.append(f"entry {index} is JSON {type(item).__name__}, not an object")
            continue
        if item.get("draft") is True:
            continue
        try:
            releases.append(_read_object(item, repo, web_url, renamed, keep_ids))
        except ReleaseRejected as rejected:
            tag = item.get("tag_name")
            named = f"release {one_line(tag, 80)!r}" if isinstance(tag, str) and tag else f"entry {index}"
            refused.append(f"{named}: {rejected.reason}")
    return ParsedList(releases=tuple(releases), refused=tuple(refused))


def _read_object(
    release: dict[str, Any], repo: str, web_url: str, renamed: bool, keep_ids: bool = False
) -> ParsedRelease:
    draft = release.get("draft")
    if draft is not None and draft is not False:
        raise ReleaseRejected("the release is a draft (or its draft flag is not false)")
    tag = _tag(release.get("tag_name"))
    repo = _answered_repo(release, repo, web_url, renamed)
    releases_page = f"{web_url}/{repo}/releases/"
    # A page that is not the repository's is rebuilt from the tag, and judged the same way.
    html_url = (
        link_under(release.get("html_url"), releases_page)
        or link_under(f"{releases_page}tag/{quote(tag, safe='/')}", releases_page)
        or releases_page
    )
    dropped: Counter[str] = Counter()
    download_prefix = f"{releases_page}download/"
    assets = _assets(release.get("assets", []), download_prefix, web_url, dropped, keep_ids)
    parsed = Release(
        tag=tag,
        version=served_version(tag),
        name=_name(release.get("name"), tag),
        published_at=_published_at(release.get("published_at")),
        html_url=html_url,
        prerelease=release.get("prerelease") is True,
        notes_markdown=_notes(release.get("body")),
        assets=assets,
    )
    counts = tuple((reason, dropped[reason]) for reason in DROP_REASONS if dropped[reason])
    return ParsedRelease(release=parsed, repo=repo, dropped=counts)


def _answered_repo(release: dict[str, Any], repo: str, web_url: str, renamed: bool) -> str:
    """The repository the answer's release page (else its first asset's link) names, when it
    is ``repo`` in another case, or any repository after a rename; ``repo`` otherwise."""
    candidates: list[object] = [release.get("html_url")]
    assets = release.get("assets")
    if isinstance(assets, list) and assets and isinstance(assets[0], dict):
        candidates.append(assets[0].get("browser_download_url"))
    for link in candidates:
        segments = segments_under(link, f"{web_url}/")
        if segments is None or len(segments) < 3 or segments[2] != "releases":
            continue
        named = f"{segments[0]}/{segments[1]}"
        if not _REPO_NAME.fullmatch(named) or any(part in (".", "..") for part in segments[:2]):
            continue
        if named.lower() == repo.lower() or renamed:
            return named
    return repo


def rejudge(release: Release, repo: str, web_url: str = "https://github.com") -> Release | None:
    """A release read back from storage, judged again by the rules above as if GitHub had just
    sent it: what they wouldn't serve is dropped or rebuilt exactly as ``parse_release`` does,
    and a release they refuse whole is None. Stored releases can predate a rule (this host's
    state file after an upgrade) or come from a pod that doesn't apply it (the fleet's Redis)."""
    answer = {
        "tag_name": release.tag,
        "name": release.name,
        "draft": False,
        "prerelease": release.prerelease,
        "html_url": release.html_url,
        "published_at": None if release.published_at is None else format_rfc3339(release.published_at),
        "body": release.notes_markdown,
        "assets": [
            {
                "name": asset.name,
                "size": asset.size_bytes,
                "browser_download_url": asset.download_url,
                "digest": None if asset.sha256 is None else f"sha256:{asset.sha256}",
                "id": asset.asset_id,
            }
            for asset in release.assets
        ],
    }
    try:
        # Ids are stored for a private app's assets only, so they are kept when there.
        judged = read_release(json.dumps(answer).encode("utf-8"), repo, web_url, keep_ids=True).release
    except ReleaseRejected:
        return None
    return replace(judged, updater=updater_judged(release.updater, judged, web_url))


def _json_object(body: bytes) -> dict[str, Any]:
    data = _json_value(body)
    if not isinstance(data, dict):
        raise ReleaseRejected(f"the answer is JSON {type(data).__name__}, not an object")
    return data


def _json_value(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ReleaseRejected(f"the answer is not UTF-8 (bad byte at offset {err.start})") from None
    try:
        data = json.loads(text)
    except ValueError as err:  # JSONDecodeError, and integers too long to convert
        raise ReleaseRejected(f"the answer is not JSON: {one_line(err, 120)}") from None
    except RecursionError:
        raise ReleaseRejected("the answer is not JSON: nested too deeply") from None
    return data


def _tag(value: object) -> str:
    # Git refuses such tags, so one here means the answer is not GitHub's: the rule operators'
    # release controls follow too (``domain.tag_problem``).
    if not isinstance(value, str):
        raise ReleaseRejected("the release has no tag")
    problem = tag_problem(value)
    if problem is not None:
        raise ReleaseRejected(problem)
    return value


def _name(value: object, tag: str) -> str:
    value = _clean_text(value)
    if not value.strip():
        return tag
    return value if len(value) <= MAX_NAME_CHARS else value[:MAX_NAME_CHARS] + ELLIPSIS


def _notes(value: object) -> str:
    encoded = _clean_text(value).encode("utf-8")
    if len(encoded) <= MAX_NOTES_BYTES:
        return encoded.decode("utf-8")
    # "ignore" drops only the character the cut went through.
    return encoded[:MAX_NOTES_BYTES].decode("utf-8", errors="ignore") + ELLIPSIS


def _clean_text(value: object) -> str:
    """A text to serve: lone surrogates replaced, line breaks as newlines, no other controls."""
    if not isinstance(value, str):
        return ""
    return _CONTROL.sub("", _LINE_BREAK.sub("\n", _LONE_SURROGATE.sub("\ufffd", value)))


def _published_at(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return instant_or_none(value)
    except ValueError:
        return None


def _assets(
    value: object, download_prefix: str, web_url: str, dropped: Counter[str], keep_ids: bool = False
) -> tuple[ReleaseAsset, ...]:
    if not isinstance(value, list):
        raise ReleaseRejected(f"the release's assets are JSON {type(value).__name__}, not a list")
    assets: list[ReleaseAsset] = []
    for index, item in enumerate(value):
        if len(assets) == MAX_ASSETS:
            dropped["over_limit"] += len(value) - index
            break
        asset = _asset(item, download_prefix, web_url, keep_ids)
        if isinstance(asset, str):
            dropped[asset] += 1
        else:
            assets.append(asset)
    return tuple(assets)


def _asset(item: object, download_prefix: str, web_url: str, keep_ids: bool = False) -> ReleaseAsset | str:
    """The asset, or the reason (one of ``DROP_REASONS``) it is dropped."""
    if not isinstance(item, dict):
        return "not_an_asset"
    name = item.get("name")
    link = item.get("browser_download_url")
    url = link_under(link, download_prefix)
    size = item.get("size")
    if not (isinstance(name, str) and is_valid_file_name(name)):
        return "bad_name"
    if url is None:
        return "link_host" if on_another_host(link, web_url) else "link_elsewhere"
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_SAFE_SIZE:
        return "bad_size"
    digest = item.get("digest")
    match = _SHA256_DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    return ReleaseAsset(
        name=name,
        size_bytes=size,
        download_url=url,
        sha256=match.group(1).lower() if match else None,
        platform=parse_platform(name),
        asset_id=_asset_id(item.get("id")) if keep_ids else None,
    )


def _asset_id(value: object) -> int | None:
    """GitHub's id of an asset, or None when it is not one (the asset is then not downloadable
    through the API, so a private app doesn't serve it)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ASSET_ID:
        return value
    return None


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
    """What an asset's file name says it is, or None when it follows no naming scheme we know.

    The Craft App scheme first: ``<app>-<version>-<os>-<arch>[-portable].<ext>``,
    ``<app>-cli-<version>-macos-<arch>.zip`` and ``<app>-web-<version>.zip``, matched
    case-sensitively. A name ending in a known ``-<os>-<arch>`` is judged by that form alone,
    so "-web-" inside an app key or version never turns a native package into the web build,
    and such a name is never read by the other scheme. Then the Tauri bundler's names as
    tauri-action uploads them (``craft_apps.tauri.names``).
    """
    native = _native_parts(name)
    if native is not None:
        return _native_platform(*native)
    if _WEB_BUILD.fullmatch(name) and not name.endswith("-portable.zip"):
        return AssetPlatform(os=CraftAppOs.WEB, arch=None, package_type=CraftAppPackageType.WEB_ZIP)
    return tauri_platform(name)


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
