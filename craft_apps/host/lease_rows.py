"""The lease table's rows: taking, renewing and expiring a lease, and the fencing token every
write of the state file carries. ``craft_apps.host.lease`` decides when; these statements do it.

Each function runs inside a transaction its caller opened on the state file.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLLER_LEASE = "poller"

# Only expired leases can change hands, and the fence goes up whenever they do; one statement,
# so two processes racing for the same expired lease cannot both see it expired. Every custody
# gets a random epoch: a file deleted and made anew starts its fences at 1 again, and the epoch
# is what keeps a former holder's fence 1 from matching a newcomer's.
_ACQUIRE_LEASE = """
INSERT INTO lease (name, holder, fence, expires_ms, epoch) VALUES (:name, :holder, 1, :expires_ms, :epoch)
ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder, fence = lease.fence + 1, expires_ms = excluded.expires_ms,
        epoch = excluded.epoch
    WHERE lease.expires_ms <= :now_ms
RETURNING fence
"""
_THIS_CUSTODY = "name = :name AND holder = :holder AND fence = :fence AND epoch = :epoch"
_RENEW_LEASE = f"UPDATE lease SET expires_ms = :expires_ms WHERE {_THIS_CUSTODY} RETURNING fence"
_EXPIRE_LEASE = f"UPDATE lease SET expires_ms = 0 WHERE {_THIS_CUSTODY}"
_INSERT_LEASE = (
    "INSERT INTO lease (name, holder, fence, expires_ms, epoch)"
    " VALUES (:name, :holder, :fence, :expires_ms, :epoch)"
)


class FenceRejected(Exception):
    """A write carried a fence that is no longer the lease's current one; nothing was written."""


@dataclass(frozen=True)
class Fence:
    """What every write carries: the custody of the lease as this file's lease row records it.

    ``number`` increases at every change of custody within one file; ``epoch`` is random per
    custody, so a fence taken on a file that was since deleted matches nothing in its successor.
    """

    holder: str
    number: int
    epoch: str

    def __str__(self) -> str:
        return str(self.number)

    def params(self, name: str) -> dict[str, Any]:
        return {"name": name, "holder": self.holder, "fence": self.number, "epoch": self.epoch}


def acquire(db: sqlite3.Connection, name: str, holder: str, *, now_ms: int, ttl_ms: int) -> Fence | None:
    """The new fence when ``holder`` now holds the lease, None when someone else does."""
    epoch = secrets.token_hex(8)
    params = {"name": name, "holder": holder, "now_ms": now_ms, "expires_ms": now_ms + ttl_ms, "epoch": epoch}
    rows = db.execute(_ACQUIRE_LEASE, params).fetchall()
    return Fence(holder, int(rows[0][0]), epoch) if rows else None


def renew(db: sqlite3.Connection, name: str, fence: Fence, *, now_ms: int, ttl_ms: int) -> bool:
    """Extends the lease; False when ``fence`` is no longer this file's current custody."""
    return bool(db.execute(_RENEW_LEASE, {**fence.params(name), "expires_ms": now_ms + ttl_ms}).fetchall())


def expire(db: sqlite3.Connection, name: str, fence: Fence) -> None:
    """Expires the lease in place, keeping its fence, if ``fence`` is the current custody."""
    db.execute(_EXPIRE_LEASE, fence.params(name))


def insert(db: sqlite3.Connection, name: str, fence: Fence, *, expires_ms: int) -> None:
    """The lease row of ``fence``, in a file being made anew for its holder."""
    db.execute(_INSERT_LEASE, {**fence.params(name), "expires_ms": expires_ms})


def read(db: sqlite3.Connection, name: str) -> tuple[str, int, int] | None:
    """(holder, fence, expires_ms) of the lease, None when there is none."""
    row = db.execute("SELECT holder, fence, expires_ms FROM lease WHERE name = ?", (name,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), int(row[2]))


def check_fence(db: sqlite3.Connection, name: str, fence: Fence, path: Path) -> None:
    """Returns when ``fence`` is the lease's current custody; else raises FenceRejected."""
    row = db.execute("SELECT holder, fence, epoch FROM lease WHERE name = ?", (name,)).fetchone()
    custody = (fence.holder, fence.number, fence.epoch) if isinstance(fence, Fence) else None
    if row is not None and tuple(row) == custody:
        return
    held = "nobody" if row is None else f"{row[0]} with fence {row[1]}"
    raise FenceRejected(f"write with fence {fence} refused: lease {name!r} of {path} is held by {held}")
