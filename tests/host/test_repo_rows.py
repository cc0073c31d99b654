"""Each stored fetch belongs to a repository: the rule (``domain``), the state file's rows, and a
file of 0.2 (no repository columns) kept working through the in-place migration."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.host.store import DB_FILENAME, Fence, StateStore
from craft_apps.kernel.codec import encode_release
from craft_apps.kernel.domain import AppState, release_page_is_of, same_repo
from craft_apps.testing.clock import START_MS
from tests.support import release

WEB = "https://github.com"
ONE, UNO = "acme/one", "acme/uno"

# The state file exactly as 0.2 made it (format 1, before the repository columns).
SCHEMA_0_2 = (
    "CREATE TABLE store_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
    "INSERT INTO store_meta (id, version) VALUES (1, 3)",
    "CREATE TABLE app_state (key TEXT PRIMARY KEY, release_json TEXT NOT NULL, etag TEXT,"
    " fetched_ms INTEGER, failed_ms INTEGER, failures INTEGER NOT NULL)",
    "CREATE TABLE backoff (id INTEGER PRIMARY KEY CHECK (id = 1), until_ms INTEGER,"
    " trouble INTEGER NOT NULL)",
    "CREATE TABLE lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL,"
    " expires_ms INTEGER NOT NULL, epoch TEXT NOT NULL DEFAULT '')",
    "PRAGMA user_version = 1",
)
# How 0.2 writes a row: it names its own columns, so it never touches the repository's.
UPSERT_0_2 = (
    "INSERT INTO app_state (key, release_json, etag, fetched_ms, failed_ms, failures)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET release_json = excluded.release_json,"
    " etag = excluded.etag, fetched_ms = excluded.fetched_ms, failed_ms = excluded.failed_ms,"
    " failures = excluded.failures"
)


def of(repo: str, *, at_ms: int = START_MS, recorded: bool = True) -> AppState:
    return AppState(
        latest_release=release(repo=repo),
        fetched_ms=at_ms,
        etag=f'"{repo}"',
        repo=repo if recorded else None,
    )


def file_of_0_2(state_dir: Path, rows: dict[str, tuple[object, ...]]) -> Path:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / DB_FILENAME
    db = sqlite3.connect(path, isolation_level=None)
    for statement in SCHEMA_0_2:
        db.execute(statement)
    for key, row in rows.items():
        db.execute(UPSERT_0_2, (key, *row))
    db.execute("PRAGMA journal_mode = WAL")
    db.close()
    path.chmod(0o600)
    return path


def write_as_0_2(path: Path, key: str, state: AppState) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    row = (encode_release(state.latest_release), state.etag, state.fetched_ms, None, 0)
    db.execute(UPSERT_0_2, (key, *row))
    db.close()


# --- the rule -----------------------------------------------------------------------------------


def test_repositories_compare_as_github_compares_them() -> None:
    assert same_repo("HePengJu/Redis-ME", "hepengju/redis-me")
    assert not same_repo("acme/one", "acme/uno")
    assert not same_repo("acme/one", "acme/one-two")


def test_a_release_page_names_its_repository() -> None:
    page = release(repo=ONE)
    assert release_page_is_of(page, ONE, WEB) and release_page_is_of(page, "ACME/One", WEB + "/")
    assert not release_page_is_of(page, UNO, WEB)
    assert not release_page_is_of(page, ONE, "https://ghe.example")
    assert not release_page_is_of(replace(page, html_url=f"{WEB}/acme/one"), ONE, WEB)
    assert not release_page_is_of(replace(page, html_url=f"{WEB}/acme/one/pulls/1"), ONE, WEB)


def test_a_fetch_of_another_repository_is_nothing_for_this_app() -> None:
    assert of(ONE).as_state_of(UNO, WEB) == AppState(repo=UNO)
    assert of(ONE, recorded=False).as_state_of(UNO, WEB) == AppState(repo=UNO), "its page says acme/one"
    failing = replace(of(ONE), failed_ms=START_MS + 1, failures=4)
    assert failing.as_state_of(UNO, WEB) == AppState(repo=UNO), "its failures were acme/one's too"
    assert AppState(failed_ms=START_MS, failures=1, repo=ONE).as_state_of(UNO, WEB) == AppState(repo=UNO)


def test_a_fetch_of_this_repository_is_kept_and_recorded() -> None:
    assert of(ONE).as_state_of(ONE, WEB) == of(ONE)
    assert of(ONE).as_state_of("Acme/ONE", WEB) == replace(of(ONE), repo="Acme/ONE"), "as configured now"
    assert of(ONE, recorded=False).as_state_of(ONE, WEB) == of(ONE), "its page proves it"


def test_an_unrecorded_fetch_without_a_release_is_not_taken_as_this_apps() -> None:
    """Nothing says which repository answered "no release": it is asked about again (one request),
    never served as this app's."""
    none_of_unknown = AppState(latest_release=None, fetched_ms=START_MS, etag=None)
    assert none_of_unknown.as_state_of(UNO, WEB) == AppState(repo=UNO)
    recorded_none = replace(none_of_unknown, repo=UNO)
    assert recorded_none.as_state_of(UNO, WEB) == recorded_none


