"""The lease's parts on their own: its row in one file, the outage log, a deleted file made anew."""

from __future__ import annotations

import logging

import pytest

from craft_apps.host.lease_table import LeaseTable, OutageLog, read_lease
from craft_apps.host.remake import Remaker
from craft_apps.host.store import StateFileMissing, StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.domain import Backoff
from craft_apps.testing.clock import START_MS
from tests.host.support import fetched

TTL = 30_000


def test_the_table_takes_renews_and_expires_the_row(store: StateStore) -> None:
    table = LeaseTable(store, "poller", ttl_ms=TTL)
    fence = table.acquire("a", START_MS)
    assert fence is not None and fence.number == 1
    assert table.acquire("b", START_MS + 1) is None, "held until it expires"
    assert table.renew(fence, START_MS + 10_000)
    assert read_lease(store, "poller") == ("a", 1, START_MS + 10_000 + TTL)
    table.expire(fence)
    assert read_lease(store, "poller") == ("a", 1, 0)
    taken = table.acquire("b", START_MS + 20_000)
    assert taken is not None and taken.number == 2, "expired in place: taken at once, fence raised"


def test_without_a_file_the_table_waits_a_ttl_then_makes_an_empty_one(store: StateStore) -> None:
    table = LeaseTable(store, "poller", ttl_ms=TTL)
    store.close()
    store.path.unlink()
    with pytest.raises(StateFileMissing):
        table.acquire("b", START_MS)
    with pytest.raises(StateFileMissing):
        table.acquire("b", START_MS + TTL - 1)
    fence = table.acquire("b", START_MS + TTL)
    assert fence is not None and fence.number == 1


def test_the_table_notices_a_replaced_file(store: StateStore) -> None:
    table = LeaseTable(store, "poller", ttl_ms=TTL)
    table.note_file()
    assert not table.file_replaced()
    store.close()
    store.path.unlink()
    assert table.file_replaced()


def test_the_outage_log_says_each_change_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="craft_apps.host.lease")
    outage = OutageLog("poller")
    for _ in range(3):
        outage.note("a", "could not renew", StateUnavailable("locked"))
    outage.end()
    outage.end()
    assert [r.getMessage() for r in caplog.records] == [
        "lease 'poller': a could not renew: locked",
        "lease 'poller': the state file is reachable again",
    ]


def test_the_remaker_makes_a_deleted_file_only(store: StateStore) -> None:
    table = LeaseTable(store, "poller", ttl_ms=TTL)
    fence = table.acquire("a", START_MS)
    assert fence is not None
    remaker = Remaker(store, "poller", OutageLog("poller"))
    assert remaker.remake_if_deleted(fence, expires_ms=START_MS + TTL) is None, "nothing to make it from"
    remaker.contents = lambda: StateSnapshot(0, {"photocraft": fetched()}, Backoff())
    assert remaker.remake_if_deleted(fence, expires_ms=START_MS + TTL) is None, "the file is there"
    store.close()
    store.path.unlink()
    assert remaker.remake_if_deleted(fence, expires_ms=START_MS + TTL) is True
    assert StateStore(store.state_dir).read().apps == {"photocraft": fetched()}
    assert read_lease(store, "poller") == ("a", 1, START_MS + TTL)
