"""A release's files for the app's own Tauri updater: which to download and what to keep (docs/tauri.md).

``updater_plan(release)`` returns the downloads: ``latest.json`` if the release has one, else the
``.sig`` of each file the updater can install. ``read_manifest`` and ``from_signatures`` return
one ``UpdaterFile`` per platform key, its URL one of the release's own assets and its signature
the ``.sig`` text byte for byte. From ``.sig`` files the keys are tauri-action's:
``<target>-<arch>-<bundle>``, and ``<target>-<arch>`` for the first bundle of ``_PLAIN_KEY_ORDER``
(macOS universal: both CPUs). ``updater_judged`` checks stored files again. No I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from craft_apps.kernel.domain import Release, UpdaterFile
from craft_apps.kernel.links import link_under
from craft_apps.kernel.text import one_line
from craft_apps.tauri.names import MANIFEST_NAME, TauriRole, tauri_asset

MAX_MANIFEST_BYTES = 64 * 1024  # tauri-action's latest.json for 9 platforms is about 6 KiB
MAX_SIGNATURE_BYTES = 4 * 1024  # a Tauri .sig (base64 of minisign's four lines) is about 400
MAX_SIGNATURES = 16  # .sig files downloaded for one release, at most
MAX_PLATFORMS = 64  # platform keys kept from one latest.json

# The updater's own spellings: {{target}}-{{arch}}, and an installer after a third dash.
_PLATFORM_KEY = re.compile(r"(windows|darwin|linux)-(x86_64|aarch64|i686|armv7)(-[a-z0-9]{1,16})?")
# Base64 as Tauri writes a .sig; a line break at the end is kept, as the file holds it.
_SIGNATURE = re.compile(r"[A-Za-z0-9+/]+={0,2}(\r?\n)?")
# The bundle a platform's plain key goes to, by preference (tauri-action's defaults).
_PLAIN_KEY_ORDER = ("msi", "nsis", "app", "appimage", "deb", "rpm")
_UPDATABLE = frozenset(_PLAIN_KEY_ORDER)  # what the updater can install; never a .dmg


class UpdaterRejected(Exception):
    """A small file holds nothing usable; ``reason`` is one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Download:
    """One small file to download: its asset name, link and the most bytes read of it;
    ``asset_id`` GitHub's id, kept for a private app's assets only (downloaded through the API)."""

    name: str
    url: str
    limit: int
    asset_id: int | None = None


@dataclass(frozen=True, slots=True)
class UpdaterRead:
    """The updater files kept, and one line for each platform or file refused."""

    files: tuple[UpdaterFile, ...]
    refused: tuple[str, ...] = ()


def updater_plan(release: Release) -> tuple[Download, ...]:
    """What to download for ``release``'s updater files: its ``latest.json`` alone when it has
    one, else the ``.sig`` of each updatable file it holds (at most ``MAX_SIGNATURES``); empty
    for a release with neither (every Craft App release), which costs nothing."""
    names = {asset.name for asset in release.assets}
    for asset in release.assets:
        if asset.name == MANIFEST_NAME:
            return (Download(asset.name, asset.download_url, MAX_MANIFEST_BYTES, asset.asset_id),)
    signatures = [
        Download(asset.name, asset.download_url, MAX_SIGNATURE_BYTES, asset.asset_id)
        for asset in release.assets
        if _signs_updatable(asset.name, names)
    ]
    return tuple(signatures[:MAX_SIGNATURES])


def _signs_updatable(name: str, names: set[str]) -> bool:
    found = tauri_asset(name)
    return (
        found is not None
        and found.role is TauriRole.SIGNATURE
        and found.bundle in _UPDATABLE
        and found.signs in names
    )


def read_manifest(body: bytes, release: Release, web_url: str) -> UpdaterRead:
    """``latest.json``'s platforms whose link is one of ``release``'s assets and whose
    signature is a Tauri ``.sig``. Raises ``UpdaterRejected`` when the file is not JSON, not an
    object, or has no ``platforms`` object; a bad platform is refused alone."""
    if len(body) > MAX_MANIFEST_BYTES:
        raise UpdaterRejected(f"latest.json is over {MAX_MANIFEST_BYTES} bytes")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise UpdaterRejected("latest.json is not JSON") from None
    platforms = data.get("platforms") if isinstance(data, dict) else None
    if not isinstance(platforms, dict):
        raise UpdaterRejected("latest.json has no platforms object")
    links = _asset_links(release, web_url)
    files: list[UpdaterFile] = []
    refused: list[str] = []
    for key, entry in platforms.items():
        if len(files) >= MAX_PLATFORMS:
            refused.append(f"latest.json lists over {MAX_PLATFORMS} platforms; the rest are left out")
            break
        problem = _platform_problem(key, entry, links, web_url)
        if problem is None:
            files.append(UpdaterFile(key, links[_resolved(entry["url"], web_url) or ""], entry["signature"]))
        else:
            refused.append(f"latest.json platform {one_line(key, 40)!r}: {problem}")
    return UpdaterRead(tuple(sorted(files, key=lambda f: f.platform)), tuple(refused))


