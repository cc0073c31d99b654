"""Instants: what we write reads back, and one rule keeps only 1970-9999 on the way in."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.kernel.codec import decode_release, encode_release
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from craft_apps.kernel.instants import format_rfc3339, instant_or_none, parse_rfc3339
from tests.support import publish, release


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
        (datetime(999, 12, 31, 23, 59, 59, 5_000, tzinfo=UTC), "0999-12-31T23:59:59.005Z"),
        (datetime(1970, 1, 1, tzinfo=UTC), "1970-01-01T00:00:00Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC), "9999-12-31T23:59:59.999Z"),
    ],
)
def test_every_instant_written_reads_back(value: datetime, text: str) -> None:
    assert format_rfc3339(value) == text
    assert parse_rfc3339(text) == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0001-01-01T00:00:00Z", None),
        ("0999-06-01T00:00:00Z", None),
        ("1969-12-31T23:59:59.999Z", None),
        ("1970-01-01T00:00:00Z", datetime(1970, 1, 1, tzinfo=UTC)),
        ("1970-01-01T01:00:00+02:00", None),  # 1969 in UTC
        ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("9999-12-31T23:00:00-02:00", None),  # past 9999 in UTC
    ],
)
def test_instants_outside_1970_to_9999_read_as_null(text: str, expected: datetime | None) -> None:
    assert instant_or_none(text) == expected


def test_a_malformed_instant_is_still_an_error() -> None:
    with pytest.raises(ValueError):
        instant_or_none("1-01-01T00:00:00Z")


def test_a_release_published_in_year_1_is_stored_and_read_back_without_its_date(state_dir: Path) -> None:
    ancient = replace(release(), published_at=datetime(1, 1, 1, tzinfo=UTC))
    decoded = decode_release(encode_release(ancient))
    assert decoded == replace(ancient, published_at=None)
    store = publish(state_dir, {"photocraft": AppState(latest_release=ancient, fetched_ms=1_790_000_000_000)})
    try:
        saved = store.read().apps["photocraft"]  # not skipped: the app stays fetched
    finally:
        store.close()
    assert saved.latest_release == replace(ancient, published_at=None)
    assert saved.fetched_ms == 1_790_000_000_000
