"""Fixtures for the state file and lease tests: real, file-backed SQLite in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.host.lease import Lease
from craft_apps.host.store import Fence, StateStore
from craft_apps.testing.clock import FakeClock


@pytest.fixture
def store(state_dir: Path) -> Iterator[StateStore]:
    """The state file as the poller opens it at start-up (created, empty)."""
    store = StateStore(state_dir, busy_timeout_s=0.05)
    store.open_for_writing()
    yield store
    store.close()


@pytest.fixture
def writer(store: StateStore, fake_clock: FakeClock) -> Lease:
    """A lease held on ``store``: its fence is what writes carry."""
    lease = Lease(store, holder="host-a:1:aaaa", clock=fake_clock)
    assert lease.try_acquire()
    return lease


@pytest.fixture
def fence(writer: Lease) -> Fence:
    assert writer.fence is not None
    return writer.fence
