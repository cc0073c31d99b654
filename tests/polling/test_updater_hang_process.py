"""``poll_craft_releases --once`` as a real process while one app's ``latest.json`` hangs (the
GitHub stand-in holds it open without an answer): every other app, another Tauri app's updater
files included, is in the state file while that download is still open, and the process ends
once the download's 10 s bound cuts it. How long it takes is ``bench.updater_hang``'s figure."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.tauri.fake_release import UPDATER_KEYS, tauri_action_release
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.polling.processes import Poller, poller_environment, wait_until
from tests.support import PHOTOCRAFT

pytestmark = pytest.mark.slow

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")  # its latest.json hangs
SOUNDCRAFT = AppSpec("soundcraft", "SoundCraft", "storytold/soundcraft")
APPS = (ARTCRAFT, SOUNDCRAFT, PHOTOCRAFT)
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
HELD = "/storytold/artcraft/releases/download/artcraft-v0.37.0/latest.json"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app, version in ((ARTCRAFT, "0.37.0"), (SOUNDCRAFT, "1.2.0")):
            built = tauri_action_release(
                app.repo, app.name, version, PUBLISHED, web_url=server.url, api_url=server.url
            )
            server.publish(app.repo, built.release, files=built.files)
        server.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED, server.url, server.url))
        server.faults.hold_download(HELD)
        yield server


def test_a_hanging_latest_json_holds_back_no_other_app_and_the_round_ends(
    github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    env = {
        **poller_environment(github, state_dir, CRAFT_APPS_RELEASE_GITHUB_WEB_URL=github.url),
        "CRAFT_APPS_RELEASE_APPS": ",".join(f"{a.key}={a.name}={a.repo}" for a in APPS),
    }
    poller = Poller(env, tmp_path / "poller.log", "--once")
    try:
        wait_until(lambda: any(r.path == HELD for r in github.requests), 20, "the held download")
        wait_until(lambda: _others_served(state_dir), 20, "the other apps in the state file")
        assert github.faults.held_open() == 1, "the hanging download is still open"
    finally:
        code = poller.finish(timeout=60)  # the download's 10 s bound ends it
    assert code == 0, poller.output()
    assert github.faults.held_open() == 0
    assert "latest.json: no complete answer within 10 s" in poller.output()
    artcraft = StateStore(state_dir).read().apps["artcraft"].latest_release
    assert artcraft is not None and artcraft.version == "0.37.0" and artcraft.updater == ()


def _others_served(state_dir: Path) -> bool:
    """Whether the state file holds ArtCraft's release and every other app's, SoundCraft's with
    its updater files."""
    try:
        snapshot = StateStore(state_dir).read()
    except StateUnavailable:
        return False  # not made yet
    soundcraft = _latest(snapshot, "soundcraft")
    return (
        soundcraft is not None
        and len(soundcraft) == len(UPDATER_KEYS)
        and _latest(snapshot, "artcraft") is not None
        and _latest(snapshot, "photocraft") is not None
    )


def _latest(snapshot: StateSnapshot, key: str) -> tuple[object, ...] | None:
    """The updater files of the app's latest release; None without a release."""
    state = snapshot.apps.get(key)
    release = None if state is None else state.latest_release
    return None if release is None else release.updater
