"""The reports' counts on this host without Redis: ``reports.sqlite3`` in the state directory,
shared by the host's web workers and read by ``craft_apps_status``.

A ``days`` table counts the installs first counted per version and day, for the admin's chart.
Rows expire ``KEEP_DAYS`` after their last report; the first-outcome marks are kept for at
most ``MAX_MARKS`` installs and versions (the oldest go first), so the file stays bounded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from craft_apps.reports.counts import (
    KEEP_S,
    VERSIONS_KEPT,
    Counted,
    DailyInstalls,
    OutcomeCounts,
    ReleaseCounts,
    ReportsUnavailable,
    day_of,
)
from craft_apps.reports.report import OUTCOMES

FILE_NAME = "reports.sqlite3"
MAX_MARKS = 200_000
BUSY_TIMEOUT_S = 2.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS outcomes (app TEXT, version TEXT, outcome TEXT,"
    " reports INTEGER NOT NULL, installs INTEGER NOT NULL, last_ms INTEGER NOT NULL,"
    " PRIMARY KEY (app, version, outcome))",
    "CREATE TABLE IF NOT EXISTS marks (release TEXT PRIMARY KEY, at_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS marks_at ON marks (at_ms)",
    "CREATE TABLE IF NOT EXISTS days (app TEXT, version TEXT, day TEXT, installs INTEGER NOT NULL,"
    " PRIMARY KEY (app, version, day))",
)
_DAY = (
    "INSERT INTO days VALUES (?, ?, ?, 1) ON CONFLICT (app, version, day) DO UPDATE"
    " SET installs = installs + 1"
)
_COUNT = (
    "INSERT INTO outcomes VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (app, version, outcome) DO UPDATE"
    " SET reports = reports + 1, installs = installs + excluded.installs, last_ms = excluded.last_ms"
)


class FileCounts:
    """The counts in this host's state directory."""

    where = "state_dir"

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / FILE_NAME

    @contextmanager
    def _connection(self, create: bool) -> Iterator[sqlite3.Connection]:
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif not self.path.exists():
                raise ReportsUnavailable("no report yet")
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as db:
                for statement in _SCHEMA:  # a file of an earlier version gains the tables it lacks
                    db.execute(statement)
                yield db
        except (sqlite3.Error, OSError) as err:
            raise ReportsUnavailable(f"{self.path}: {type(err).__name__}: {err}") from err

    def add(self, reports: Sequence[Counted], now_ms: int) -> int:
        with self._connection(create=True) as db:
            db.execute("BEGIN IMMEDIATE")
            new = 0
            for report in reports:
                marked = db.execute("INSERT OR IGNORE INTO marks VALUES (?, ?)", (report.release, now_ms))
                first = int(marked.rowcount == 1)
                db.execute(_COUNT, (report.app, report.version, report.outcome, first, now_ms))
                if first:
                    db.execute(_DAY, (report.app, report.version, day_of(now_ms)))
                new += first
            _forget(db, now_ms)
            db.execute("COMMIT")
        return new

    def counts(self, apps: Sequence[str]) -> list[ReleaseCounts]:
        rows = self._rows(
            "SELECT app, version, outcome, reports, installs FROM outcomes"
            " ORDER BY app, last_ms DESC, version"
        )
        return _grouped(rows, apps)

    def daily(self, apps: Sequence[str], days: Sequence[str]) -> list[DailyInstalls]:
        versions = self._rows("SELECT app, version, MAX(last_ms) FROM outcomes GROUP BY app, version")
        found = self._rows("SELECT app, version, day, installs FROM days")
        by_release: dict[tuple[str, str], dict[str, int]] = {}
        for app, version, day, installs in found:
            by_release.setdefault((app, version), {})[day] = installs
        newest = sorted(versions, key=lambda row: (row[0], -row[2], row[1]))
        return [
            DailyInstalls(app, version, {d: by_release.get((app, version), {}).get(d, 0) for d in days})
            for app, version, _ in newest
            if app in apps
        ]

    def _rows(self, query: str) -> list[Any]:
        """The rows ``query`` selects; none before the first report."""
        try:
            with self._connection(create=False) as db:
                return db.execute(query).fetchall()
        except ReportsUnavailable as err:
            if str(err) == "no report yet":
                return []
            raise


def _forget(db: sqlite3.Connection, now_ms: int) -> None:
    """Drops what expired, the marks past ``MAX_MARKS`` and each app's versions past the kept."""
    oldest_ms = now_ms - KEEP_S * 1000
    db.execute("DELETE FROM outcomes WHERE last_ms < ?", (oldest_ms,))
    db.execute("DELETE FROM marks WHERE at_ms < ?", (oldest_ms,))
    db.execute(
        "DELETE FROM marks WHERE release IN"
        " (SELECT release FROM marks ORDER BY at_ms DESC LIMIT -1 OFFSET ?)",
        (MAX_MARKS,),
    )
    db.execute(
        "DELETE FROM outcomes WHERE (app, version) IN (SELECT app, version FROM (SELECT app, version,"
        " ROW_NUMBER() OVER (PARTITION BY app ORDER BY MAX(last_ms) DESC) AS n FROM outcomes"
        " GROUP BY app, version) WHERE n > ?)",
        (VERSIONS_KEPT,),
    )
    db.execute("DELETE FROM days WHERE day < ?", (day_of(oldest_ms),))
    db.execute("DELETE FROM days WHERE (app, version) NOT IN (SELECT app, version FROM outcomes)")


def _grouped(rows: Sequence[tuple[str, str, str, int, int]], apps: Sequence[str]) -> list[ReleaseCounts]:
    found: dict[tuple[str, str], dict[str, OutcomeCounts]] = {}
    for app, version, outcome, reports, installs in rows:
        if app in apps and outcome in OUTCOMES:
            found.setdefault((app, version), {})[outcome] = OutcomeCounts(reports, installs)
    return [
        ReleaseCounts(app, version, {o: outcomes.get(o, OutcomeCounts()) for o in OUTCOMES})
        for (app, version), outcomes in found.items()
    ]
