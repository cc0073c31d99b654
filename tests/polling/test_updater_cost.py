"""What a release's Tauri updater files cost in requests, counted by the GitHub stand-in: the
figures docs/benchmarks.md ("Tauri updater files") gives, for a release with latest.json, one
with only .sig files and a Craft App release, over a first round and the rounds after it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.tauri.fake_release import tauri_action_release
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import PHOTOCRAFT, S

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
INTERVAL_S = 1800


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


def publish_tauri(github: FakeGitHub, *, with_manifest: bool) -> None:
    built = tauri_action_release(
        ARTCRAFT.repo, "ArtCraft", "0.37.0", PUBLISHED, web_url=github.url, api_url=github.url
    )
    release, files = built.release, dict(built.files)
    if not with_manifest:
        release = {**release, "assets": [a for a in release["assets"] if a["name"] != "latest.json"]}
        del files["latest.json"]
    github.publish(ARTCRAFT.repo, release, files=files)


def poller(root: Path, clock: FakeClock, github: FakeGitHub, app: AppSpec) -> Poller:
    store = StateStore(root)
    store.open_for_writing()
    lease = Lease(store, holder="host", clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    return Poller(
        config=PollConfig((app,), interval_ms=INTERVAL_S * S, max_backoff_ms=14_400 * S, web_url=github.url),
        github=GitHubClient(api_url=github.url, web_url=github.url, token=None, clock=clock),
        host=store,
        fence=lease.fence,
        clock=clock,
    )


def rounds(root: Path, clock: FakeClock, github: FakeGitHub, app: AppSpec) -> list[tuple[int, int, int]]:
    """(API requests, downloads, GitHub's quota used in its window so far) after a first round
    and after 3 rounds more (the stand-in's window is real time: the test ends within it)."""
    polling = poller(root, clock, github, app)
    figures = []
    for count in (1, 3):
        github.reset_requests()
        for _ in range(count):
            polling.tick()
            clock.advance(INTERVAL_S)
        api = [r for r in github.requests if r.path.startswith("/repos/")]
        web = [r for r in github.requests if "/releases/download/" in r.path]
        figures.append((len(api), len(web), _spent(polling)))
    return figures


def _spent(polling: Poller) -> int:
    quota = getattr(polling.github, "last_quota", None)
    assert quota is not None
    return int(quota.limit - quota.remaining)


def test_a_release_with_latest_json_costs_one_download_once(github: FakeGitHub, tmp_path: Path):
    publish_tauri(github, with_manifest=True)
    first, after = rounds(tmp_path, FakeClock(), github, ARTCRAFT)
    assert first == (1, 1, 1), "the latest release, then latest.json; only the first is quota"
    assert after == (3, 0, 4), "3 rounds of 304s: no download; the downloads used no quota"


def test_a_release_with_only_sig_files_costs_one_download_each_once(github: FakeGitHub, tmp_path: Path):
    publish_tauri(github, with_manifest=False)
    first, after = rounds(tmp_path, FakeClock(), github, ARTCRAFT)
    assert first == (1, 4, 1), "the MSI's, the NSIS setup's, the .app bundle's and the AppImage's .sig"
    assert after == (3, 0, 4)


def test_a_craft_app_release_costs_no_download(github: FakeGitHub, tmp_path: Path):
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.5.0", PUBLISHED))
    first, after = rounds(tmp_path, FakeClock(), github, PHOTOCRAFT)
    assert first == (1, 0, 1) and after == (3, 0, 4)