# --- the state file ---------------------------------------------------------------------------


def test_a_row_keeps_its_repository(store: StateStore, fence: Fence) -> None:
    assert store.put_app("one", of(ONE), fence=fence)
    assert store.read().apps["one"] == of(ONE)


def test_a_fetch_of_another_repository_is_replaced_whatever_its_time(store: StateStore, fence: Fence) -> None:
    assert store.put_app("one", of(ONE, at_ms=START_MS + 60_000), fence=fence)
    assert store.put_app("one", AppState(repo=UNO), fence=fence), (
        "nothing of acme/uno yet, but not acme/one's"
    )
    assert store.read().apps["one"] == AppState(repo=UNO)
    assert store.put_app("one", of(UNO, at_ms=START_MS + 1), fence=fence)
    assert not store.put_app("one", of(UNO, at_ms=START_MS), fence=fence), "its own fetch never goes back"
    assert store.read().apps["one"] == of(UNO, at_ms=START_MS + 1)


def test_a_0_2_file_is_read_as_it_is_then_migrated_in_place_losing_nothing(state_dir: Path) -> None:
    row = (encode_release(release(repo=ONE)), '"e1"', START_MS, START_MS - 5, 2)
    path = file_of_0_2(state_dir, {"one": row, "none": ("null", None, START_MS, None, 0)})
    reader = StateStore(state_dir)
    before = reader.read()
    expected_one = replace(of(ONE, recorded=False), etag='"e1"', failed_ms=START_MS - 5, failures=2)
    assert before.apps == {"one": expected_one, "none": AppState(fetched_ms=START_MS)}
    writer = StateStore(state_dir)
    writer.open_for_writing()  # the poller's start adds the columns
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(app_state)")}
    assert {"repo", "repo_fetched_ms"} <= columns
    after = reader.read()
    assert after.version > before.version, "readers look again"
    assert after.apps == before.apps, "every row kept, its repository unrecorded"


def test_a_row_moved_by_0_2_after_the_migration_is_of_an_unrecorded_repository(
    store: StateStore, fence: Fence
) -> None:
    """0.2 (a rollback) still writes the file, naming its columns: its fetch is never taken as the
    repository the row recorded before."""
    assert store.put_app("one", of(UNO), fence=fence)
    write_as_0_2(store.path, "one", of(ONE, at_ms=START_MS + 1))
    assert store.read().apps["one"] == of(ONE, at_ms=START_MS + 1, recorded=False)
    assert store.read().apps["one"].as_state_of(UNO, WEB) == AppState(repo=UNO)
    assert store.put_app("one", of(UNO, at_ms=START_MS + 2), fence=fence)
    assert store.read().apps["one"] == of(UNO, at_ms=START_MS + 2)


@pytest.mark.parametrize("repo", ["", "acme", "a/b/c", "acme/\x00", "x" * 141])
def test_an_unreadable_recorded_repository_reads_as_unrecorded(
    store: StateStore, fence: Fence, repo: str
) -> None:
    assert store.put_app("one", of(ONE), fence=fence)
    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("UPDATE app_state SET repo = ?", (repo,))
    db.close()
    assert store.read().apps["one"] == of(ONE, recorded=False)


def test_a_state_that_records_a_bad_repository_is_refused(store: StateStore, fence: Fence) -> None:
    with pytest.raises(ValueError, match="repo must be owner/name"):
        store.put_app("one", replace(of(ONE), repo="not a repo"), fence=fence)
