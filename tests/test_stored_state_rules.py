"""One rule for what a stored time, count and ETag may be, and for which entry is newer.

The host's state file and the fleet's Redis hashes hold the same fields and read them as
untrusted input; both decide with ``craft_apps.kernel.domain``'s rules, so a value one of them refuses
the other refuses too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.fleet.entry import app_entry_problems, decode_app_entry, encode_fetch
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import MAX_TIME_MS, AppState, newer_wins
from tests.support import publish, release

REPO = "storytold/photocraft"  # the repository every shared fetch here is of


@pytest.mark.parametrize(
    ("stored", "incoming", "gap", "wins"),
    [
        (None, None, 0, True),
        (None, 5, 0, True),
        (5, None, 0, False),
        (5, 4, 0, False),
        (5, 5, 0, True),
        (5, 5, 1, False),
        (5, 6, 1, True),
        (5, 64, 60, False),
        (5, 65, 60, True),
    ],
)
def test_newer_wins(stored, incoming, gap, wins):
    assert newer_wins(stored, incoming, min_gap_ms=gap) is wins


BAD_TIMES = [0, -1, MAX_TIME_MS + 1, 10**18]
BAD_ETAGS = ['"a\nb"', '"\x00"', '"' + "x" * 600 + '"']
GOOD = AppState(latest_release=release(), fetched_ms=1_700_000_000_000, etag='W/"abc"')


@pytest.mark.parametrize("fetched_ms", [*BAD_TIMES, MAX_TIME_MS, 1])
def test_both_stores_take_the_same_times(tmp_path: Path, fetched_ms: int):
    valid = 0 < fetched_ms <= MAX_TIME_MS
    state = AppState(latest_release=release(), fetched_ms=fetched_ms, etag='"e"')
    if valid:
        assert publish(tmp_path, {"photocraft": state}).read().apps["photocraft"].fetched_ms == fetched_ms
    else:
        with pytest.raises(ValueError, match="fetched_ms"):
            publish(tmp_path, {"photocraft": state})
    fields = encode_fetch(release(), '"e"', fetched_ms, "host-a", REPO)
    entry = decode_app_entry(fields)
    assert (entry is not None and entry.fetched is not None) is valid
    assert bool(app_entry_problems(fields)) is not valid


@pytest.mark.parametrize("etag", [*BAD_ETAGS, '"ok"', 'W/"ok"'])
def test_both_stores_take_the_same_etags(tmp_path: Path, etag: str):
    valid = etag.isprintable() and len(etag) <= 512
    state = AppState(latest_release=release(), fetched_ms=1_700_000_000_000, etag=etag)
    if valid:
        assert publish(tmp_path, {"photocraft": state}).read().apps["photocraft"].etag == etag
    else:
        with pytest.raises(ValueError, match="etag"):
            publish(tmp_path, {"photocraft": state})
    fields = encode_fetch(release(), etag, 1_700_000_000_000, "host-a", REPO)
    entry = decode_app_entry(fields)
    assert (entry is not None and entry.fetched is not None) is valid


def test_the_host_store_refuses_to_go_back_in_time(tmp_path: Path):
    store: StateStore = publish(tmp_path, {"photocraft": GOOD})
    older = AppState(latest_release=None, fetched_ms=GOOD.fetched_ms - 1)  # type: ignore[operator]
    with pytest.raises(AssertionError):  # publish asserts every write was taken
        publish(tmp_path, {"photocraft": older})
    assert store.read().apps["photocraft"] == replace(
        GOOD, repo="storytold/photocraft"
    )  # as publish records it
