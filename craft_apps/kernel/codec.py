"""A release as JSON, for the host's state file and the fleet's Redis.

The JSON is the contract's ``CraftAppRelease``, field for field, so the reference's pods and ours
read each other's entries; a release's Tauri updater files are one more field, ``updater``,
written only when it has some (older readers pass over it). Decoding is strict: a stored entry
of any other shape raises ``ValueError`` and is treated as absent. See docs/state-file.md and docs/fleet.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from craft_apps.kernel.domain import (
    MAX_ASSET_ID,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
    UpdaterFile,
    newest_first,
)
from craft_apps.kernel.instants import format_rfc3339, instant_or_none


def release_to_dict(release: Release) -> dict[str, Any]:
    data = {
        "tag": release.tag,
        "version": release.version,
        "name": release.name,
        "published_at": format_rfc3339(release.published_at) if release.published_at else None,
        "html_url": release.html_url,
        "prerelease": release.prerelease,
        "notes_markdown": release.notes_markdown,
        "assets": [_asset_to_dict(asset) for asset in release.assets],
    }
    if release.updater:
        data["updater"] = [
            {"platform": file.platform, "url": file.url, "signature": file.signature}
            for file in release.updater
        ]
    return data


def _asset_to_dict(asset: ReleaseAsset) -> dict[str, Any]:
    platform = asset.platform
    data: dict[str, Any] = {
        "name": asset.name,
        "size_bytes": asset.size_bytes,
        "download_url": asset.download_url,
        "sha256": asset.sha256,
        "platform": None
        if platform is None
        else {
            "os": platform.os.value,
            "arch": platform.arch.value if platform.arch else None,
            "package_type": platform.package_type.value,
        },
    }
    if asset.asset_id is not None:  # a private app's only: the answer never lists it
        data["asset_id"] = asset.asset_id
    return data


def encode_release(release: Release | None) -> str:
    """The release as compact JSON; ``null`` for a repository without a release."""
    return json.dumps(
        None if release is None else release_to_dict(release), separators=(",", ":"), ensure_ascii=False
    )


def decode_release(text: str) -> Release | None:
    """The inverse of ``encode_release``. Raises ``ValueError`` for anything malformed."""
    try:
        data = json.loads(text)
    except (TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"release is not JSON: {err}") from None
    return None if data is None else release_from_dict(data)


def encode_releases(releases: Sequence[Release]) -> str:
    """A history: the releases as one compact JSON list of the objects above."""
    return json.dumps([release_to_dict(r) for r in releases], separators=(",", ":"), ensure_ascii=False)


def decode_releases(text: object) -> tuple[Release, ...]:
    """The inverse of ``encode_releases``, kept newest first (``domain.newest_first``). Raises
    ``ValueError`` for anything malformed, one bad release spoiling the whole list."""
    if not isinstance(text, str):
        raise ValueError("the releases are not text")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"the releases are not JSON: {err}") from None
    if not isinstance(data, list):
        raise ValueError("the releases are not a list")
    return newest_first([release_from_dict(item) for item in data])


def release_from_dict(data: object) -> Release:
    obj = _object(data, "release")
    published = obj.get("published_at")
    assets = obj.get("assets")
    if not isinstance(assets, list):
        raise ValueError("release.assets is not a list")
    return Release(
        tag=_str(obj, "tag"),
        version=_str(obj, "version"),
        name=_str(obj, "name"),
        published_at=None if published is None else instant_or_none(_str(obj, "published_at")),
        html_url=_str(obj, "html_url"),
        prerelease=_bool(obj, "prerelease"),
        notes_markdown=_str(obj, "notes_markdown"),
        assets=tuple(_asset_from_dict(item) for item in assets),
        updater=_updater_from_list(obj.get("updater", [])),
    )


def _updater_from_list(data: object) -> tuple[UpdaterFile, ...]:
    if not isinstance(data, list):
        raise ValueError("release.updater is not a list")
    files = []
    for item in data:
        obj = _object(item, "updater file")
        files.append(UpdaterFile(_str(obj, "platform"), _str(obj, "url"), _str(obj, "signature")))
    return tuple(files)


def _asset_from_dict(data: object) -> ReleaseAsset:
    obj = _object(data, "asset")
    size = obj.get("size_bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError("asset.size_bytes is not a non-negative integer")
    sha256 = obj.get("sha256")
    if sha256 is not None and not isinstance(sha256, str):
        raise ValueError("asset.sha256 is not a string")
    platform = obj.get("platform")
    asset_id = obj.get("asset_id")
    if asset_id is not None and not _is_asset_id(asset_id):
        raise ValueError("asset.asset_id is not a positive integer")
    return ReleaseAsset(
        name=_str(obj, "name"),
        size_bytes=size,
        download_url=_str(obj, "download_url"),
        sha256=sha256,
        platform=None if platform is None else _platform_from_dict(platform),
        asset_id=asset_id,
    )


def _is_asset_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ASSET_ID


def _platform_from_dict(data: object) -> AssetPlatform:
    obj = _object(data, "platform")
    arch = obj.get("arch")
    return AssetPlatform(
        os=CraftAppOs(_str(obj, "os")),
        arch=None if arch is None else CraftAppArch(_str(obj, "arch")),
        package_type=CraftAppPackageType(_str(obj, "package_type")),
    )


def _object(data: object, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not an object")
    return data


def _str(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name} is not a string")
    return value


def _bool(obj: dict[str, Any], name: str) -> bool:
    value = obj.get(name)
    if not isinstance(value, bool):
        raise ValueError(f"{name} is not a boolean")
    return value
