"""GET /v1/craft_apps/download/<app>/<os>/<arch>[/<package_type>]: the preference table, every
redirect rule and every 404 reason, against a real state file."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.downloads import PREFERRED_PACKAGES, arch_order, choose
from craft_apps.conf import DEFAULT_APPS
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.domain import AppSpec, AppState, CraftAppArch, CraftAppOs, CraftAppPackageType
from craft_apps.testing.demo_releases import demo_release
from tests.api.downloads_support import EVERY_FILE, FETCHED_MS, download_site, release_of, url_of
from tests.support import ARTCRAFT_LAUNCHER, RELEASE_INFO_URL, apps_setting, publish

__all__ = ["download_site"]  # the fixture

OS, ARCH, PKG = CraftAppOs, CraftAppArch, CraftAppPackageType


def download(client: Client, path: str, method: str = "get"):
    return getattr(client, method)(f"/v1/craft_apps/download/{path}")


def publish_photocraft(site: Path, *suffixes: str, launcher: AppState | None = None) -> None:
    apps = {"photocraft": AppState(latest_release=release_of(*suffixes), fetched_ms=FETCHED_MS)}
    if launcher is not None:
        apps["artcraft-launcher"] = launcher
    publish(site, apps)


# --- The preference table ---------------------------------------------------------------------


def test_the_preference_table_is_the_documented_one():
    assert PREFERRED_PACKAGES == {
        OS.WINDOWS: (PKG.MSI, PKG.PORTABLE_ZIP),
        OS.MACOS: (PKG.DMG,),
        OS.LINUX: (PKG.APP_IMAGE, PKG.DEB, PKG.RPM, PKG.TAR_GZ, PKG.FLATPAK),
        OS.FREEBSD: (PKG.TAR_GZ,),
        OS.WEB: (),
    }
    assert arch_order(OS.MACOS, ARCH.ARM64) == (ARCH.UNIVERSAL, ARCH.ARM64)
    assert arch_order(OS.MACOS, ARCH.UNIVERSAL) == (ARCH.UNIVERSAL,)
    assert arch_order(OS.WINDOWS, ARCH.ARM64) == (ARCH.ARM64,)
    assert arch_order(OS.MACOS, None) == (ARCH.UNIVERSAL, ARCH.ARM64, ARCH.X64)
    assert arch_order(OS.LINUX, None) == (ARCH.X64, ARCH.ARM64, ARCH.X86)


SUFFIX = {
    PKG.MSI: "windows-x64.msi",
    PKG.PORTABLE_ZIP: "windows-x64-portable.zip",
    PKG.DMG: "macos-universal.dmg",
    PKG.APP_IMAGE: "linux-x86_64.AppImage",
    PKG.DEB: "linux-x86_64.deb",
    PKG.RPM: "linux-x86_64.rpm",
    PKG.TAR_GZ: "linux-x86_64.tar.gz",
    PKG.FLATPAK: "linux-x86_64.flatpak",
}


@pytest.mark.parametrize("os", [OS.WINDOWS, OS.LINUX])
def test_each_package_type_wins_over_every_one_after_it(os: CraftAppOs):
    order = PREFERRED_PACKAGES[os]
    for start in range(len(order)):
        # Listed in reverse, so file order never decides.
        release = release_of(*(SUFFIX[p] for p in reversed(order[start:])))
        chosen = choose(release.assets, os, ARCH.X64)
        assert chosen is not None and chosen.platform is not None
        assert chosen.platform.package_type is order[start]


@pytest.mark.parametrize(
    ("files", "os", "arch", "package_type", "expected"),
    [
        # macOS: universal before the exact CPU, and the exact CPU when there's no universal one.
        (("macos-arm64.dmg", "macos-universal.dmg"), OS.MACOS, ARCH.ARM64, None, "macos-universal.dmg"),
        (("macos-x64.dmg", "macos-arm64.dmg"), OS.MACOS, ARCH.ARM64, None, "macos-arm64.dmg"),
        (("macos-x64.dmg",), OS.MACOS, ARCH.ARM64, None, None),
        (("macos-arm64.dmg",), OS.MACOS, ARCH.UNIVERSAL, None, None),
        # The command-line tools and AppImage update data are never chosen on their own...
        (("cli:macos-universal.zip",), OS.MACOS, ARCH.ARM64, None, None),
        (("linux-x86_64.AppImage.zsync",), OS.LINUX, ARCH.X64, None, None),
        # ... only when asked for by name.
        (("cli:macos-universal.zip",), OS.MACOS, ARCH.ARM64, PKG.CLI_ZIP, "cli:macos-universal.zip"),
        (
            ("linux-x86_64.AppImage.zsync",),
            OS.LINUX,
            ARCH.X64,
            PKG.APP_IMAGE_ZSYNC,
            "linux-x86_64.AppImage.zsync",
        ),
        # Elsewhere only the exact CPU fits.
        (("windows-x64.msi",), OS.WINDOWS, ARCH.ARM64, None, None),
        (("windows-x64.msi", "windows-arm64.msi"), OS.WINDOWS, ARCH.ARM64, None, "windows-arm64.msi"),
        (
            ("windows-x86-portable.zip", "windows-x64.msi"),
            OS.WINDOWS,
            ARCH.X86,
            None,
            "windows-x86-portable.zip",
        ),
        (("linux-aarch64.deb", "linux-x86_64.AppImage"), OS.LINUX, ARCH.ARM64, None, "linux-aarch64.deb"),
        # A named package type narrows the choice.
        (
            ("windows-x64.msi", "windows-x64-portable.zip"),
            OS.WINDOWS,
            ARCH.X64,
            PKG.PORTABLE_ZIP,
            "windows-x64-portable.zip",
        ),
        (("windows-x64.msi",), OS.WINDOWS, ARCH.X64, PKG.PORTABLE_ZIP, None),
        (
            ("freebsd-x86_64.tar.gz", "linux-x86_64.tar.gz"),
            OS.FREEBSD,
            ARCH.X64,
            None,
            "freebsd-x86_64.tar.gz",
        ),
        # An unknown CPU (the page's other cards): the usual CPU first, and the CPU before the format.
        (
            ("windows-arm64.msi", "windows-x64-portable.zip"),
            OS.WINDOWS,
            None,
            None,
            "windows-x64-portable.zip",
        ),
        (("macos-x64.dmg", "macos-arm64.dmg"), OS.MACOS, None, None, "macos-arm64.dmg"),
        # The browser build has no CPU: nothing names it.
        (("=photocraft-web-0.5.0.zip",), OS.WEB, ARCH.X64, None, None),
        (("=photocraft-web-0.5.0.zip",), OS.WEB, ARCH.X64, PKG.WEB_ZIP, None),
    ],
)
def test_choice(files, os, arch, package_type, expected):
    release = release_of(*files)
    chosen = choose(release.assets, os, arch, package_type)
    if expected is None:
        assert chosen is None
    else:
        assert chosen is not None and chosen.name == release_of(expected).assets[0].name


# --- Redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "file"),
    [
        ("photocraft/windows/x64", "windows-x64.msi"),
        ("photocraft/windows/arm64", "windows-arm64.msi"),
        ("photocraft/windows/x86", "windows-x86-portable.zip"),
        ("photocraft/windows/x64/portable_zip", "windows-x64-portable.zip"),
        ("photocraft/macos/arm64", "macos-universal.dmg"),
        ("photocraft/macos/x64", "macos-universal.dmg"),
        ("photocraft/macos/universal", "macos-universal.dmg"),
        ("photocraft/macos/arm64/cli_zip", "cli:macos-universal.zip"),
        ("photocraft/linux/x64", "linux-x86_64.AppImage"),
        ("photocraft/linux/arm64", "linux-aarch64.deb"),
        ("photocraft/linux/x64/rpm", "linux-x86_64.rpm"),
        ("photocraft/linux/x64/flatpak", "linux-x86_64.flatpak"),
        ("photocraft/linux/x64/app_image_zsync", "linux-x86_64.AppImage.zsync"),
        ("photocraft/freebsd/x64", "freebsd-x86_64.tar.gz"),
    ],
)
def test_redirects_to_the_chosen_file_of_the_latest_release(download_site, client, path, file):
    publish_photocraft(download_site, *EVERY_FILE)
    expected = release_of(file).assets[0].download_url
    for method in ("get", "head"):
        response = download(client, path, method)
        assert response.status_code == 302
        assert response["Location"] == expected
        assert response["Cache-Control"] == "public, max-age=60"


def test_a_new_release_moves_the_link(download_site, client):
    publish_photocraft(download_site, "windows-x64.msi")
    assert download(client, "photocraft/windows/x64")["Location"] == url_of(
        "photocraft-0.5.0-windows-x64.msi"
    )
    publish(
        download_site,
        {
            "photocraft": AppState(
                latest_release=release_of("windows-x64.msi", version="0.6.0"), fetched_ms=FETCHED_MS
            )
        },
    )
    assert download(client, "photocraft/windows/x64")["Location"] == url_of(
        "photocraft-0.6.0-windows-x64.msi", version="0.6.0"
    )


def test_every_path_redirects_to_a_stored_file_or_says_why_not(download_site, client):
    publish_photocraft(download_site, *EVERY_FILE)
    stored = {a.download_url for a in release_of(*EVERY_FILE).assets}
    redirected = set()
    spellings = [m.value for m in CraftAppPackageType] + [None, "exe"]
    for os, arch, package in product(
        [*(m.value for m in CraftAppOs), "ios"], [*(m.value for m in CraftAppArch), "ppc"], spellings
    ):
        path = f"photocraft/{os}/{arch}" + (f"/{package}" if package else "")
        response = download(client, path)
        if response.status_code == 302:
            assert response["Location"] in stored, path
            redirected.add(response["Location"])
        else:
            assert response.status_code == 404, path
            body = json.loads(response.content)
            assert set(body) == {"success", "error"} and body["success"] is False
            assert body["error"] and "\n" not in body["error"], path
    # Everything but the web build and the checksums is reachable; the arm64 dmg is shadowed by
    # the universal one.
    unreachable = {"photocraft-web-0.5.0.zip", "SHA256SUMS.txt", "photocraft-0.5.0-macos-arm64.dmg"}
    assert redirected == stored - {url_of(name) for name in unreachable}


def test_only_links_the_parser_accepted_are_ever_redirected_to(download_site, client):
    app = next(a for a in DEFAULT_APPS if a.key == "photocraft")
    body = demo_release(app, "0.5.0", release_of().published_at)  # type: ignore[arg-type]
    for asset in body["assets"]:
        if asset["name"].endswith("windows-x64.msi"):
            asset["browser_download_url"] = "https://downloads.evil.example/photocraft.msi"
    release = parse_release(json.dumps(body).encode(), app.repo)
    publish(download_site, {"photocraft": AppState(latest_release=release, fetched_ms=FETCHED_MS)})
    response = download(client, "photocraft/windows/x64")
    assert response.status_code == 302
    assert response["Location"].endswith("windows-x64-portable.zip"), "the tampered msi was dropped"
    assert download(client, "photocraft/windows/x64/msi").status_code == 404


def test_other_methods_are_refused(download_site, client):
    response = download(client, "photocraft/windows/x64", "post")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


# --- Every 404 reason ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "error", "cache_control"),
    [
        ("vectorcraft/windows/x64", "no app 'vectorcraft' is configured", "public, max-age=60"),
        (
            "photocraft/ios/arm64",
            "os 'ios' is unknown; one of: windows, macos, linux, freebsd, web",
            "public, max-age=60",
        ),
        (
            "photocraft/windows/amd64",
            "arch 'amd64' is unknown; one of: x64, x86, arm64, universal",
            "public, max-age=60",
        ),
        (
            "photocraft/windows/x64/exe",
            "package type 'exe' is unknown; one of: msi, portable_zip, dmg, cli_zip, app_image, "
            "app_image_zsync, deb, rpm, flatpak, tar_gz, web_zip",
            "public, max-age=60",
        ),
        (
            "artcraft-launcher/windows/x64",
            "ArtCraft Launcher has not been fetched from GitHub yet; try again in a minute",
            "no-store",
        ),
        ("photocraft/linux/arm64", "PhotoCraft 0.5.0 has no linux/arm64 file", "public, max-age=60"),
        ("photocraft/windows/x64/dmg", "PhotoCraft 0.5.0 has no windows/x64 dmg file", "public, max-age=60"),
        ("photocraft/web/x64", "PhotoCraft 0.5.0 has no web/x64 file", "public, max-age=60"),
    ],
)
def test_404_reasons(download_site, client, path, error, cache_control):
    publish_photocraft(download_site, "windows-x64.msi")
    for method in ("get", "head"):
        response = download(client, path, method)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response["Cache-Control"] == cache_control
    assert json.loads(download(client, path).content) == {"success": False, "error": error}


def test_404_for_a_repository_without_a_release(download_site, client):
    publish(download_site, {"photocraft": AppState(latest_release=None, fetched_ms=FETCHED_MS)})
    response = download(client, "photocraft/windows/x64")
    assert response.status_code == 404
    assert json.loads(response.content)["error"] == "PhotoCraft has no published release"


def test_a_made_up_app_key_is_shown_on_one_short_line(download_site, client):
    response = download(client, "evil%0Aline%0D" + "x" * 300 + "/windows/x64")
    error = json.loads(response.content)["error"]
    assert response.status_code == 404
    assert error == "no app 'evil?line?" + "x" * 30 + "…' is configured"


def test_an_unreadable_state_file_is_a_not_fetched_404_not_a_500(download_site, client):
    download_site.mkdir(parents=True)
    (download_site / "craft_apps_state.sqlite3").write_bytes(b"this is not a database" * 100)
    response = download(client, "photocraft/windows/x64")
    assert response.status_code == 404
    assert response["Cache-Control"] == "no-store"
    assert "not been fetched" in json.loads(response.content)["error"]


# --- A release as tauri-action publishes it ------------------------------------------------------

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
TAURI_FIXTURE = Path(__file__).parents[1] / "github" / "fixtures" / "tauri_action_release.json"
TAURI_DOWNLOADS = "https://github.com/storytold/artcraft/releases/download/artcraft-v0.37.0/"


@pytest.fixture
def tauri_site(state_dir: Path, settings, install_runtime) -> Path:
    """ArtCraft serving the fixture's release (tests/github/test_tauri_release.py reads it)."""
    settings.CRAFT_APPS = {"APPS": apps_setting((ARTCRAFT, ARTCRAFT_LAUNCHER)), "STATE_DIR": str(state_dir)}
    install_runtime(recheck_s=0.0)
    release = parse_release(TAURI_FIXTURE.read_bytes(), ARTCRAFT.repo)
    publish(state_dir, {"artcraft": AppState(latest_release=release, fetched_ms=FETCHED_MS)})
    return state_dir