def _platform_problem(key: object, entry: object, links: Mapping[str, str], web_url: str) -> str | None:
    if not isinstance(key, str) or not _PLATFORM_KEY.fullmatch(key):
        return "not a Tauri platform key (<target>-<arch>[-<installer>])"
    if not isinstance(entry, dict):
        return "not an object"
    url, signature = entry.get("url"), entry.get("signature")
    if not isinstance(url, str) or not isinstance(signature, str):
        return "url or signature is not a string"
    if _resolved(url, web_url) not in links:
        return "its url is not a file of this release"
    return _signature_problem(signature.encode("utf-8", errors="replace"))


def from_signatures(texts: Mapping[str, bytes], release: Release) -> UpdaterRead:
    """The updater files the downloaded ``.sig`` files (by asset name) give, with the platform
    keys tauri-action would give them (see the module); a bad ``.sig`` is refused alone."""
    links = {asset.name: asset.download_url for asset in release.assets}
    found: dict[str, tuple[int, UpdaterFile]] = {}
    refused: list[str] = []
    for name, body in sorted(texts.items()):
        signed = tauri_asset(name)
        problem = _signature_problem(body)
        if signed is None or signed.signs not in links or problem is not None:
            refused.append(f"{one_line(name, 80)}: {problem or 'signs no file of this release'}")
            continue
        assert signed.target is not None and signed.cpu is not None and signed.bundle is not None
        # For one bundle, Tauri 1's updater bundle (.msi.zip, .AppImage.tar.gz) before the installer.
        installer = _role(signed.signs) is TauriRole.INSTALLER
        rank = _PLAIN_KEY_ORDER.index(signed.bundle) * 2 + installer
        for key in _keys(signed.target, signed.cpu, signed.bundle):
            if key not in found or rank < found[key][0]:
                found[key] = (rank, UpdaterFile(key, links[signed.signs], body.decode("ascii")))
    return UpdaterRead(tuple(file for _, (_, file) in sorted(found.items())), tuple(refused))


def _role(name: str | None) -> TauriRole | None:
    found = None if name is None else tauri_asset(name)
    return None if found is None else found.role


def _keys(target: str, cpu: str, bundle: str) -> Iterable[str]:
    cpus = ("aarch64", "x86_64") if cpu == "universal" else (cpu,)
    for each in cpus:
        yield f"{target}-{each}-{bundle}"
        yield f"{target}-{each}"


def _signature_problem(body: bytes) -> str | None:
    if len(body) > MAX_SIGNATURE_BYTES:
        return f"the signature is over {MAX_SIGNATURE_BYTES} bytes"
    if not _SIGNATURE.fullmatch(body.decode("ascii", errors="replace")):
        return "the signature is not base64 text as Tauri writes it"
    return None


def updater_judged(updater: Iterable[UpdaterFile], release: Release, web_url: str) -> tuple[UpdaterFile, ...]:
    """The stored ``updater`` files that today's rules keep for ``release`` (its assets as
    judged again): a known platform key once, a link to one of its assets, a Tauri signature."""
    links = _asset_links(release, web_url)
    kept: dict[str, UpdaterFile] = {}
    for file in updater:
        entry: Any = {"url": file.url, "signature": file.signature}
        if file.platform not in kept and _platform_problem(file.platform, entry, links, web_url) is None:
            kept[file.platform] = UpdaterFile(
                file.platform, links[_resolved(file.url, web_url) or ""], file.signature
            )
    return tuple(sorted(kept.values(), key=lambda f: f.platform))


def _asset_links(release: Release, web_url: str) -> dict[str, str]:
    """Each asset's link as resolved (``links.link_under``) -> the link the release serves."""
    found: dict[str, str] = {}
    for asset in release.assets:
        resolved = _resolved(asset.download_url, web_url)
        if resolved is not None:
            found[resolved] = asset.download_url
    return found


def _resolved(url: object, web_url: str) -> str | None:
    return link_under(url, f"{web_url.rstrip('/')}/")
