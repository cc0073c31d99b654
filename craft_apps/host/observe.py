"""Everything an operator may ask about this host's state file, read in one call.

The health endpoint, the metrics and ``craft_apps_status`` all read through ``observe``, so they
see the same things the same way: the apps and the backoff, the poller lease and the poller's
counters, and what the poller dropped or was told (``drops``). It never raises: a file that
can't be used comes back with ``problem`` set (one line naming the file and why) and nothing
else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from craft_apps.host.counters import PollerCounters, read_counters
from craft_apps.host.drops import Drop, read_drops
from craft_apps.host.lease_table import read_lease
from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable


@dataclass(frozen=True)
class LeaseRow:
    holder: str
    fence: int
    expires_ms: int  # 0 after a clean stop


@dataclass(frozen=True)
class HostView:
    path: Path
    exists: bool
    problem: str | None = None  # why the file can't be used; then nothing else was read
    snapshot: StateSnapshot = field(default_factory=lambda: StateSnapshot(0))
    lease: LeaseRow | None = None
    counters: PollerCounters = field(default_factory=PollerCounters)
    drops: tuple[Drop, ...] = ()


def observe(store: StateStore) -> HostView:
    """The state file as it is now (four small read transactions, never a write)."""
    exists = True  # unless shown otherwise: a file that can't even be looked at exists
    try:
        exists = store.path.exists()
        snapshot = store.read()
        row = read_lease(store, store.lease_name)
        counters = read_counters(store)
        drops = read_drops(store)
    except StateUnavailable as err:
        return HostView(store.path, exists, problem=str(err))
    except Exception as err:  # an operator's view must show the trouble, not fail on it
        return HostView(store.path, exists, problem=f"{store.path}: {type(err).__name__}: {err}")
    lease = None if row is None else LeaseRow(holder=row[0], fence=row[1], expires_ms=row[2])
    return HostView(store.path, exists, snapshot=snapshot, lease=lease, counters=counters, drops=drops)
