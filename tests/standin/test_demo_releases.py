"""The demo set: one realistic, deterministic GitHub release per Craft App."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime

from craft_apps.conf import DEFAULT_APPS
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.testing.demo_releases import TAURI_APP, demo_release, demo_releases

PHOTOCRAFT = DEFAULT_APPS[0]
LAUNCHER = AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher")
WHEN = datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)


def test_one_release_per_default_app_keyed_by_repository():
    releases = demo_releases()

    assert list(releases) == [app.repo for app in DEFAULT_APPS]
    assert len(releases) == 13
    assert len({r["tag_name"] for r in releases.values()}) > 5  # the apps are not all on one version


def test_the_release_has_the_fields_the_poller_reads_and_extras_it_must_ignore():
    release = demo_release(PHOTOCRAFT, "0.5.0", WHEN)

    assert release["tag_name"] == "v0.5.0"
    assert release["name"] == "PhotoCraft v0.5.0"
    assert release["draft"] is False
    assert release["prerelease"] is False
    assert release["html_url"] == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"
    assert release["published_at"] == "2026-10-08T14:52:50Z"
    assert {"id", "node_id", "url", "author", "created_at", "tarball_url", "zipball_url"} <= set(release)
    assert isinstance(release["author"], dict)
    assert release["created_at"] < release["published_at"]


def test_notes_are_a_few_kib_of_markdown():
    body = demo_release(PHOTOCRAFT, "0.5.0", WHEN)["body"]

    assert 2048 <= len(body.encode()) <= 8192
    assert body.startswith("# PhotoCraft 0.5.0\n")
    assert "\n## Fixes\n" in body
    assert "\n- " in body


def test_a_dozen_assets_follow_the_naming_scheme():
    names = [a["name"] for a in demo_release(PHOTOCRAFT, "0.5.0", WHEN)["assets"]]

    assert names == [
        "photocraft-0.5.0-windows-x64.msi",
        "photocraft-0.5.0-windows-arm64.msi",
        "photocraft-0.5.0-windows-x64-portable.zip",
        "photocraft-0.5.0-macos-universal.dmg",
        "photocraft-cli-0.5.0-macos-universal.zip",
        "photocraft-0.5.0-linux-x86_64.AppImage",
        "photocraft-0.5.0-linux-x86_64.AppImage.zsync",
        "photocraft-0.5.0-linux-x86_64.deb",
        "photocraft-0.5.0-linux-x86_64.rpm",
        "photocraft-0.5.0-linux-x86_64.flatpak",
        "photocraft-0.5.0-freebsd-x86_64.tar.gz",
        "photocraft-web-0.5.0.zip",
        "SHA256SUMS.txt",
    ]


def test_assets_carry_sizes_digests_and_download_urls_of_their_repository():
    release = demo_release(LAUNCHER, "0.6.3", WHEN)

    for asset in release["assets"]:
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", asset["digest"]), asset["name"]
        assert asset["size"] > 0
        assert asset["browser_download_url"] == (
            f"https://github.com/storytold/craft-launcher/releases/download/v0.6.3/{asset['name']}"
        )
        assert {"id", "node_id", "url", "content_type", "download_count", "uploader"} <= set(asset)
    msi = release["assets"][0]
    assert msi["name"] == "artcraft-launcher-0.6.3-windows-x64.msi"
    assert msi["size"] > 50 * 1024 * 1024  # installers are realistically large


def test_sha256sums_lists_every_other_asset_and_its_own_digest_is_real():
    assets = demo_release(PHOTOCRAFT, "0.5.0", WHEN)["assets"]
    *binaries, sums = assets
    content = "".join(f"{a['digest'][7:]}  {a['name']}\n" for a in binaries).encode()

    assert sums["name"] == "SHA256SUMS.txt"
    assert sums["size"] == len(content)
    assert sums["digest"] == "sha256:" + hashlib.sha256(content).hexdigest()


def test_the_same_arguments_give_the_same_release_and_other_versions_differ():
    first = demo_release(PHOTOCRAFT, "0.5.0", WHEN)

    assert demo_release(PHOTOCRAFT, "0.5.0", WHEN) == first
    assert demo_releases() == demo_releases()
    other = demo_release(PHOTOCRAFT, "0.5.1", WHEN)
    assert other["assets"][0]["digest"] != first["assets"][0]["digest"]
    assert other["id"] != first["id"]


def test_a_hyphenated_version_is_a_prerelease():
    assert demo_release(PHOTOCRAFT, "0.6.0-rc.1", WHEN)["prerelease"] is True


def test_web_url_moves_every_github_link():
    release = demo_release(PHOTOCRAFT, "0.5.0", WHEN, web_url="https://ghe.example.com/")

    assert release["html_url"] == "https://ghe.example.com/storytold/photocraft/releases/tag/v0.5.0"
    assert all(
        a["browser_download_url"].startswith(
            "https://ghe.example.com/storytold/photocraft/releases/download/"
        )
        for a in release["assets"]
    )
    assert "https://github.com" not in release["body"]


def test_the_project_parser_reads_every_demo_release_and_every_package():
    from craft_apps.github.parsing import parse_platform, parse_release

    for app in DEFAULT_APPS:
        if app.key == TAURI_APP:
            continue  # released as tauri-action releases it (tests/test_demo_tauri.py)
        raw = demo_releases()[app.repo]
        release = parse_release(json.dumps(raw).encode(), app.repo)

        assert release.tag == raw["tag_name"]
        assert release.published_at is not None
        assert len(release.assets) == 13  # none dropped: every link is the repository's own
        assert all(a.sha256 is not None for a in release.assets)
        platforms = {a.name: a.platform for a in release.assets}
        assert platforms.pop("SHA256SUMS.txt") is None
        assert None not in platforms.values(), app.key
        assert len({(p.os, p.arch, p.package_type) for p in platforms.values() if p}) == 12
        assert parse_platform(f"{app.key}-web-1.0.0.zip") is not None
