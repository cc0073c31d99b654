"""The body of each process in the lease race test (imported by 'spawn' children)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.testing.clock import FakeClock


def contend(barrier: Any, results: Any, root: str, rounds: int, holder: str) -> None:
    clock = FakeClock()
    # Cold: every round a fresh directory, so both also race to create the file and schema.
    for number in range(rounds):
        store = StateStore(Path(root) / f"cold-{number}", busy_timeout_s=10)
        lease = Lease(store, holder=holder, clock=clock)
        barrier.wait()
        store.open_for_writing()  # as the runner does before it tries for the lease
        won = lease.try_acquire()
        results.put(("cold", number, holder, won, lease.fence and lease.fence.number))
        store.close()
    # Warm: one file; each round's winner releases, so the next round races for an expired lease.
    store = StateStore(Path(root) / "shared", busy_timeout_s=10)
    store.open_for_writing()
    lease = Lease(store, holder=holder, clock=clock)
    for number in range(rounds):
        barrier.wait()
        won = lease.try_acquire()
        results.put(("warm", number, holder, won, lease.fence and lease.fence.number))
        barrier.wait()  # both have tried before the winner lets go
        if won:
            lease.release()
    store.close()
