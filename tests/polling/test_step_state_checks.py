"""``polling.state_checks.StateChecks`` on its own: a state read back is the app's only when its
fetch is of the app's repository (logged once per other repository); its release is judged by
today's rules and given the updater files already read, and a state that changed is marked to be
written back."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.kernel.domain import AppState, UpdaterFile
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import steps
from tests.support import PHOTOCRAFT, release

KEY = PHOTOCRAFT.key
WHERE = "the host's state file"
OWN = AppState(latest_release=release(), etag='"e"', fetched_ms=5, repo=PHOTOCRAFT.repo)
FILES = (UpdaterFile("windows-x86_64", release().assets[0].download_url, "c2ln"),)


def test_the_apps_own_state_passes_unchanged(state_dir: Path, fake_clock: FakeClock) -> None:
    checks = steps(state_dir, fake_clock).checks
    assert checks.own(KEY, OWN, WHERE) == OWN
    assert checks.checked(KEY, OWN) == OWN
    assert checks.state.unwritten == set()


def test_a_fetch_of_another_repository_is_dropped_and_logged_once(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    checks = steps(state_dir, fake_clock).checks
    other = replace(OWN, latest_release=release(repo="someone/else"), repo="someone/else")
    with caplog.at_level(logging.WARNING):
        assert checks.own(KEY, other, WHERE) == AppState(repo=PHOTOCRAFT.repo)
        assert checks.own(KEY, other, WHERE) == AppState(repo=PHOTOCRAFT.repo)
    said = [r.getMessage() for r in caplog.records if "someone/else" in r.getMessage()]
    assert len(said) == 1 and WHERE in said[0]


def test_a_release_todays_rules_refuse_is_served_as_none_and_written_back(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    checks = steps(state_dir, fake_clock).checks
    bad = replace(OWN, latest_release=replace(release(), tag="../../evil"))
    with caplog.at_level(logging.WARNING):
        mended = checks.checked(KEY, bad)
    assert (mended.latest_release, mended.etag) == (None, None), "asked again without an ETag"
    assert mended.fetched_ms == OWN.fetched_ms
    assert checks.state.unwritten == {KEY}
    assert any("broke a rule and was mended" in r.getMessage() for r in caplog.records)


def test_a_release_gets_the_updater_files_already_read_for_it(state_dir: Path, fake_clock: FakeClock) -> None:
    made = steps(state_dir, fake_clock)
    made.files.carried(replace(release(), updater=FILES))  # read before, by this host or the fleet
    checked = made.checks.checked(KEY, OWN)
    assert checked.latest_release is not None and checked.latest_release.updater == FILES
    assert made.state.unwritten == {KEY}, "it changed: written back"
