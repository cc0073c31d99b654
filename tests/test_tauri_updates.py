"""The Tauri updater's rule, pure: which release a client is offered, whether it is newer, and
which updater file fits its platform."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest
import semver

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppReleaseInfo, Release, Rollout, UpdaterFile
from craft_apps.tauri.updates import Platform, offer, offered_release, parse_version, updater_file
from tests.support import release

FETCHED = datetime(2026, 10, 1, tzinfo=UTC)
KEYS = ("windows-x86_64", "windows-x86_64-nsis", "darwin-aarch64", "darwin-universal", "linux-x86_64")


def with_files(version: str, keys: tuple[str, ...] = KEYS, tag: str | None = None) -> Release:
    files = tuple(UpdaterFile(key, f"https://example.test/{version}/{key}", f"sig-{key}") for key in keys)
    made = replace(release(version), updater=files)
    return made if tag is None else replace(made, tag=tag)


def app(latest: Release | None, rollout: Rollout | None = None) -> AppReleaseInfo:
    return AppReleaseInfo("PhotoCraft", "storytold/photocraft", latest, FETCHED, rollout)


@pytest.mark.parametrize(
    ("platform", "keys"),
    [
        (Platform("windows", "x86_64"), ("windows-x86_64",)),
        (Platform("windows", "x86_64", "nsis"), ("windows-x86_64-nsis", "windows-x86_64")),
        (Platform("darwin", "x86_64", "app"), ("darwin-x86_64-app", "darwin-x86_64", "darwin-universal")),
        (Platform("linux", "armv7"), ("linux-armv7",)),
    ],
)
def test_the_keys_a_platform_looks_up(platform: Platform, keys: tuple[str, ...]):
    assert platform.updater_keys() == keys


def test_the_first_key_the_release_has_wins():
    made = with_files("1.0.0")
    assert updater_file(made, Platform("windows", "x86_64", "nsis")).platform == "windows-x86_64-nsis"  # type: ignore[union-attr]
    assert updater_file(made, Platform("windows", "x86_64", "msi")).platform == "windows-x86_64"  # type: ignore[union-attr]
    assert updater_file(made, Platform("darwin", "aarch64")).platform == "darwin-aarch64"  # type: ignore[union-attr]
    assert updater_file(made, Platform("darwin", "x86_64")).platform == "darwin-universal"  # type: ignore[union-attr]
    assert updater_file(made, Platform("linux", "aarch64")) is None


def test_the_rollout_rule_is_the_launchers():
    before, rolled = with_files("1.0.0"), with_files("1.1.0")
    listed = app(before, Rollout(rolled, 30))
    assert offered_release(listed, 0) is rolled
    assert offered_release(listed, 29) is rolled
    assert offered_release(listed, 30) is before
    assert offered_release(listed, None) is before
    assert offered_release(app(before), 0) is before
    assert offered_release(app(None), 5) is None


def test_only_a_newer_version_is_an_update():
    listed = app(with_files("1.2.0", tag="artcraft-v1.2.0"))
    windows = Platform("windows", "x86_64")
    update = offer(listed, windows, semver.Version.parse("1.1.9"), None)
    assert update is not None and update.version == "1.2.0"
    assert update.file.signature == "sig-windows-x86_64"
    assert offer(listed, windows, semver.Version.parse("1.2.0"), None) is None
    assert offer(listed, windows, semver.Version.parse("1.2.1-rc.1"), None) is None
    assert offer(listed, windows, semver.Version.parse("1.2.0-rc.1"), None) is not None
    assert offer(listed, Platform("linux", "i686"), semver.Version.parse("1.0.0"), None) is None


def test_a_tag_that_names_no_version_is_never_an_update():
    listed = app(with_files("1.2.0", tag="nightly"))
    assert offer(listed, Platform("windows", "x86_64"), semver.Version.parse("0.0.1"), None) is None


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("1.2.3", "1.2.3"), ("v1.2.3-rc.1+b.7", "1.2.3-rc.1+b.7"), ("1.2", None), ("", None), ("latest", None)],
)
def test_the_clients_version(text: str, parsed: str | None):
    version = parse_version(text)
    assert (None if version is None else str(version)) == parsed
