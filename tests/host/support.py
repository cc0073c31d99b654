"""What the state file and lease tests build on: a release, the app state a poll leaves, and
``FIRST_FORMAT``, the statements that made a state file of the first format as it shipped."""

from __future__ import annotations

from craft_apps.kernel.domain import AppState, Release
from craft_apps.testing.clock import START_MS
from tests.support import release


def make_release(tag: str = "v1.2.0", notes: str = "Faster exports.") -> Release:
    return release(tag.removeprefix("v"), notes=notes)


def fetched(at_ms: int = START_MS, tag: str = "v1.2.0", etag: str | None = '"etag-1"') -> AppState:
    return AppState(latest_release=make_release(tag), fetched_ms=at_ms, etag=etag)


# The first format as it shipped: the lease without an epoch.
FIRST_FORMAT = (
    "CREATE TABLE store_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
    "INSERT INTO store_meta (id, version) VALUES (1, 0)",
    "CREATE TABLE app_state (key TEXT PRIMARY KEY, release_json TEXT NOT NULL, etag TEXT,"
    " fetched_ms INTEGER, failed_ms INTEGER, failures INTEGER NOT NULL)",
    "CREATE TABLE backoff (id INTEGER PRIMARY KEY CHECK (id = 1), until_ms INTEGER,"
    " trouble INTEGER NOT NULL)",
    "CREATE TABLE lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL,"
    " expires_ms INTEGER NOT NULL)",
    "PRAGMA user_version = 1",
)
