"""The Tauri bundler's file names, as tauri-action uploads them to a GitHub release.

``tauri_asset(name)`` returns what a file is to Tauri (installer, updater bundle, signature or
``latest.json``) with its system and CPU in the updater's spellings, or None; ``tauri_platform``
returns the contract's platform of an installer, or None (docs/endpoint.md has the table). The
names follow the bundler (``crates/tauri-bundler``) and tauri-action (``src/build.ts``,
``getAssetName``); the product name is free text, so it is not compared with the app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from craft_apps.kernel.compat import StrEnum
from craft_apps.kernel.domain import AssetPlatform, CraftAppArch, CraftAppOs, CraftAppPackageType

MANIFEST_NAME = "latest.json"  # tauri-action's static updater manifest
SIGNATURE_SUFFIX = ".sig"


class TauriRole(StrEnum):
    INSTALLER = "installer"  # what a person downloads; Tauri 2's updater may use it too
    UPDATER_BUNDLE = "updater_bundle"  # only the updater uses it
    SIGNATURE = "signature"  # the minisign signature of an installer or updater bundle
    MANIFEST = "manifest"  # latest.json


@dataclass(frozen=True, slots=True)
class TauriAsset:
    """What a file is to Tauri. ``target``/``cpu``/``bundle`` are None for ``latest.json``;
    ``bundle`` is the bundler's format (``msi``, ``nsis``, ``dmg``, ``app``, ``appimage``,
    ``deb``, ``rpm``); ``signs`` is the file a signature signs."""

    role: TauriRole
    target: str | None = None
    cpu: str | None = None
    bundle: str | None = None
    signs: str | None = None


# The bundler's and tauri-action's CPU spellings, as the updater names the CPU.
_CPUS = {
    "x64": "x86_64",
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "x86": "i686",
    "i386": "i686",
    "i686": "i686",
    "arm64": "aarch64",
    "aarch64": "aarch64",
    "armhf": "armv7",
    "armhfp": "armv7",
    "armv7": "armv7",
    "arm": "armv7",
    "universal": "universal",
}
_CONTRACT_ARCH = {
    "x86_64": CraftAppArch.X64,
    "i686": CraftAppArch.X86,
    "aarch64": CraftAppArch.ARM64,
    "universal": CraftAppArch.UNIVERSAL,
}  # armv7 has no value in CraftAppArch
_TARGET_OS = {"windows": CraftAppOs.WINDOWS, "darwin": CraftAppOs.MACOS, "linux": CraftAppOs.LINUX}
# The installers the contract has a package type for; the NSIS setup (an .exe) has none.
_PACKAGE = {
    "msi": CraftAppPackageType.MSI,
    "dmg": CraftAppPackageType.DMG,
    "appimage": CraftAppPackageType.APP_IMAGE,
    "deb": CraftAppPackageType.DEB,
    "rpm": CraftAppPackageType.RPM,
}

_P = r"(?P<p>.+)"  # the product name
_V = r"[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*"  # a version (WiX's has dots for "-" and "+")
_A = r"(?P<a>[A-Za-z0-9_]+?)"  # a CPU spelling
_LANG = r"(?P<lang>[A-Za-z]{2,3}(?:-[A-Za-z0-9]+)*)"  # a WiX language, en-US
_I, _U = TauriRole.INSTALLER, TauriRole.UPDATER_BUNDLE
# (pattern, updater target, bundle, role), each matched against the whole name.
_FORMS: tuple[tuple[re.Pattern[str], str, str, TauriRole], ...] = tuple(
    (re.compile(pattern), target, bundle, role)
    for pattern, target, bundle, role in (
        (rf"{_P}_{_V}_{_A}_{_LANG}\.msi", "windows", "msi", _I),
        (rf"{_P}_{_V}_{_A}_{_LANG}\.msi\.zip", "windows", "msi", _U),
        (rf"{_P}_{_V}_{_A}-setup\.exe", "windows", "nsis", _I),
        (rf"{_P}_{_V}_{_A}-setup\.nsis\.zip", "windows", "nsis", _U),
        (rf"{_P}_{_V}_{_A}\.dmg", "darwin", "dmg", _I),
        (rf"{_P}_{_A}\.app\.tar\.gz", "darwin", "app", _U),
        (rf"{_P}_{_V}_{_A}\.AppImage", "linux", "appimage", _I),
        (rf"{_P}_{_V}_{_A}\.AppImage\.tar\.gz", "linux", "appimage", _U),
        (rf"{_P}_{_V}_{_A}\.deb", "linux", "deb", _I),
        # The product may hold dashes; the rpm release (tauri.conf's, "1" by default) follows.
        (rf"(?P<p>.+?)-{_V}-[0-9][0-9A-Za-z.]*?\.{_A}\.rpm", "linux", "rpm", _I),
    )
)


def tauri_asset(name: str) -> TauriAsset | None:
    """What ``name`` is to Tauri, or None when it is none of the bundler's names."""
    if name == MANIFEST_NAME:
        return TauriAsset(TauriRole.MANIFEST)
    if name.endswith(SIGNATURE_SUFFIX):
        signed = _bundle_file(name[: -len(SIGNATURE_SUFFIX)])
        if signed is None:
            return None
        return TauriAsset(TauriRole.SIGNATURE, signed.target, signed.cpu, signed.bundle, signed.name)
    found = _bundle_file(name)
    return None if found is None else TauriAsset(found.role, found.target, found.cpu, found.bundle)


@dataclass(frozen=True, slots=True)
class _BundleFile:
    name: str
    role: TauriRole
    target: str
    cpu: str
    bundle: str


def _bundle_file(name: str) -> _BundleFile | None:
    for pattern, target, bundle, role in _FORMS:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        cpu = _CPUS.get(match["a"])
        # A universal binary exists for macOS only.
        if cpu is None or (cpu == "universal" and target != "darwin") or _is_debug(match):
            return None
        return _BundleFile(name, role, target, cpu, bundle)
    return None


def _is_debug(match: re.Match[str]) -> bool:
    """tauri-action names a debug build's file ``…-debug`` before its CPU suffix."""
    lang = match.groupdict().get("lang") or ""
    return match["p"].endswith("-debug") or lang.endswith("-debug")


def tauri_platform(name: str) -> AssetPlatform | None:
    """The contract's platform of a Tauri installer the enums can name (MSI, DMG, AppImage,
    deb, rpm on a CPU ``CraftAppArch`` has); None for every other file (the NSIS setup, the
    updater bundles, signatures, ``latest.json``, armv7 builds)."""
    found = tauri_asset(name)
    if found is None or found.role is not TauriRole.INSTALLER:
        return None
    assert found.target is not None and found.cpu is not None and found.bundle is not None
    package = _PACKAGE.get(found.bundle)
    arch = _CONTRACT_ARCH.get(found.cpu)
    if package is None or arch is None:
        return None
    return AssetPlatform(os=_TARGET_OS[found.target], arch=arch, package_type=package)
