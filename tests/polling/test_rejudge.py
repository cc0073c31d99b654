"""Stored releases are judged again by today's rules before they are served.

A state file written before a rule existed (an upgrade) or a fleet entry written by a pod that
doesn't apply it must not bring back what GitHub's parser now refuses: the poller mends such a
release in memory and writes it back, so the endpoint serves the mended one.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import responses

from craft_apps.fleet.entry import SharedAppEntry, SharedFetch
from craft_apps.github.parsing import parse_release, rejudge
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_releases
from tests.polling.hosts import APPS, Host, release_json
from tests.support import publish, release

EVIL = "https://github.com/storytold/photocraft/releases/download/v0.5.0/../../../../evil/x/releases/download/v1/f.msi"


@pytest.mark.parametrize("repo", sorted(demo_releases()))
def test_a_release_our_parser_made_passes_unchanged(repo: str):
    parsed = parse_release(json.dumps(demo_releases()[repo]).encode(), repo)
    assert rejudge(parsed, repo) == parsed


def with_evil_asset(state: AppState) -> AppState:
    assert state.latest_release is not None
    bad = replace(
        state.latest_release.assets[0], name="photocraft-0.5.0-windows-x64-evil.msi", download_url=EVIL
    )
    return replace(
        state, latest_release=replace(state.latest_release, assets=(*state.latest_release.assets, bad))
    )


def test_a_link_out_of_the_repository_is_dropped_and_a_bad_tag_refuses_the_release():
    good = release()
    evil = with_evil_asset(AppState(latest_release=good, fetched_ms=1, etag='"e"')).latest_release
    assert evil is not None
    assert rejudge(evil, "storytold/photocraft") == good
    assert rejudge(replace(good, tag="../../evil"), "storytold/photocraft") is None
    assert rejudge(good, "someone/else") is not None
    assert rejudge(good, "someone/else").assets == ()  # type: ignore[union-attr]


@responses.activate
def test_an_old_state_file_is_mended_at_start_and_written_back(state_dir: Path, fake_clock: FakeClock):
    stored = AppState(latest_release=release(), fetched_ms=fake_clock.now_ms(), etag='"e"', repo=APPS[0].repo)
    publish(state_dir, {"photocraft": with_evil_asset(stored)}, clock=fake_clock)
    host = Host(state_dir, fake_clock)  # loads the state file; nothing is due, GitHub isn't asked
    responses.get(f"https://api.github.com/repos/{APPS[1].repo}/releases/latest", json=release_json(APPS[1]))
    host.poller.tick()
    assert host.saved("photocraft") == stored
    assert host.poller.memory["photocraft"] == stored


def test_a_fleet_entry_with_a_bad_link_is_mended_when_merged(state_dir: Path, fake_clock: FakeClock):
    host = Host(state_dir, fake_clock)
    entry = with_evil_asset(AppState(latest_release=release(), fetched_ms=fake_clock.now_ms(), etag='"e"'))
    assert entry.latest_release is not None and entry.fetched_ms is not None
    shared = SharedAppEntry(fetched=SharedFetch(entry.latest_release, entry.etag, entry.fetched_ms))
    host.poller.fleet.merge_entry("photocraft", shared)
    assert host.poller.memory["photocraft"].latest_release == release()
