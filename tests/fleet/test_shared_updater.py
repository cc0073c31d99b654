"""A release's Tauri updater files shared through a real redis-server: the host that reads them
shares them with the release, and another host serves them without downloading anything. GitHub
is the stand-in, serving the release's files on its own web side."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis

from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, PollMode, Release
from craft_apps.kernel.source import UpdaterOutcome, UpdaterSource
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.tauri.fake_release import UPDATER_KEYS, tauri_action_release
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import S

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
SOUNDCRAFT = AppSpec("soundcraft", "SoundCraft", "storytold/soundcraft")
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        built = tauri_action_release(
            ARTCRAFT.repo, "ArtCraft", "0.37.0", PUBLISHED, web_url=server.url, api_url=server.url
        )
        server.publish(ARTCRAFT.repo, built.release, files=built.files)
        yield server


def host(
    name: str,
    root: Path,
    clock: FakeClock,
    github: FakeGitHub,
    client: redis.Redis,
    apps: tuple[AppSpec, ...] = (ARTCRAFT,),
) -> Poller:
    store = StateStore(root / name)
    store.open_for_writing()
    lease = Lease(store, holder=name, clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    poller = Poller(
        config=PollConfig(apps, interval_ms=1800 * S, max_backoff_ms=14_400 * S, web_url=github.url),
        github=GitHubClient(api_url=github.url, web_url=github.url, token=None, clock=clock),
        host=store,
        fence=lease.fence,
        clock=clock,
        shared=SharedStore(client, hostname=name),
    )
    poller.load_host_state()
    return poller


def downloads(github: FakeGitHub) -> list[str]:
    return [r.path for r in github.requests if "/releases/download/" in r.path]


def test_a_second_host_serves_the_updater_files_without_downloading(
    github: FakeGitHub, redis_client: redis.Redis, tmp_path: Path, fake_clock: FakeClock
):
    first = host("host-a", tmp_path, fake_clock, github, redis_client)
    assert first.tick().mode is PollMode.COORDINATED
    assert downloads(github) == ["/storytold/artcraft/releases/download/artcraft-v0.37.0/latest.json"]
    [stored] = redis_client.hmget("craftApps:releases:app:artcraft", "release")
    assert stored is not None
    assert sorted(f["platform"] for f in json.loads(stored)["updater"]) == sorted(k for k, _ in UPDATER_KEYS)

    github.reset_requests()
    fake_clock.advance(5)
    second = host("host-b", tmp_path, fake_clock, github, redis_client)
    second.tick()
    served = second.host.read().apps["artcraft"].latest_release
    assert served is not None and len(served.updater) == len(UPDATER_KEYS)
    assert served.updater == first.host.read().apps["artcraft"].latest_release.updater  # type: ignore[union-attr]
    fake_clock.advance(1800)  # the release is due again: the second host asks, 304, and reads nothing
    report = second.tick()
    assert report.round.unchanged == 1
    assert downloads(github) == []
    assert [r.status for r in github.requests] == [304]


def test_with_the_fleet_a_release_is_shared_once_with_the_updater_files_read_after_the_round(
    github: FakeGitHub, redis_client: redis.Redis, tmp_path: Path, fake_clock: FakeClock
):
    """The files are read after the round's answers are published; the fleet gets the release
    once they are read (a release cached without them would never get them), whole."""
    first = host("host-a", tmp_path, fake_clock, github, redis_client)
    second = host("host-b", tmp_path, fake_clock, github, redis_client)
    read = first.updater_files.source
    assert read is not None
    source: UpdaterSource = read
    during: list[object] = []

    class SecondHostTicksMeanwhile:
        def updater_downloads(self, release: Release) -> int:
            return source.updater_downloads(release)

        def fetch_updater(self, release: Release) -> UpdaterOutcome:
            during.append(first.host.read().apps["artcraft"].latest_release is not None)
            second.tick()
            during.append(second.host.read().apps.get("artcraft"))
            return source.fetch_updater(release)

    first.updater_files.source = SecondHostTicksMeanwhile()
    first.tick()
    assert during == [True, None], "host-a serves it at once; the fleet waits for its files"
    second.tick()
    served = second.host.read().apps["artcraft"].latest_release
    assert served is not None and len(served.updater) == len(UPDATER_KEYS)
    assert len(downloads(github)) == 1, "host-b downloads nothing"


def test_a_stalled_updater_download_holds_back_no_other_apps_share_with_the_fleet(
    github: FakeGitHub, redis_client: redis.Redis, tmp_path: Path, fake_clock: FakeClock
):
    """ArtCraft's latest.json is held until SoundCraft, asked after it, is in Redis with its
    files: each app's files are read on their own, and each app shared once its own are."""
    built = tauri_action_release(
        SOUNDCRAFT.repo, "SoundCraft", "1.2.0", PUBLISHED, web_url=github.url, api_url=github.url
    )
    github.publish(SOUNDCRAFT.repo, built.release, files=built.files)
    poller = host("host-a", tmp_path, fake_clock, github, redis_client, apps=(ARTCRAFT, SOUNDCRAFT))
    assert poller.shared is not None and poller.updater_files.source is not None
    shared, source = poller.shared, poller.updater_files.source
    soundcraft_shared = threading.Event()
    write_fetched = shared.entries.write_fetched

    def signalled_write(app_key: str, *args: object, **kwargs: object) -> bool:
        written = write_fetched(app_key, *args, **kwargs)  # type: ignore[arg-type]
        if app_key == SOUNDCRAFT.key:
            soundcraft_shared.set()
        return written

    shared.entries.write_fetched = signalled_write  # type: ignore[method-assign]
    seen_while_held: list[object] = []

    class ArtCraftHeld:
        def updater_downloads(self, release: Release) -> int:
            return source.updater_downloads(release)

        def fetch_updater(self, release: Release) -> UpdaterOutcome:
            if release.version == "0.37.0":  # ArtCraft's (both tags start with artcraft-v)
                seen_while_held.append(soundcraft_shared.wait(timeout=10))  # bounds a failure only
                seen_while_held.append(_shared_platforms(redis_client, SOUNDCRAFT.key))
                seen_while_held.append(_shared_platforms(redis_client, ARTCRAFT.key))
            return source.fetch_updater(release)

    poller.updater_files.source = ArtCraftHeld()
    report = poller.tick()
    keys = sorted(key for key, _ in UPDATER_KEYS)
    assert seen_while_held == [True, keys, None], "SoundCraft shared whole; ArtCraft waits for its files"
    assert report.round.fetched == 2
    assert _shared_platforms(redis_client, ARTCRAFT.key) == keys
    assert [t.name for t in threading.enumerate() if t.name.startswith("craft-apps-updater")] == []


def _shared_platforms(client: redis.Redis, key: str) -> list[str] | None:
    """The platforms of the app's release in Redis; None when it has no release there."""
    [stored] = client.hmget(f"craftApps:releases:app:{key}", "release")
    if stored is None:
        return None
    return sorted(f["platform"] for f in json.loads(stored).get("updater", []))
