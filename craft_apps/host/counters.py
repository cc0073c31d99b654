"""The poller's counters in the host's state file, so every web worker shows the same numbers.

``record(store, update)`` adds one tick's ``CountersUpdate`` (GitHub requests by outcome, Redis
errors, quota, mode, CDN purges, updater file reads) in one transaction; ``read_counters(store)``
returns ``PollerCounters``, zeros without the table. The table is made when missing and needs no
new format version; a value of the wrong type reads as absent. Writes carry no fencing token: a
request a replaced poller made was still made, so counting it is right.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field

from craft_apps.host.database import has_table
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import GitHubQuota, PollMode

TABLE = "poller_counters"
OUTCOMES = ("fetched", "not_modified", "failed", "rate_limited")  # a GitHub request's outcome
MODES = tuple(mode.value for mode in PollMode)
# A CDN purge request's outcome (``craft_apps.cdn``): taken, tried again, given up; and a change
# purged after the longest wait, without every web process saying it served it.
PURGE_OUTCOMES = ("purged", "retried", "failed", "unconfirmed")
UPDATER_OUTCOMES = ("fetched", "refused", "failed")  # a read of a release's updater files
MAX_FAILURE_CHARS = 300

_CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, value NOT NULL)"
_ADD = (
    f"INSERT INTO {TABLE} (name, value) VALUES (?, ?)"
    f" ON CONFLICT (name) DO UPDATE SET value = {TABLE}.value + excluded.value"
)
_SET = (
    f"INSERT INTO {TABLE} (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


@dataclass(frozen=True)
class PollerCounters:
    """What the host's poller counted since the state file was created."""

    requests: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    redis_errors: int = 0
    redis_unreadable: int = 0  # Redis keys refused as not ours, each reason once
    mode: str | None = None  # the last tick's, one of MODES
    tick_ms: int | None = None  # when the active poller last ticked
    stopped_ms: int | None = None  # when a poller last stopped cleanly, releasing the lease
    quota: GitHubQuota | None = None
    purges: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(PURGE_OUTCOMES, 0))
    purge_ok_ms: int | None = None  # when the CDN last took a purge
    purge_failed_ms: int | None = None  # when a purge was last given up
    purge_failure: str | None = None  # why, in one line (never a token)
    updater: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(UPDATER_OUTCOMES, 0))
    updater_downloads: int = 0  # downloads of releases' small files (latest.json, .sig)
    updater_failure: str | None = None  # the last failed read, "<app> <tag>: <reason>"
    updater_failure_ms: int | None = None


@dataclass
class CountersUpdate:
    """Amounts to add, and values to set where not None."""

    requests: dict[str, int] = field(default_factory=dict)
    redis_errors: int = 0
    redis_unreadable: int = 0
    mode: str | None = None
    tick_ms: int | None = None
    stopped_ms: int | None = None
    quota: GitHubQuota | None = None
    purges: dict[str, int] = field(default_factory=dict)
    purge_ok_ms: int | None = None
    purge_failed_ms: int | None = None
    purge_failure: str | None = None
    updater: dict[str, int] = field(default_factory=dict)
    updater_downloads: int = 0
    updater_failure: str | None = None
    updater_failure_ms: int | None = None

    def is_empty(self) -> bool:
        return self == CountersUpdate()


def record(store: StateStore, update: CountersUpdate) -> None:
    """Adds and sets ``update`` in one transaction. Raises StateUnavailable (nothing written)."""
    adds = [(f"requests.{name}", count) for name, count in update.requests.items() if count]
    adds += [(f"purge.{name}", count) for name, count in update.purges.items() if count]
    adds += [(f"updater.{name}", count) for name, count in update.updater.items() if count]
    if update.updater_downloads:
        adds.append(("updater.downloads", update.updater_downloads))
    if update.redis_errors:
        adds.append(("redis.errors", update.redis_errors))
    if update.redis_unreadable:
        adds.append(("redis.unreadable", update.redis_unreadable))
    sets: list[tuple[str, int | str]] = [
        (name, value)
        for name, value in (
            ("mode", update.mode),
            ("tick_ms", update.tick_ms),
            ("stopped_ms", update.stopped_ms),
            ("purge.ok_ms", update.purge_ok_ms),
            ("purge.failed_ms", update.purge_failed_ms),
            ("purge.failure", update.purge_failure),
            ("updater.failure", update.updater_failure),
            ("updater.failure_ms", update.updater_failure_ms),
        )
        if value is not None
    ]
    quota = update.quota
    if quota is not None:  # the four together; -1: this answer announced no reset
        reset_ms = -1 if quota.reset_ms is None else quota.reset_ms
        sets += [
            ("quota.remaining", quota.remaining),
            ("quota.limit", quota.limit),
            ("quota.reset_ms", reset_ms),
            ("quota.seen_ms", quota.seen_ms),
        ]

    def write(db: sqlite3.Connection) -> None:
        db.execute(_CREATE)
        db.executemany(_ADD, adds)
        db.executemany(_SET, sets)

    store.write_with(write)


def read_counters(store: StateStore) -> PollerCounters:
    """The counters; zeros for a missing file or a file without the table. Raises
    StateUnavailable."""

    def read(db: sqlite3.Connection) -> dict[str, object]:
        if not has_table(db, TABLE):
            return {}
        return {str(name): value for name, value in db.execute(f"SELECT name, value FROM {TABLE}")}

    return decode(store.read_with(read) or {})


def decode(rows: Mapping[str, object]) -> PollerCounters:
    """The counters from the table's rows; anything unreadable counts as absent."""
    mode = rows.get("mode")
    failure = rows.get("purge.failure")
    return PollerCounters(
        requests={name: _count(rows.get(f"requests.{name}")) or 0 for name in OUTCOMES},
        redis_errors=_count(rows.get("redis.errors")) or 0,
        redis_unreadable=_count(rows.get("redis.unreadable")) or 0,
        mode=mode if isinstance(mode, str) and mode in MODES else None,
        tick_ms=_count(rows.get("tick_ms")),
        stopped_ms=_count(rows.get("stopped_ms")),
        quota=_quota(rows),
        purges={name: _count(rows.get(f"purge.{name}")) or 0 for name in PURGE_OUTCOMES},
        purge_ok_ms=_count(rows.get("purge.ok_ms")),
        purge_failed_ms=_count(rows.get("purge.failed_ms")),
        purge_failure=failure if isinstance(failure, str) else None,
        updater={name: _count(rows.get(f"updater.{name}")) or 0 for name in UPDATER_OUTCOMES},
        updater_downloads=_count(rows.get("updater.downloads")) or 0,
        updater_failure=_text(rows.get("updater.failure")),
        updater_failure_ms=_count(rows.get("updater.failure_ms")),
    )


def _text(value: object) -> str | None:
    """One printable line of at most ``MAX_FAILURE_CHARS``, else None."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_FAILURE_CHARS or not value.isprintable():
        return None
    return value


def _quota(rows: Mapping[str, object]) -> GitHubQuota | None:
    remaining, limit, seen_ms = (
        _count(rows.get(f"quota.{name}")) for name in ("remaining", "limit", "seen_ms")
    )
    if remaining is None or limit is None or seen_ms is None:
        return None
    return GitHubQuota(
        remaining=remaining, limit=limit, reset_ms=_count(rows.get("quota.reset_ms")), seen_ms=seen_ms
    )


def _count(value: object) -> int | None:
    """A non-negative integer, else None (negative stands for "none")."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
