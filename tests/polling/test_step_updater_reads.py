"""``polling.updater_reads.UpdaterReads`` on its own, GitHub faked with ``responses``: the apps a
round answered get their latest's updater files (and their history's when their list was asked),
served and written at once; a failed read leaves the release served without them; with the fleet
(a real Redis) an answer that waited for its files is shared with them; a stopped round reads
nothing."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path

import pytest
import redis
import responses

from craft_apps.fleet.store import SharedStore
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, AppState, PollMode, Release
from craft_apps.kernel.source import Fetched
from craft_apps.polling.state import PollConfig
from craft_apps.tauri.fake_release import UPDATER_KEYS, TauriRelease, tauri_action_release
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import CONFIG, Steps, steps
from tests.support import S

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
KEY = ARTCRAFT.key
ONE_APP = PollConfig((ARTCRAFT,), CONFIG.interval_ms, CONFIG.max_backoff_ms)
PLATFORMS = sorted(key for key, _ in UPDATER_KEYS)
ALONE = PollMode.STANDALONE


def built(version: str = "0.37.0") -> TauriRelease:
    return tauri_action_release(ARTCRAFT.repo, "ArtCraft", version, datetime(2026, 11, 20, tzinfo=UTC))


def served(version: str = "0.37.0", status: int = 200) -> Release:
    """The release GitHub answers, its ``latest.json`` served with ``status``."""
    release = built(version)
    manifest = next(a for a in release.release["assets"] if a["name"] == "latest.json")
    responses.get(manifest["browser_download_url"], body=release.files["latest.json"], status=status)
    return parse_release(json.dumps(release.release).encode(), ARTCRAFT.repo)


def answered(state_dir: Path, clock: FakeClock, latest: Release, client: redis.Redis | None = None) -> Steps:
    """One host whose round answered ``latest`` for ArtCraft, its updater files owed."""
    made = steps(state_dir, clock, client, config=ONE_APP, updater=True)
    made.state.memory[KEY] = AppState(
        latest_release=latest, etag='"e"', fetched_ms=clock.now_ms(), repo=ARTCRAFT.repo
    )
    made.state.updater_owed[KEY] = False
    return made


@responses.activate
def test_the_latests_files_are_read_served_and_written(state_dir: Path, fake_clock: FakeClock) -> None:
    made = answered(state_dir, fake_clock, served())
    reads = made.updater_reads
    assert reads.unread(KEY, fake_clock.now_ms()) and reads.unread(KEY, None)
    assert reads.read(ALONE) is ALONE
    kept = made.state.memory[KEY].latest_release
    assert kept is not None and sorted(f.platform for f in kept.updater) == PLATFORMS
    assert made.store.read().apps[KEY].latest_release == kept
    assert not reads.unread(KEY, None) and made.state.updater_owed == {}
    assert len(responses.calls) == 1, "one download: latest.json"


@responses.activate
def test_with_its_list_asked_the_historys_files_are_read_too(state_dir: Path, fake_clock: FakeClock) -> None:
    latest, older = served(), served("0.36.0")
    made = answered(state_dir, fake_clock, latest)
    made.state.history[KEY] = (latest, older)
    made.state.updater_owed[KEY] = True
    made.updater_reads.read(ALONE)
    assert [len(r.updater) for r in made.state.history[KEY]] == [len(PLATFORMS)] * 2
    assert [len(r.updater) for r in made.store.read().history[KEY]] == [len(PLATFORMS)] * 2


@responses.activate
def test_a_failed_read_leaves_the_release_served_without_its_files(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    latest = served(status=500)
    made = answered(state_dir, fake_clock, latest)
    with caplog.at_level(logging.WARNING):
        made.updater_reads.read(ALONE)
    assert made.state.memory[KEY].latest_release == latest
    assert made.updater_reads.unread(KEY, None), "still to read"
    assert not made.updater_reads.unread(KEY, fake_clock.now_ms()), "after a backoff"
    assert any("couldn't read the updater files" in r.getMessage() for r in caplog.records)
    fake_clock.advance(CONFIG.interval_ms // S)
    assert made.updater_reads.unread(KEY, fake_clock.now_ms())


@responses.activate
def test_an_answer_that_waited_for_its_files_is_shared_with_them(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    latest = served()
    made = answered(state_dir, fake_clock, latest, redis_client)
    made.state.share_owed[KEY] = Fetched(latest, '"e"')
    fleet = PollMode.COORDINATED
    assert made.updater_reads.read(fleet) is fleet
    assert made.state.share_owed == {}
    entries, _ = SharedStore(redis_client, hostname="host-b").entries.read([KEY])
    shared = entries[0]
    assert shared is not None and shared.fetched is not None and shared.fetched.latest_release is not None
    assert sorted(f.platform for f in shared.fetched.latest_release.updater) == PLATFORMS


@responses.activate
def test_a_stopped_round_reads_nothing(state_dir: Path, fake_clock: FakeClock) -> None:
    made = answered(state_dir, fake_clock, served())
    made.state.fence_lost = True  # another poller took the state directory over
    assert made.updater_reads.read(ALONE) is ALONE
    assert len(responses.calls) == 0
    assert made.state.updater_owed == {}
