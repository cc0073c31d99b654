"""craft_apps.kernel.compat answers the same on every Python (the matrix runs this on 3.10, where the
stand-ins are used, and on 3.11+, where they are the standard library's)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from craft_apps.kernel.compat import UTC, StrEnum, fromisoformat, sqlite_errorname
from craft_apps.kernel.instants import parse_rfc3339


class Colour(StrEnum):
    DARK_RED = "dark_red"


def test_a_str_enum_is_its_value_as_text():
    assert str(Colour.DARK_RED) == f"{Colour.DARK_RED}" == f"{Colour.DARK_RED:>8}".strip() == "dark_red"
    assert Colour("dark_red") is Colour.DARK_RED and isinstance(Colour.DARK_RED, str)
    assert UTC is timezone.utc


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-08T14:52:50Z", datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)),
        ("2026-10-08T14:52:50.5Z", datetime(2026, 10, 8, 14, 52, 50, 500000, tzinfo=UTC)),
        ("2026-10-08T14:52:50.1234567Z", datetime(2026, 10, 8, 14, 52, 50, 123456, tzinfo=UTC)),
        ("2026-10-08T14:52:50,25Z", datetime(2026, 10, 8, 14, 52, 50, 250000, tzinfo=UTC)),
        ("2026-10-08T16:52:50+02:00", datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)),
    ],
)
def test_rfc3339_timestamps_read_alike(text: str, expected: datetime):
    assert parse_rfc3339(text) == expected
    assert fromisoformat(text).utcoffset() in (timedelta(0), timedelta(hours=2))


@pytest.mark.parametrize(
    "text", ["2026-10-08T14:52:50", "2026-10-08t14:52:50z", "garbage", "2026-10-08T25:00:00Z"]
)
def test_anything_else_is_refused(text: str):
    with pytest.raises(ValueError):
        parse_rfc3339(text)


def test_sqlite_errors_are_named_by_their_code(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0)
    with pytest.raises(sqlite3.OperationalError) as locked:
        other.execute("SELECT * FROM t")
    assert sqlite_errorname(locked.value) == "SQLITE_BUSY"
    holder.execute("ROLLBACK")
    with pytest.raises(sqlite3.OperationalError) as missing:
        other.execute("SELECT * FROM nowhere")
    assert sqlite_errorname(missing.value) == "SQLITE_ERROR"
    holder.close()
    other.close()

    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError) as not_a_db:
        sqlite3.connect(garbage).execute("SELECT * FROM t")
    assert sqlite_errorname(not_a_db.value) == "SQLITE_NOTADB"
