"""``poll_craft_releases --once`` as a real process against the GitHub stand-in, which serves a
tauri-action release and its small files on its own web side: the state file the endpoint reads
holds the release with its updater files, read with one download."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.tauri.fake_release import UPDATER_KEYS, tauri_action_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.polling.processes import Poller, poller_environment

pytestmark = pytest.mark.slow

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        built = tauri_action_release(
            ARTCRAFT.repo,
            "ArtCraft",
            "0.37.0",
            datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC),
            web_url=server.url,
            api_url=server.url,
        )
        server.publish(ARTCRAFT.repo, built.release, files=built.files)
        yield server


def test_a_round_saves_the_release_with_its_updater_files(
    github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    env = {
        **poller_environment(github, state_dir, CRAFT_APPS_RELEASE_GITHUB_WEB_URL=github.url),
        "CRAFT_APPS_RELEASE_APPS": "artcraft=ArtCraft=storytold/artcraft",
    }
    poller = Poller(env, tmp_path / "poller.log", "--once")
    assert poller.finish() == 0, poller.output()
    release = StateStore(state_dir).read().apps["artcraft"].latest_release
    assert release is not None and release.version == "0.37.0"
    files = {f.platform: f for f in release.updater}
    assert sorted(files) == sorted(key for key, _ in UPDATER_KEYS)
    assert (
        files["windows-x86_64"].url
        == f"{github.url}/storytold/artcraft/releases/download/artcraft-v0.37.0/ArtCraft_0.37.0_x64_en-US.msi"
    )
    downloads = [r.path for r in github.requests if "/releases/download/" in r.path]
    assert downloads == ["/storytold/artcraft/releases/download/artcraft-v0.37.0/latest.json"]
    assert "couldn't read the updater files" not in poller.output()
