"""A release's Tauri updater files read from its latest.json or its .sig files
(craft_apps.tauri.files): tauri-action's release as the fixtures hold it, and hostile
files of every kind."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from craft_apps.github.parsing import parse_release, rejudge
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release, UpdaterFile
from craft_apps.tauri.fake_release import UPDATER_KEYS, tauri_action_release
from craft_apps.tauri.files import (
    MAX_MANIFEST_BYTES,
    MAX_PLATFORMS,
    MAX_SIGNATURE_BYTES,
    UpdaterRejected,
    from_signatures,
    read_manifest,
    updater_judged,
    updater_plan,
)
from tests.github.support import github_asset, github_release

FIXTURES = Path(__file__).parent / "fixtures"
REPO = "storytold/artcraft"
WEB = "https://github.com"
DOWNLOADS = f"{WEB}/{REPO}/releases/download/artcraft-v0.37.0/"
MSI = "ArtCraft_0.37.0_x64_en-US.msi"
APP = "ArtCraft_universal.app.tar.gz"
APPIMAGE = "ArtCraft_0.37.0_amd64.AppImage"
SETUP = "ArtCraft_0.37.0_x64-setup.exe"


def tauri_release(*, without: tuple[str, ...] = ()) -> Release:
    data = json.loads((FIXTURES / "tauri_action_release.json").read_bytes())
    data["assets"] = [asset for asset in data["assets"] if asset["name"] not in without]
    return parse_release(json.dumps(data).encode(), REPO, WEB)


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "tauri_action_latest.json").read_bytes())
    return data


def signature_of(name: str) -> str:
    return str(
        manifest()["platforms"]["windows-x86_64-nsis" if name == SETUP else _key_of(name)]["signature"]
    )


def _key_of(name: str) -> str:
    return {MSI: "windows-x86_64-msi", APP: "darwin-aarch64-app", APPIMAGE: "linux-x86_64-appimage"}[name]


def read(data: object, release: Release | None = None) -> tuple[dict[str, UpdaterFile], tuple[str, ...]]:
    found = read_manifest(json.dumps(data).encode(), release or tauri_release(), WEB)
    return {file.platform: file for file in found.files}, found.refused


# -- what is downloaded --------------------------------------------------------------------------


def test_a_release_with_latest_json_costs_that_one_download() -> None:
    plan = updater_plan(tauri_release())
    assert [(d.name, d.url, d.limit) for d in plan] == [
        ("latest.json", DOWNLOADS + "latest.json", MAX_MANIFEST_BYTES)
    ]


def test_without_latest_json_each_sig_of_an_updatable_file_is_downloaded() -> None:
    plan = updater_plan(tauri_release(without=("latest.json",)))
    assert sorted(d.name for d in plan) == sorted(f"{n}.sig" for n in (MSI, SETUP, APP, APPIMAGE))
    assert {d.limit for d in plan} == {MAX_SIGNATURE_BYTES}


def test_a_sig_whose_file_is_not_in_the_release_is_not_downloaded() -> None:
    plan = updater_plan(tauri_release(without=("latest.json", APP)))
    assert f"{APP}.sig" not in {d.name for d in plan} and len(plan) == 3


def test_a_craft_app_release_costs_nothing() -> None:
    release = parse_release(json.dumps(github_release()).encode(), "storytold/photocraft", WEB)
    assert updater_plan(release) == ()


# -- latest.json ----------------------------------------------------------------------------------


def test_tauri_actions_latest_json_gives_every_platform_with_its_own_link_and_signature() -> None:
    files, refused = read(manifest())
    assert refused == ()
    assert sorted(files) == sorted(key for key, _ in UPDATER_KEYS)
    assert files["windows-x86_64"].url == DOWNLOADS + MSI
    assert files["darwin-aarch64"].url == DOWNLOADS + APP
    assert (
        files["linux-x86_64-appimage"].signature
        == manifest()["platforms"]["linux-x86_64-appimage"]["signature"]
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "no platforms object"),
        (b'{"version": "0.37.0"}', "no platforms object"),
        (b'{"platforms": ["windows-x86_64"]}', "no platforms object"),
        (b"[" * 60_000, "not JSON"),  # deeper than the parser goes
        (b" " * (MAX_MANIFEST_BYTES + 1), f"over {MAX_MANIFEST_BYTES} bytes"),
    ],
)
def test_a_latest_json_without_usable_platforms_is_rejected_with_a_reason(body: bytes, reason: str) -> None:
    with pytest.raises(UpdaterRejected) as raised:
        read_manifest(body, tauri_release(), WEB)
    assert reason in raised.value.reason


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("a string", "not an object"),
        ({"url": DOWNLOADS + MSI}, "not a string"),
        ({"url": 7, "signature": "c2ln"}, "not a string"),
        ({"url": "https://evil.example/ArtCraft.msi", "signature": "c2ln"}, "not a file of this release"),
        (
            {"url": f"{WEB}/{REPO}/releases/download/artcraft-v0.36.0/{MSI}", "signature": "c2ln"},
            "not a file",
        ),
        ({"url": "http://github.com/" + DOWNLOADS[19:] + MSI, "signature": "c2ln"}, "not a file"),
        ({"url": DOWNLOADS + MSI, "signature": "not base64!"}, "not base64"),
        ({"url": DOWNLOADS + MSI, "signature": "c2ln\nZm9v"}, "not base64"),
        (
            {"url": DOWNLOADS + MSI, "signature": "A" * (MAX_SIGNATURE_BYTES + 1)},
            f"over {MAX_SIGNATURE_BYTES}",
        ),
    ],
)
def test_a_bad_platform_is_refused_alone(entry: object, problem: str) -> None:
    data = manifest()
    data["platforms"]["windows-x86_64"] = entry
    files, refused = read(data)
    assert "windows-x86_64" not in files and len(files) == len(UPDATER_KEYS) - 1
    assert len(refused) == 1 and "'windows-x86_64'" in refused[0] and problem in refused[0]


@pytest.mark.parametrize(
    "key", ["windows", "macos-x86_64", "darwin-arm64", "linux-x86_64-AppImage", "x" * 500]
)
def test_a_key_the_updater_would_not_ask_for_is_refused(key: str) -> None:
    data = {"platforms": {key: {"url": DOWNLOADS + MSI, "signature": "c2ln"}}}
    files, refused = read(data)
    assert files == {} and len(refused) == 1 and "not a Tauri platform key" in refused[0]
    assert len(refused[0]) < 200, "the key is cut in the line"


def test_past_the_platform_limit_the_rest_is_left_out() -> None:
    entry = {"url": DOWNLOADS + MSI, "signature": "c2ln"}
    keys = [f"windows-x86_64-b{n}" for n in range(MAX_PLATFORMS + 5)]
    files, refused = read({"platforms": dict.fromkeys(keys, entry)})
    assert len(files) == MAX_PLATFORMS and refused == (
        f"latest.json lists over {MAX_PLATFORMS} platforms; the rest are left out",
    )


def test_a_link_is_served_as_the_release_serves_the_asset() -> None:
    """A link that resolves to an asset's (``links.link_under``) is served as the asset's own."""
    data = {
        "platforms": {
            "windows-x86_64": {
                "url": DOWNLOADS.replace("github.com", "GitHub.com:443") + MSI,
                "signature": "c2ln",
            }
        }
    }
    files, _ = read(data)
    assert files["windows-x86_64"].url == DOWNLOADS + MSI


# -- the .sig files -------------------------------------------------------------------------------


def test_sig_files_give_the_keys_tauri_action_gives_them() -> None:
    release = tauri_release(without=("latest.json",))
    texts = {f"{name}.sig": signature_of(name).encode() for name in (MSI, SETUP, APP, APPIMAGE)}
    found = from_signatures(texts, release)
    assert found.refused == ()
    files = {file.platform: file for file in found.files}
    assert sorted(files) == sorted(key for key, _ in UPDATER_KEYS), "the same keys as its latest.json"
    by_manifest, _ = read(manifest())
    assert files == by_manifest


def test_a_sig_is_kept_byte_for_byte_and_a_bad_one_is_refused_alone() -> None:
    release = tauri_release(without=("latest.json",))
    texts = {
        f"{MSI}.sig": b"c2lnbmF0dXJl\n",
        f"{APPIMAGE}.sig": "ünicode".encode(),
        f"{APP}.sig": b"A" * 5000,
    }
    found = from_signatures(texts, release)
    assert {(f.platform, f.signature) for f in found.files} == {
        ("windows-x86_64", "c2lnbmF0dXJl\n"),
        ("windows-x86_64-msi", "c2lnbmF0dXJl\n"),
    }
    assert len(found.refused) == 2


def test_nsis_takes_the_plain_windows_key_only_without_an_msi() -> None:
    release = tauri_release(without=("latest.json",))
    found = from_signatures({f"{SETUP}.sig": b"c2V0dXA="}, release)
    assert {f.platform for f in found.files} == {"windows-x86_64", "windows-x86_64-nsis"}
    assert all(f.url == DOWNLOADS + SETUP for f in found.files)


# -- stored updater files judged again ------------------------------------------------------------


def test_stored_updater_files_keep_only_what_the_rules_pass() -> None:
    release = tauri_release()
    good = UpdaterFile("windows-x86_64", DOWNLOADS + MSI, "c2ln")
    stored = (
        good,
        UpdaterFile("windows-x86_64", DOWNLOADS + SETUP, "c2ln"),  # the key twice: the first wins
        UpdaterFile("darwin-aarch64", "https://evil.example/x.tar.gz", "c2ln"),
        UpdaterFile("linux-x86_64", DOWNLOADS + APPIMAGE, "not base64!"),
        UpdaterFile("beos-x86_64", DOWNLOADS + MSI, "c2ln"),
    )
    assert updater_judged(stored, release, WEB) == (good,)


def test_rejudging_a_stored_release_keeps_its_good_updater_files() -> None:
    release = replace(
        tauri_release(),
        updater=(
            UpdaterFile("windows-x86_64", DOWNLOADS + MSI, "c2ln"),
            UpdaterFile("linux-x86_64", "https://evil.example/x", "c2ln"),
        ),
    )
    judged = rejudge(release, REPO, WEB)
    assert judged is not None and judged.updater == (UpdaterFile("windows-x86_64", DOWNLOADS + MSI, "c2ln"),)


def test_a_real_minisign_shaped_signature_passes() -> None:
    text = "untrusted comment: signature from tauri secret key\nRUQ=\ntrusted comment: t\nAAA=\n"
    encoded = base64.b64encode(text.encode()).decode()
    built = tauri_action_release(
        REPO, "ArtCraft", "0.37.0", datetime(2026, 11, 20, tzinfo=UTC), signatures={MSI: encoded}
    )
    release = parse_release(json.dumps(built.release).encode(), REPO, WEB)
    found = read_manifest(built.files["latest.json"], release, WEB)
    assert {f.platform: f.signature for f in found.files}["windows-x86_64"] == encoded


def test_tauri_1_updater_bundles_take_their_keys_before_the_installers() -> None:
    """Tauri 1 (or ``createUpdaterArtifacts: "v1Compatible"``) signs ``.msi.zip`` and
    ``.AppImage.tar.gz`` bundles; with an installer's .sig beside, the bundle keeps the key."""
    names = [
        "App_1.0.0_x64_en-US.msi",
        "App_1.0.0_x64_en-US.msi.sig",
        "App_1.0.0_x64_en-US.msi.zip",
        "App_1.0.0_x64_en-US.msi.zip.sig",
        "App_1.0.0_amd64.AppImage.tar.gz",
        "App_1.0.0_amd64.AppImage.tar.gz.sig",
        "App_1.0.0_amd64.deb",
        "App_1.0.0_amd64.deb.sig",
        "App_1.0.0_universal.dmg",
        "App_1.0.0_universal.dmg.sig",
    ]
    data = github_release(tag_name="v1.0.0", assets=[github_asset(name) for name in names])
    bare = parse_release(json.dumps(data).encode(), "storytold/photocraft", WEB)
    plan = updater_plan(bare)
    assert "App_1.0.0_universal.dmg.sig" not in {d.name for d in plan}, "the updater never installs a .dmg"
    found = from_signatures({d.name: b"c2ln" for d in plan}, bare)
    base = f"{WEB}/storytold/photocraft/releases/download/v1.0.0/"
    assert {f.platform: f.url[len(base) :] for f in found.files} == {
        "windows-x86_64": "App_1.0.0_x64_en-US.msi.zip",
        "windows-x86_64-msi": "App_1.0.0_x64_en-US.msi.zip",
        "linux-x86_64": "App_1.0.0_amd64.AppImage.tar.gz",
        "linux-x86_64-appimage": "App_1.0.0_amd64.AppImage.tar.gz",
        "linux-x86_64-deb": "App_1.0.0_amd64.deb",
    }
