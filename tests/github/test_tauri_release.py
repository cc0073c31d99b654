"""A release as tauri-action publishes it (tests/github/fixtures/tauri_action_release.json, built
by craft_apps.tauri.fake_release to tauri-action's and the bundler's names), read by the parser
and served by the GitHub stand-in."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.github.client import GitHubClient
from craft_apps.github.parsing import read_release
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AssetPlatform, CraftAppArch, CraftAppOs, CraftAppPackageType
from craft_apps.kernel.source import Fetched
from craft_apps.tauri.fake_release import tauri_action_release
from craft_apps.tauri.names import TauriRole, tauri_asset
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub

FIXTURES = Path(__file__).parent / "fixtures"
REPO = "storytold/artcraft"
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
P = CraftAppPackageType
# What each file of the fixture is served as (docs/endpoint.md's table).
PLATFORMS: dict[str, AssetPlatform | None] = {
    "ArtCraft_0.37.0_x64_en-US.msi": AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, P.MSI),
    "ArtCraft_0.37.0_x64-setup.exe": None,
    "ArtCraft_0.37.0_universal.dmg": AssetPlatform(CraftAppOs.MACOS, CraftAppArch.UNIVERSAL, P.DMG),
    "ArtCraft_universal.app.tar.gz": None,
    "ArtCraft_0.37.0_amd64.AppImage": AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, P.APP_IMAGE),
    "ArtCraft_0.37.0_amd64.deb": AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, P.DEB),
    "ArtCraft-0.37.0-1.x86_64.rpm": AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, P.RPM),
    "ArtCraft_0.37.0_x64_en-US.msi.sig": None,
    "ArtCraft_0.37.0_x64-setup.exe.sig": None,
    "ArtCraft_universal.app.tar.gz.sig": None,
    "ArtCraft_0.37.0_amd64.AppImage.sig": None,
    "latest.json": None,
}


def fixture_bytes() -> bytes:
    return (FIXTURES / "tauri_action_release.json").read_bytes()


def test_the_stand_ins_release_is_the_fixture() -> None:
    built = tauri_action_release(REPO, "ArtCraft", "0.37.0", PUBLISHED)
    assert built.release == json.loads(fixture_bytes())
    assert built.files["latest.json"] + b"\n" == (FIXTURES / "tauri_action_latest.json").read_bytes()


def test_a_tauri_action_release_is_read_with_its_version_and_platforms() -> None:
    parsed = read_release(fixture_bytes(), REPO)
    release = parsed.release
    assert (release.tag, release.version, release.name) == ("artcraft-v0.37.0", "0.37.0", "ArtCraft v0.37.0")
    assert parsed.dropped == ()
    assert {asset.name: asset.platform for asset in release.assets} == PLATFORMS
    # The count: 0 of the 5 installers the contract can name had a platform.
    assert sum(asset.platform is not None for asset in release.assets) == 5


def test_latest_json_names_the_releases_own_files_and_their_signatures() -> None:
    built = tauri_action_release(REPO, "ArtCraft", "0.37.0", PUBLISHED)
    manifest = json.loads(built.files["latest.json"])
    links = {asset["browser_download_url"]: asset["name"] for asset in built.release["assets"]}
    assert manifest["version"] == "0.37.0"
    for key, entry in manifest["platforms"].items():
        name = links[entry["url"]]
        found = tauri_asset(name)
        assert found is not None and found.role in (TauriRole.INSTALLER, TauriRole.UPDATER_BUNDLE), key
        assert key.startswith(f"{found.target}-"), key
        assert entry["signature"].encode() == built.files[f"{name}.sig"]
    sizes = {asset["name"]: asset["size"] for asset in built.release["assets"]}
    assert all(sizes[name] == len(content) for name, content in built.files.items())


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeGitHub() as server:
        server.web_url = server.url  # links lead to the stand-in itself
        yield server


def test_the_stand_in_publishes_it_and_serves_its_small_files(stand_in: FakeGitHub) -> None:
    built = tauri_action_release(REPO, "ArtCraft", "0.37.0", PUBLISHED, web_url=stand_in.url)
    stand_in.publish(REPO, built.release, built.files)
    with GitHubClient(api_url=stand_in.url, web_url=stand_in.url, token=None, clock=FakeClock()) as client:
        outcome = client.fetch_latest_release(REPO, None)
    assert isinstance(outcome, Fetched) and outcome.release is not None
    assert outcome.release.version == "0.37.0"
    assets = {asset.name: asset for asset in outcome.release.assets}
    assert {name: asset.platform for name, asset in assets.items()} == PLATFORMS
    for name in ("latest.json", "ArtCraft_universal.app.tar.gz.sig"):
        with urllib.request.urlopen(assets[name].download_url, timeout=5) as response:
            assert response.read() == built.files[name]
    with urllib.request.urlopen(assets["ArtCraft_0.37.0_universal.dmg"].download_url, timeout=5) as response:
        assert b"a stand-in for this file" in response.read()
