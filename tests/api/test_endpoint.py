"""GET/HEAD /v1/craft_apps/release_info: the exact JSON contract, caching and never failing."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import datetime
from pathlib import Path

from django.test import Client, override_settings

from craft_apps.api import caching, representation
from craft_apps.api.runtime import reset
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import (
    AppState,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
)
from craft_apps.kernel.instants import datetime_to_ms
from tests.support import RELEASE_INFO_URL as URL
from tests.support import SHA, publish

EARLY_MS = datetime_to_ms(datetime(2026, 10, 10, 12, 0, 0, 125000, tzinfo=UTC))
LATE_MS = datetime_to_ms(datetime(2026, 10, 10, 12, 5, 0, tzinfo=UTC))

# Every os, arch and package type, a platform without arch, an asset without platform or digest.
PLATFORMS = [
    ("windows-x64.msi", AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI)),
    (
        "windows-x86-portable.zip",
        AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X86, CraftAppPackageType.PORTABLE_ZIP),
    ),
    ("macos-universal.dmg", AssetPlatform(CraftAppOs.MACOS, CraftAppArch.UNIVERSAL, CraftAppPackageType.DMG)),
    (
        "cli-macos-universal.zip",
        AssetPlatform(CraftAppOs.MACOS, CraftAppArch.UNIVERSAL, CraftAppPackageType.CLI_ZIP),
    ),
    (
        "linux-arm64.AppImage",
        AssetPlatform(CraftAppOs.LINUX, CraftAppArch.ARM64, CraftAppPackageType.APP_IMAGE),
    ),
    (
        "linux-x64.AppImage.zsync",
        AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, CraftAppPackageType.APP_IMAGE_ZSYNC),
    ),
    ("linux-x64.deb", AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, CraftAppPackageType.DEB)),
    ("linux-x64.rpm", AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, CraftAppPackageType.RPM)),
    ("linux-x64.flatpak", AssetPlatform(CraftAppOs.LINUX, CraftAppArch.X64, CraftAppPackageType.FLATPAK)),
    ("freebsd-x64.tar.gz", AssetPlatform(CraftAppOs.FREEBSD, CraftAppArch.X64, CraftAppPackageType.TAR_GZ)),
    ("web.zip", AssetPlatform(CraftAppOs.WEB, None, CraftAppPackageType.WEB_ZIP)),
    ("SHA256SUMS.txt", None),
]


def full_release() -> Release:
    prefix = "https://github.com/storytold/photocraft/releases/download/v0.5.0/"
    assets = tuple(
        ReleaseAsset(
            name=f"photocraft-0.5.0-{suffix}",
            size_bytes=index,
            download_url=prefix + f"photocraft-0.5.0-{suffix}",
            sha256=None if platform is None else SHA,
            platform=platform,
        )
        for index, (suffix, platform) in enumerate(PLATFORMS)
    )
    return Release(
        tag="v0.5.0",
        version="0.5.0",
        name="PhotoCraft v0.5.0",
        published_at=datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC),
        html_url="https://github.com/storytold/photocraft/releases/tag/v0.5.0",
        prerelease=False,
        notes_markdown="## Notes\n\n- ünïcode ✓",
        assets=assets,
    )


def expected_asset(index: int, suffix: str, platform: AssetPlatform | None) -> dict[str, object]:
    name = f"photocraft-0.5.0-{suffix}"
    return {
        "name": name,
        "size_bytes": index,
        "download_url": "https://github.com/storytold/photocraft/releases/download/v0.5.0/" + name,
        "sha256": None if platform is None else SHA,
        "platform": None
        if platform is None
        else {
            "os": platform.os.value,
            "arch": None if platform.arch is None else platform.arch.value,
            "package_type": platform.package_type.value,
        },
    }


def get(client: Client) -> tuple[int, dict[str, object], str]:
    response = client.get(URL)
    return response.status_code, json.loads(response.content), response["Cache-Control"]


def test_the_full_answer_is_exactly_the_contract(site: Path, client: Client):
    publish(
        site,
        {
            "photocraft": AppState(latest_release=full_release(), fetched_ms=LATE_MS, etag='"e1"'),
            "artcraft-launcher": AppState(latest_release=None, fetched_ms=EARLY_MS),
        },
    )
    status, body, cache_control = get(client)
    assert status == 200
    assert cache_control == caching.CACHEABLE
    assert body == {
        "success": True,
        "release_info": {
            "apps": {
                "artcraft-launcher": {
                    "name": "ArtCraft Launcher",
                    "repo": "storytold/craft-launcher",
                    "latest_release": None,
                    "app_last_fetched": "2026-10-10T12:00:00.125Z",
                },
                "photocraft": {
                    "name": "PhotoCraft",
                    "repo": "storytold/photocraft",
                    "latest_release": {
                        "tag": "v0.5.0",
                        "version": "0.5.0",
                        "name": "PhotoCraft v0.5.0",
                        "published_at": "2026-10-08T14:52:50Z",
                        "html_url": "https://github.com/storytold/photocraft/releases/tag/v0.5.0",
                        "prerelease": False,
                        "notes_markdown": "## Notes\n\n- ünïcode ✓",
                        "assets": [expected_asset(i, s, p) for i, (s, p) in enumerate(PLATFORMS)],
                    },
                    "app_last_fetched": "2026-10-10T12:05:00Z",
                },
            },
            "last_fetched": "2026-10-10T12:00:00.125Z",
        },
        "app_renames": [],
        "repo_renames": [],
        "important_notices": {"announcements": [], "alerts": []},
    }
    assert list(body["release_info"]["apps"]) == ["artcraft-launcher", "photocraft"]  # type: ignore[index]


def test_every_enum_value_appears_in_the_full_answer(site: Path, client: Client):
    publish(site, {"photocraft": AppState(latest_release=full_release(), fetched_ms=LATE_MS)})
    text = client.get(URL).content.decode()
    for enum in (CraftAppOs, CraftAppArch, CraftAppPackageType):
        for member in enum:
            assert f'"{member.value}"' in text, member


def test_a_cold_host_lists_every_app_unfetched_and_is_not_cacheable(site: Path, client: Client):
    status, body, cache_control = get(client)
    assert status == 200
    assert cache_control == "no-store"
    assert body["release_info"] == {
        "apps": {
            "artcraft-launcher": {
                "name": "ArtCraft Launcher",
                "repo": "storytold/craft-launcher",
                "latest_release": None,
                "app_last_fetched": None,
            },
            "photocraft": {
                "name": "PhotoCraft",
                "repo": "storytold/photocraft",
                "latest_release": None,
                "app_last_fetched": None,
            },
        },
        "last_fetched": None,
    }


def test_last_fetched_stays_null_until_every_app_was_fetched(site: Path, client: Client):
    publish(site, {"photocraft": AppState(latest_release=full_release(), fetched_ms=LATE_MS)})
    _, body, cache_control = get(client)
    assert body["release_info"]["last_fetched"] is None  # type: ignore[index]
    assert body["release_info"]["apps"]["photocraft"]["app_last_fetched"] == "2026-10-10T12:05:00Z"  # type: ignore[index]
    assert cache_control == "no-store"


def test_the_default_list_serves_thirteen_apps_including_the_launcher(state_dir: Path, settings, client):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir)}  # the process's runtime forgets at once
    apps = get(client)[1]["release_info"]["apps"]  # type: ignore[index]
    assert len(apps) == 13
    assert apps["artcraft-launcher"]["repo"] == "storytold/craft-launcher"


def test_head_has_the_headers_and_no_body(site: Path, client: Client):
    publish(site, {key: AppState(fetched_ms=LATE_MS) for key in ("photocraft", "artcraft-launcher")})
    get_response = client.get(URL)
    head_response = client.head(URL)
    assert head_response.status_code == 200
    assert head_response.content == b""
    assert head_response["Cache-Control"] == caching.CACHEABLE
    assert head_response["Content-Length"] == str(len(get_response.content))
    assert head_response["Content-Type"] == "application/json"


def test_a_matching_etag_gets_304(site: Path, client: Client):
    first = client.get(URL)
    second = client.get(URL, headers={"If-None-Match": first["ETag"]})
    assert second.status_code == 304
    assert second.content == b""
    assert client.get(URL, headers={"If-None-Match": '"other"'}).status_code == 200


def test_other_methods_are_not_allowed(site: Path, client: Client):
    response = client.post(URL)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


def test_an_unchanged_state_is_neither_read_nor_serialized_again(site: Path, client: Client, monkeypatch):
    publish(site, {"photocraft": AppState(fetched_ms=LATE_MS)})
    calls: list[str] = []
    real_encode = representation.encode_answer

    def counting_encode(info, *notices):
        calls.append("encode")
        return real_encode(info, *notices)

    monkeypatch.setattr("craft_apps.api.answer.encode_answer", counting_encode)
    first = client.get(URL).content
    second = client.get(URL).content
    assert calls == ["encode"]
    assert first == second
    publish(site, {"photocraft": AppState(fetched_ms=LATE_MS + 1000)})
    third = client.get(URL).content
    assert calls == ["encode", "encode"]
    assert b"12:05:01Z" in third


def test_a_new_release_shows_on_the_next_request(site: Path, client: Client):
    publish(site, {"photocraft": AppState(latest_release=None, fetched_ms=LATE_MS)})
    assert get(client)[1]["release_info"]["apps"]["photocraft"]["latest_release"] is None  # type: ignore[index]
    publish(site, {"photocraft": AppState(latest_release=full_release(), fetched_ms=LATE_MS + 1)})
    latest = get(client)[1]["release_info"]["apps"]["photocraft"]["latest_release"]  # type: ignore[index]
    assert latest["tag"] == "v0.5.0"


def test_the_state_file_is_looked_at_no_more_than_every_tenth_of_a_second(
    site: Path, monkeypatch, install_runtime
):
    clock = [100.0]
    install_runtime(monotonic=lambda: clock[0])
    client = Client()
    store = publish(site, {"photocraft": AppState(fetched_ms=LATE_MS)})
    looks: list[int] = []
    real_marker = store.version_marker

    def counting_marker(self):
        looks.append(1)
        return real_marker()

    monkeypatch.setattr(type(store), "version_marker", counting_marker)
    first = client.get(URL).content
    publish(site, {"photocraft": AppState(fetched_ms=LATE_MS + 1000)})
    clock[0] += 0.099
    assert client.get(URL).content == first, "within 0.1 s the kept answer stands"
    assert len(looks) == 1
    clock[0] += 0.002
    assert b"12:05:01Z" in client.get(URL).content, "then the change shows"
    assert len(looks) == 2


class TestNeverFails:
    def test_a_missing_state_file_gives_the_not_fetched_answer(self, site: Path, client: Client):
        assert not site.exists()
        status, body, cache_control = get(client)
        assert (status, cache_control) == (200, "no-store")
        assert body["success"] is True
        assert not site.exists(), "a reader never creates the state file"

    def test_a_corrupt_state_file_gives_the_not_fetched_answer_and_one_log_line(
        self, site: Path, client: Client, caplog
    ):
        site.mkdir(mode=0o700)
        store_path = publish_path(site)
        store_path.write_bytes(b"this is not a database" * 100)
        with caplog.at_level(logging.WARNING, logger="craft_apps.api.views"):
            for _ in range(3):
                status, body, cache_control = get(client)
                assert (status, cache_control) == (200, "no-store")
                assert body["release_info"]["last_fetched"] is None  # type: ignore[index]
        lines = [r for r in caplog.records if r.name == "craft_apps.api.views"]
        assert len(lines) == 1
        assert "\n" not in lines[0].getMessage()

    def test_a_corrupted_file_after_a_good_answer_keeps_serving_the_last_good_one(
        self, site: Path, client: Client
    ):
        store = publish(
            site, {key: AppState(fetched_ms=LATE_MS) for key in ("photocraft", "artcraft-launcher")}
        )
        good = client.get(URL)
        assert good["Cache-Control"] == caching.CACHEABLE
        store.close()
        for suffix in ("-wal", "-shm"):
            Path(str(store.path) + suffix).unlink(missing_ok=True)
        store.path.write_bytes(b"\0garbage" * 1000)
        later = client.get(URL)
        assert later.status_code == 200
        assert later.content == good.content
        assert later["Cache-Control"] == caching.CACHEABLE

    def test_a_deleted_file_after_a_good_answer_keeps_serving_it_with_one_log_line(
        self, site: Path, client: Client, caplog
    ):
        store = publish(
            site, {key: AppState(fetched_ms=LATE_MS) for key in ("photocraft", "artcraft-launcher")}
        )
        good = client.get(URL)
        assert good["Cache-Control"] == caching.CACHEABLE
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(store.path) + suffix).unlink(missing_ok=True)
        with caplog.at_level(logging.INFO, logger="craft_apps.api.views"):
            for _ in range(5):
                later = client.get(URL)
                assert (later.status_code, later.content) == (200, good.content)
                assert later["Cache-Control"] == caching.CACHEABLE
            publish(site, {key: AppState(fetched_ms=LATE_MS) for key in ("photocraft", "artcraft-launcher")})
            assert client.get(URL).content == good.content
        lines = [r.getMessage() for r in caplog.records if r.name == "craft_apps.api.views"]
        assert len(lines) == 2, lines
        assert "serving the last good answer" in lines[0] and f"{store.path} is missing" in lines[0]
        assert "readable again" in lines[1]
        assert not any("\n" in line for line in lines)

    def test_a_locked_state_file_still_answers(self, site: Path, client: Client):
        store = publish(site, {"photocraft": AppState(fetched_ms=LATE_MS)})
        store.close()
        locker = sqlite3.connect(store.path, timeout=0.1)
        try:
            locker.execute("PRAGMA locking_mode=EXCLUSIVE")
            locker.execute("BEGIN EXCLUSIVE")
            reset()
            response = client.get(URL)
            assert response.status_code == 200
            assert json.loads(response.content)["success"] is True
        finally:
            locker.rollback()
            locker.close()


def publish_path(state_dir: Path) -> Path:
    from craft_apps.host.store import StateStore

    return StateStore(state_dir).path


def test_the_app_list_follows_the_settings_at_call_time(state_dir: Path, client: Client):
    with override_settings(CRAFT_APPS={"APPS": "solo=Solo=org/solo", "STATE_DIR": str(state_dir)}):
        assert list(get(client)[1]["release_info"]["apps"]) == ["solo"]  # type: ignore[index]
