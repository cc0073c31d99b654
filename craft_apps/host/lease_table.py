"""The lease row of one state file as its holder sees it, and when that file can't be reached.

``LeaseTable`` takes, renews, expires and reads the row ``name`` with the statements of
``lease_rows``; ``acquire(holder, now_ms)`` returns the new fencing token, or None when someone
else holds the lease. It also holds the identity of the file the lease was last taken or renewed
in, so a replaced file is noticed. ``OutageLog`` logs once when the file can't be reached and
once when it can again.
"""

from __future__ import annotations

import logging

from craft_apps.host import lease_rows
from craft_apps.host.database import FileId, StateFileMissing, StateUnavailable
from craft_apps.host.lease_rows import Fence
from craft_apps.host.store import StateStore

logger = logging.getLogger("craft_apps.host.lease")  # the logger these messages always had


def read_lease(store: StateStore, name: str) -> tuple[str, int, int] | None:
    """(holder, fence, expires_ms) of the lease ``name``, None when there is none (or no file).
    Raises StateUnavailable."""
    return store.read_with(lambda db: lease_rows.read(db, name))


class OutageLog:
    """Whether the state file is unreachable now, for the lease ``name``: logs each change once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.unreachable = False

    def note(self, who: str, what: str, err: StateUnavailable) -> None:
        """Logs ``err`` if the file was reachable until now (once per outage, not per attempt)."""
        if not self.unreachable:
            logger.warning("lease %r: %s %s: %s", self.name, who, what, err)
            self.unreachable = True

    def end(self) -> None:
        """Logs that the file is reachable again, if it was not."""
        if self.unreachable:
            logger.info("lease %r: the state file is reachable again", self.name)
            self.unreachable = False


class LeaseTable:
    """The lease row ``name`` of ``store``'s file, and the file it was last taken or renewed in."""

    def __init__(self, store: StateStore, name: str, *, ttl_ms: int) -> None:
        self.store = store
        self.name = name
        self.ttl_ms = ttl_ms
        self.missing_since_ms: int | None = None  # when a standby first found no file
        self.held_file: FileId | None = None  # the file the lease was last taken or renewed in

    def acquire(self, holder: str, now_ms: int) -> Fence | None:
        """The new fence when ``holder`` now holds the lease, None when someone else does. With
        no file, raises StateFileMissing for a TTL, then makes an empty file and takes it there.
        Raises StateUnavailable."""
        try:
            fence = self._acquire(holder, now_ms)
        except StateFileMissing:
            # The holder, if alive, makes the file anew from what it knows within a renewal
            # check; an empty file made here first would throw that away. After a TTL it is gone.
            if self.missing_since_ms is None:
                self.missing_since_ms = now_ms
            if now_ms - self.missing_since_ms < self.ttl_ms:
                raise
            self.store.open_for_writing()
            fence = self._acquire(holder, now_ms)
        self.missing_since_ms = None
        return fence

    def renew(self, fence: Fence, now_ms: int) -> bool:
        """Extends the lease; False when ``fence`` is no longer this file's current custody.
        Raises StateUnavailable."""
        return self.store.write_with(
            lambda db: lease_rows.renew(db, self.name, fence, now_ms=now_ms, ttl_ms=self.ttl_ms)
        )

    def expire(self, fence: Fence) -> None:
        """Expires the lease in place, keeping its fence, if ``fence`` is the current custody."""
        self.store.write_with(lambda db: lease_rows.expire(db, self.name, fence))

    def note_file(self) -> None:
        """Remembers the file there now as the one the lease is held in."""
        try:
            self.held_file = self.store.file_identity()
        except StateUnavailable:
            self.held_file = None

    def file_replaced(self) -> bool:
        """Whether the file there is not the one the lease was last taken or renewed in."""
        try:
            return self.store.file_identity() != self.held_file
        except StateUnavailable:
            return False  # the renewal, when due, meets the same trouble

    def _acquire(self, holder: str, now_ms: int) -> Fence | None:
        return self.store.write_with(
            lambda db: lease_rows.acquire(db, self.name, holder, now_ms=now_ms, ttl_ms=self.ttl_ms)
        )