@pytest.mark.parametrize(
    ("path", "file"),
    [
        ("artcraft/windows/x64", "ArtCraft_0.37.0_x64_en-US.msi"),
        ("artcraft/windows/x64/msi", "ArtCraft_0.37.0_x64_en-US.msi"),
        ("artcraft/macos/arm64", "ArtCraft_0.37.0_universal.dmg"),
        ("artcraft/macos/x64", "ArtCraft_0.37.0_universal.dmg"),
        ("artcraft/macos/universal/dmg", "ArtCraft_0.37.0_universal.dmg"),
        ("artcraft/linux/x64", "ArtCraft_0.37.0_amd64.AppImage"),
        ("artcraft/linux/x64/deb", "ArtCraft_0.37.0_amd64.deb"),
        ("artcraft/linux/x64/rpm", "ArtCraft-0.37.0-1.x86_64.rpm"),
    ],
)
def test_a_tauri_action_release_has_download_links(tauri_site, client, path, file):
    response = download(client, path)
    assert response.status_code == 302
    assert response["Location"] == TAURI_DOWNLOADS + file


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("artcraft/windows/arm64", "ArtCraft 0.37.0 has no windows/arm64 file"),
        # The macOS updater bundle (.app.tar.gz) is no Linux tar.gz.
        ("artcraft/linux/x64/tar_gz", "ArtCraft 0.37.0 has no linux/x64 tar_gz file"),
        ("artcraft/macos/universal/tar_gz", "ArtCraft 0.37.0 has no macos/universal tar_gz file"),
    ],
)
def test_a_tauri_action_releases_other_files_have_no_link(tauri_site, client, path, error):
    response = download(client, path)
    assert response.status_code == 404
    assert json.loads(response.content)["error"] == error


