"""The Tauri bundler's file names (craft_apps.tauri.names), and what ``parse_platform`` makes
of them beside the Craft App scheme, whose cases (test_release_parsing.PLATFORMS) stay as they were."""

from __future__ import annotations

import pytest

from craft_apps.github.parsing import parse_platform
from craft_apps.kernel.domain import AssetPlatform, CraftAppArch, CraftAppOs, CraftAppPackageType
from craft_apps.tauri.names import TauriAsset, TauriRole, tauri_asset, tauri_platform

W, M, L = CraftAppOs.WINDOWS, CraftAppOs.MACOS, CraftAppOs.LINUX
X64, X86, ARM, UNI = CraftAppArch.X64, CraftAppArch.X86, CraftAppArch.ARM64, CraftAppArch.UNIVERSAL
P = CraftAppPackageType
INST, UPD, SIG = TauriRole.INSTALLER, TauriRole.UPDATER_BUNDLE, TauriRole.SIGNATURE

# (name, what it is to Tauri, its platform in the contract)
NAMES: list[tuple[str, TauriAsset | None, AssetPlatform | None]] = [
    # Windows: WiX's MSI (with its language) and the NSIS setup, which the enums can't name.
    (
        "ArtCraft_0.37.0_x64_en-US.msi",
        TauriAsset(INST, "windows", "x86_64", "msi"),
        AssetPlatform(W, X64, P.MSI),
    ),
    (
        "ArtCraft_0.37.0_x86_en-US.msi",
        TauriAsset(INST, "windows", "i686", "msi"),
        AssetPlatform(W, X86, P.MSI),
    ),
    (
        "ArtCraft_0.37.0_arm64_fr-FR.msi",
        TauriAsset(INST, "windows", "aarch64", "msi"),
        AssetPlatform(W, ARM, P.MSI),
    ),
    # WiX's version: tauri-action's wixAppVersion turns "-" and "+" into ".".
    (
        "ArtCraft_0.38.0.beta.1_x64_en-US.msi",
        TauriAsset(INST, "windows", "x86_64", "msi"),
        AssetPlatform(W, X64, P.MSI),
    ),
    ("ArtCraft_0.37.0_x64-setup.exe", TauriAsset(INST, "windows", "x86_64", "nsis"), None),
    ("ArtCraft_0.37.0_arm64-setup.exe", TauriAsset(INST, "windows", "aarch64", "nsis"), None),
    # macOS: the DMG, and the updater bundle tauri-action names with its CPU and no version.
    (
        "ArtCraft_0.37.0_universal.dmg",
        TauriAsset(INST, "darwin", "universal", "dmg"),
        AssetPlatform(M, UNI, P.DMG),
    ),
    (
        "ArtCraft_0.37.0_aarch64.dmg",
        TauriAsset(INST, "darwin", "aarch64", "dmg"),
        AssetPlatform(M, ARM, P.DMG),
    ),
    ("ArtCraft_0.37.0_x64.dmg", TauriAsset(INST, "darwin", "x86_64", "dmg"), AssetPlatform(M, X64, P.DMG)),
    ("ArtCraft_universal.app.tar.gz", TauriAsset(UPD, "darwin", "universal", "app"), None),
    ("ArtCraft_aarch64.app.tar.gz", TauriAsset(UPD, "darwin", "aarch64", "app"), None),
    ("ArtCraft_x64.app.tar.gz", TauriAsset(UPD, "darwin", "x86_64", "app"), None),
    # Linux: the bundler's own CPU spellings for each format.
    (
        "ArtCraft_0.37.0_amd64.AppImage",
        TauriAsset(INST, "linux", "x86_64", "appimage"),
        AssetPlatform(L, X64, P.APP_IMAGE),
    ),
    (
        "ArtCraft_0.37.0_i386.AppImage",
        TauriAsset(INST, "linux", "i686", "appimage"),
        AssetPlatform(L, X86, P.APP_IMAGE),
    ),
    (
        "ArtCraft_0.37.0_aarch64.AppImage",
        TauriAsset(INST, "linux", "aarch64", "appimage"),
        AssetPlatform(L, ARM, P.APP_IMAGE),
    ),
    ("ArtCraft_0.37.0_amd64.deb", TauriAsset(INST, "linux", "x86_64", "deb"), AssetPlatform(L, X64, P.DEB)),
    ("ArtCraft_0.37.0_arm64.deb", TauriAsset(INST, "linux", "aarch64", "deb"), AssetPlatform(L, ARM, P.DEB)),
    ("ArtCraft_0.37.0_i386.deb", TauriAsset(INST, "linux", "i686", "deb"), AssetPlatform(L, X86, P.DEB)),
    (
        "ArtCraft-0.37.0-1.x86_64.rpm",
        TauriAsset(INST, "linux", "x86_64", "rpm"),
        AssetPlatform(L, X64, P.RPM),
    ),
    (
        "ArtCraft-0.37.0-1.aarch64.rpm",
        TauriAsset(INST, "linux", "aarch64", "rpm"),
        AssetPlatform(L, ARM, P.RPM),
    ),
    (
        "ArtCraft-0.38.0-beta.1-1.i386.rpm",
        TauriAsset(INST, "linux", "i686", "rpm"),
        AssetPlatform(L, X86, P.RPM),
    ),
    (
        "art-craft-0.37.0-2.x86_64.rpm",
        TauriAsset(INST, "linux", "x86_64", "rpm"),
        AssetPlatform(L, X64, P.RPM),
    ),
    # 32-bit Arm builds: the updater has armv7, the contract's CraftAppArch has none.
    ("ArtCraft_0.37.0_armhf.deb", TauriAsset(INST, "linux", "armv7", "deb"), None),
    ("ArtCraft_0.37.0_armhf.AppImage", TauriAsset(INST, "linux", "armv7", "appimage"), None),
    ("ArtCraft-0.37.0-1.armhfp.rpm", TauriAsset(INST, "linux", "armv7", "rpm"), None),
    # Updater bundles (Tauri 1, or createUpdaterArtifacts "v1Compatible"): no platform.
    ("ArtCraft_0.37.0_x64_en-US.msi.zip", TauriAsset(UPD, "windows", "x86_64", "msi"), None),
    ("ArtCraft_0.37.0_x64-setup.nsis.zip", TauriAsset(UPD, "windows", "x86_64", "nsis"), None),
    ("ArtCraft_0.37.0_amd64.AppImage.tar.gz", TauriAsset(UPD, "linux", "x86_64", "appimage"), None),
    # Signatures, of installers and of updater bundles: no platform.
    (
        "ArtCraft_0.37.0_x64_en-US.msi.sig",
        TauriAsset(SIG, "windows", "x86_64", "msi", "ArtCraft_0.37.0_x64_en-US.msi"),
        None,
    ),
    (
        "ArtCraft_0.37.0_x64-setup.exe.sig",
        TauriAsset(SIG, "windows", "x86_64", "nsis", "ArtCraft_0.37.0_x64-setup.exe"),
        None,
    ),
    (
        "ArtCraft_universal.app.tar.gz.sig",
        TauriAsset(SIG, "darwin", "universal", "app", "ArtCraft_universal.app.tar.gz"),
        None,
    ),
    (
        "ArtCraft_0.37.0_amd64.AppImage.sig",
        TauriAsset(SIG, "linux", "x86_64", "appimage", "ArtCraft_0.37.0_amd64.AppImage"),
        None,
    ),
    (
        "ArtCraft_0.37.0_x64-setup.nsis.zip.sig",
        TauriAsset(SIG, "windows", "x86_64", "nsis", "ArtCraft_0.37.0_x64-setup.nsis.zip"),
        None,
    ),
    ("latest.json", TauriAsset(TauriRole.MANIFEST), None),
    # GitHub's renaming of an uploaded name: spaces (and tauri-action's brackets) become dots.
    (
        "Art.Craft_0.37.0_x64_en-US.msi",
        TauriAsset(INST, "windows", "x86_64", "msi"),
        AssetPlatform(W, X64, P.MSI),
    ),
    ("YARC.Launcher_universal.app.tar.gz", TauriAsset(UPD, "darwin", "universal", "app"), None),
    (
        "Art.Craft.Beta._0.37.0_universal.dmg",
        TauriAsset(INST, "darwin", "universal", "dmg"),
        AssetPlatform(M, UNI, P.DMG),
    ),
    ("My_App_0.37.0_amd64.deb", TauriAsset(INST, "linux", "x86_64", "deb"), AssetPlatform(L, X64, P.DEB)),
    # Not the bundler's names.
    ("ArtCraft_0.37.0_x64_en-US-debug.msi", None, None),  # tauri-action's debug builds
    ("ArtCraft-debug_universal.app.tar.gz", None, None),
    ("ArtCraft_0.37.0_x64-debug.dmg", None, None),
    ("ArtCraft_0.37.0_universal.AppImage", None, None),  # universal is macOS's alone
    ("ArtCraft_0.37.0_universal_en-US.msi", None, None),
    ("ArtCraft_0.37.0_sparc.deb", None, None),
    ("ArtCraft_0.37.0_armel.deb", None, None),  # no updater CPU for it
    ("ArtCraft_0.37.0_x64.msi", None, None),  # WiX's names always carry a language
    ("ArtCraft_0.37.0_x64.exe", None, None),
    ("ArtCraft_0.37.0_x64.appimage", None, None),
    ("ArtCraft_latest_x64.dmg", None, None),  # no version
    ("ArtCraft_0.37_x64.dmg", None, None),
    ("_0.37.0_x64.dmg", None, None),  # no product
    ("ArtCraft.app.tar.gz", None, None),  # no CPU
    ("ArtCraft_0.37.0_x64.dmg.sha256", None, None),
    ("ArtCraft_0.37.0_amd64.deb.asc", None, None),
    ("SHA256SUMS.txt.sig", None, None),
    ("latest.json.sig", None, None),
    ("Latest.json", None, None),
    (".sig", None, None),
    ("", None, None),
]


@pytest.mark.parametrize(("name", "asset", "platform"), NAMES, ids=[n or "(empty)" for n, _, _ in NAMES])
def test_a_tauri_name_tells_its_role_cpu_and_platform(
    name: str, asset: TauriAsset | None, platform: AssetPlatform | None
) -> None:
    assert tauri_asset(name) == asset
    assert tauri_platform(name) == platform
    assert parse_platform(name) == platform  # what a parsed release's asset gets


def test_every_file_a_platform_is_given_is_an_installer() -> None:
    for name, asset, platform in NAMES:
        if platform is not None:
            assert asset is not None and asset.role is TauriRole.INSTALLER, name
