"""``polling.history_lists.HistoryLists`` on its own: a history read back is taken only when it
is the app's repository's, each release judged by today's rules; a latest release seen goes
into the history and makes the list owed again; a fleet's older history leaves a newer one; and
a release list GitHub gives (faked with ``responses``) is kept, written and counted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import responses

from craft_apps.kernel.domain import AppState, HistoryFetch, PollMode
from craft_apps.polling.state import PollConfig, TickReport
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import API, release_json
from tests.polling.steps import CONFIG, steps
from tests.support import PHOTOCRAFT, release

KEY = PHOTOCRAFT.key
LISTED = HistoryFetch('"l"', 5, PHOTOCRAFT.repo)


def test_a_history_of_another_repository_is_refused(state_dir: Path, fake_clock: FakeClock) -> None:
    lists = steps(state_dir, fake_clock).lists
    assert not lists.take(KEY, (release(),), HistoryFetch('"l"', 5, "someone/else"))
    assert KEY not in lists.state.history


def test_a_history_taken_is_judged_by_todays_rules_and_written_back(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    lists = steps(state_dir, fake_clock).lists
    bad = replace(release("0.4.0"), tag="../../evil")
    assert lists.take(KEY, (release(), bad), LISTED)
    assert lists.state.history[KEY] == (release(),)
    assert lists.state.unwritten_histories == {KEY}, "it changed: written back"


def test_a_new_latest_goes_into_the_history_and_makes_the_list_owed(
    state_dir: Path, fake_clock: FakeClock
) -> None:
    config = PollConfig(CONFIG.apps, CONFIG.interval_ms, CONFIG.max_backoff_ms, history_for_every_app=True)
    lists = steps(state_dir, fake_clock, config=config).lists
    lists.state.memory[KEY] = AppState(latest_release=release(), fetched_ms=5, repo=PHOTOCRAFT.repo)
    assert lists.take(KEY, (release(),), LISTED)
    assert not lists.owes(KEY), "listed, and nothing new since"
    lists.see_latest(KEY, release("0.6.0"))
    assert [r.tag for r in lists.state.history[KEY]] == ["v0.6.0", "v0.5.0"]
    assert KEY in lists.state.unwritten_histories
    assert lists.owes(KEY), "a release the list didn't hold: asked again"


def test_an_app_that_needs_history_always_owes_its_list(state_dir: Path, fake_clock: FakeClock) -> None:
    lists = steps(state_dir, fake_clock, needs_history=lambda: frozenset({KEY})).lists
    assert lists.owes(KEY) and not lists.owes("artcraft-launcher")


def test_an_older_fleet_history_leaves_a_newer_one(state_dir: Path, fake_clock: FakeClock) -> None:
    lists = steps(state_dir, fake_clock).lists
    assert lists.take(KEY, (release("0.6.0"),), LISTED)
    lists.take_shared(KEY, (release(),), replace(LISTED, fetched_ms=4))
    assert [r.tag for r in lists.state.history[KEY]] == ["v0.6.0"]
    lists.take_shared(KEY, (release(),), replace(LISTED, fetched_ms=9))
    assert [r.tag for r in lists.state.history[KEY]] == ["v0.5.0"]


@responses.activate
def test_a_list_github_gives_is_kept_written_and_counted(state_dir: Path, fake_clock: FakeClock) -> None:
    made = steps(state_dir, fake_clock)
    listed = [release_json(PHOTOCRAFT, version) for version in ("0.5.0", "0.4.0")]
    responses.get(f"{API}/repos/{PHOTOCRAFT.repo}/releases", json=listed, headers={"ETag": '"l-1"'})
    report = TickReport(mode=PollMode.STANDALONE)
    assert made.lists.ask(PHOTOCRAFT, PollMode.STANDALONE, report)
    assert [r.tag for r in made.store.read().history[KEY]] == ["v0.5.0", "v0.4.0"]
    assert made.store.read().history_fetches[KEY].etag == '"l-1"'
    assert (report.round.fetched, report.saved.fetched) == (1, 1)
    assert made.state.updater_owed == {KEY: True}, "its releases' updater files are read next"