def test_a_tauri_action_release_is_answered_with_its_version_and_platforms(tauri_site, client):
    body = json.loads(client.get(RELEASE_INFO_URL).content)
    served = body["release_info"]["apps"]["artcraft"]["latest_release"]
    assert (served["tag"], served["version"]) == ("artcraft-v0.37.0", "0.37.0")
    platforms = {asset["name"]: asset["platform"] for asset in served["assets"]}
    assert platforms["ArtCraft_0.37.0_x64_en-US.msi"] == {
        "os": "windows",
        "arch": "x64",
        "package_type": "msi",
    }
    assert platforms["ArtCraft_0.37.0_universal.dmg"] == {
        "os": "macos",
        "arch": "universal",
        "package_type": "dmg",
    }
    assert platforms["ArtCraft_0.37.0_amd64.AppImage"] == {
        "os": "linux",
        "arch": "x64",
        "package_type": "app_image",
    }
    unplaced = sorted(name for name, platform in platforms.items() if platform is None)
    assert unplaced == sorted(
        [
            "ArtCraft_0.37.0_x64-setup.exe",
            "ArtCraft_universal.app.tar.gz",
            "ArtCraft_0.37.0_x64_en-US.msi.sig",
            "ArtCraft_0.37.0_x64-setup.exe.sig",
            "ArtCraft_universal.app.tar.gz.sig",
            "ArtCraft_0.37.0_amd64.AppImage.sig",
            "latest.json",
        ]
    )


def test_the_downloads_page_offers_a_tauri_action_releases_installers(tauri_site, client):
    response = client.get("/craft_apps/downloads/artcraft/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Version <strong>0.37.0</strong>" in page
    for main in ("artcraft/windows/x64", "artcraft/macos/universal", "artcraft/linux/x64"):
        assert f'href="/v1/craft_apps/download/{main}"' in page, main
    assert "ArtCraft_0.37.0_x64-setup.exe" in page  # listed with the other files
