"""``tauri.file_reads.UpdaterKeeper`` alone, with a scripted updater source: once per release,
the failure backoff, what a release coming back without its files gets, the memory bound."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from craft_apps.kernel.domain import Release, UpdaterFile
from craft_apps.kernel.source import UpdaterFailed, UpdaterFetched, UpdaterOutcome
from craft_apps.tauri import file_reads as updater
from craft_apps.tauri.file_reads import UpdaterKeeper
from tests.support import S, release

FILES = (UpdaterFile("windows-x86_64", "https://github.com/o/r/releases/download/v1/A.msi", "c2ln"),)
INTERVAL_MS = 1800 * S
MAX_BACKOFF_MS = 14_400 * S


@dataclass
class Scripted:
    """An updater source answering from a list of outcomes; every release has files to read."""

    outcomes: list[UpdaterOutcome] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def updater_downloads(self, release: Release) -> int:
        return 1

    def fetch_updater(self, release: Release) -> UpdaterOutcome:
        self.asked.append(release.tag)
        return self.outcomes.pop(0) if self.outcomes else UpdaterFetched(FILES, 1)


def keeper(source: Scripted) -> UpdaterKeeper:
    return UpdaterKeeper(source, INTERVAL_MS, MAX_BACKOFF_MS)


def test_a_release_is_read_once_and_comes_back_with_its_files() -> None:
    source = Scripted()
    keeping = keeper(source)
    filled = keeping.fill("app", release("1.0.0"), 0)
    assert filled is not None and filled.updater == FILES
    assert keeping.fill("app", release("1.0.0"), 10 * INTERVAL_MS) is None
    assert keeping.carried(release("1.0.0")).updater == FILES, "a new answer for the same release"
    changed = replace(release("1.0.0"), assets=release("1.0.0").assets[:1])
    assert keeping.carried(changed).updater == (), "an asset changed: another read"
    assert keeping.due(changed, 0)
    assert source.asked == ["v1.0.0"]
    assert keeping.take_tally().fetched == 1 and keeping.tally.is_empty()


def test_files_a_release_brings_are_learnt_and_never_read() -> None:
    source = Scripted()
    keeping = keeper(source)
    keeping.carried(replace(release("1.0.0"), updater=FILES))
    assert not keeping.due(release("1.0.0"), 0)
    assert keeping.carried(release("1.0.0")).updater == FILES and source.asked == []


def test_failures_back_off_from_the_interval_doubling_up_to_the_maximum() -> None:
    source = Scripted([UpdaterFailed("latest.json: HTTP 503", 1)] * 6)
    keeping = keeper(source)
    now, waits = 0, []
    for _ in range(6):
        assert keeping.fill("app", release("1.0.0"), now) is None
        wait = next(
            ms for ms in range(0, 10 * MAX_BACKOFF_MS, 60 * S) if keeping.due(release("1.0.0"), now + ms)
        )
        waits.append(wait // S)
        now += wait
    assert waits == [1800, 3600, 7200, 14_400, 14_400, 14_400]
    tally = keeping.take_tally()
    assert (tally.failed, tally.downloads, tally.last_failure) == (6, 6, "app v1.0.0: latest.json: HTTP 503")
    filled = keeping.fill("app", release("1.0.0"), now)
    assert filled is not None and filled.updater == FILES


def test_memory_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(updater, "MAX_REMEMBERED", 3)
    keeping = keeper(Scripted())
    for n in range(5):
        keeping.fill("app", release(f"1.0.{n}"), 0)
    assert keeping.carried(release("1.0.0")).updater == (), "the oldest went first"
    assert keeping.carried(release("1.0.4")).updater == FILES


def test_without_an_updater_source_nothing_is_read() -> None:
    keeping = UpdaterKeeper(None, INTERVAL_MS, MAX_BACKOFF_MS)
    assert not keeping.due(release("1.0.0"), 0) and keeping.fill("app", release("1.0.0"), 0) is None
