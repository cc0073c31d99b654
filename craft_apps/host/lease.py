"""One active poller per state directory: a named lease with a fencing token in the state file.

``Lease`` decides when to take, renew, lose and release it: ``try_acquire()`` and
``renew_if_due()`` return whether this process holds it. Taking only succeeds on an expired
lease and raises the fencing token; a holder with no successful renewal for 2/3 TTL counts
itself lost before anyone may take over. ``LeaseKeeper`` renews from a thread. Time comes from
the injected clock; timestamps are Unix milliseconds.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable

from craft_apps.host.database import StateUnavailable
from craft_apps.host.lease_rows import POLLER_LEASE, Fence
from craft_apps.host.lease_table import LeaseTable, OutageLog, read_lease
from craft_apps.host.remake import Remaker
from craft_apps.host.store import StateSnapshot, StateStore
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import LeaseTiming

logger = logging.getLogger(__name__)


def make_holder() -> str:
    """A holder name unique to this process instance: ``host:pid:random hex``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


DEFAULT_TIMING = LeaseTiming()


# The rule in full. Every change of custody (the same holder included) raises the fence; the
# holder renews every TTL/3 and counts itself lost after 2/3 TTL without a successful renewal,
# whatever the reason (a takeover, or a file it cannot reach). Every write carries the fence
# (holder, number and a random epoch per custody), so a stalled former holder's writes are
# refused, in this file and in any file made after it was deleted. A clean shutdown expires the
# lease in place: a standby takes over at once and the fence survives. A holder whose file is
# deleted makes it anew within a renewal check, whole, from what its poller holds
# (``keep_file_with``), unless another process made one first: then that file's lease decides.
# A standby that finds no file leaves the holder a TTL to do so before it makes an empty one.
class Lease:
    """This process's claim on the lease ``name``; thread-safe (the keeper renews in a thread)."""

    def __init__(
        self,
        store: StateStore,
        *,
        name: str = POLLER_LEASE,
        holder: str,
        clock: Clock,
        timing: LeaseTiming = DEFAULT_TIMING,
    ) -> None:
        self.store = store
        self.name = name
        self.holder = holder
        self.timing = timing
        self.fence: Fence | None = None  # set while held; None before, after loss and after release
        # Why the last attempt to acquire could not reach the state file; None when it could.
        self.unreachable: StateUnavailable | None = None
        self.table = LeaseTable(store, name, ttl_ms=timing.ttl_ms)
        self.outage = OutageLog(name)
        self.remaker = Remaker(store, name, self.outage)  # what a deleted file is made anew from
        self._clock = clock
        self._renewed_ms = 0  # when the last successful acquire or renewal started
        self._released = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Lease({self.name!r}, holder={self.holder!r}, fence={self.fence})"

    def try_acquire(self) -> bool:
        """One attempt. True when held (already, or now with a new fence). False when someone
        else holds it, or when the state file can't be reached: then ``unreachable`` says why."""
        with self._lock:
            now = self._clock.now_ms()
            if self.fence is not None and not self._overdue(now):
                return True
            if self.fence is not None:
                self._lose(f"no successful renewal for {now - self._renewed_ms} ms")
            try:
                fence = self.table.acquire(self.holder, now)
            except StateUnavailable as err:
                self.unreachable = err  # the caller reports it, or waits (and logs it) below
                return False
            self.unreachable = None
            self.outage.end()
            if fence is None:
                logger.debug("lease %r is held by someone else; %s waits", self.name, self.holder)
                return False
            self.fence = fence
            self._released = False
            self._renewed_ms = now
            self.table.note_file()
            logger.info("lease %r acquired by %s with fence %s", self.name, self.holder, fence)
            return True

    def wait_until_acquired(self) -> bool:
        """Tries every retry period; False when the clock's sleep reports a stop request."""
        while not self.try_acquire():
            if self.unreachable is not None:
                self.outage.note(self.holder, "could not try to acquire", self.unreachable)
            if not self._clock.sleep(self.timing.retry_ms / 1000):
                return False
        return True

    def renew_if_due(self) -> bool:
        """Renews once TTL/3 has passed since the last renewal; False when the lease is lost."""
        with self._lock:
            fence = self.fence
            if fence is None:
                return False
            now = self._clock.now_ms()
            if self._overdue(now):
                return self._lose(f"no successful renewal for {now - self._renewed_ms} ms")
            remade = self.remaker.remake_if_deleted(fence, expires_ms=now + self.timing.ttl_ms)
            if remade is False:
                return self._lose("the state file was deleted and another process made a new one first")
            if remade is None:  # not made anew here: renew in the file there, when due
                # A file replaced since the last renewal is checked at once: this holder's custody
                # is most likely not in it, and the poller must not ask GitHub on its behalf.
                due = now - self._renewed_ms >= self.timing.renew_every_ms
                if not due and not self.table.file_replaced():
                    return True
                try:
                    renewed = self.table.renew(fence, now)
                except StateUnavailable as err:
                    # An unreachable file is not yet a loss: the deadline decides (the try took time).
                    self.outage.note(self.holder, "could not renew", err)
                    later = self._clock.now_ms()
                    return not self._overdue(later) or self._lose(
                        f"no successful renewal for {later - self._renewed_ms} ms"
                    )
                if not renewed:
                    return self._lose(
                        "someone else took it over (the fence changed, or the file was made anew)"
                    )
            self.outage.end()
            self._renewed_ms = now
            self.table.note_file()
            return True

    def keep_file_with(self, contents: Callable[[], StateSnapshot] | None) -> None:
        """What to make the state file anew from if it is deleted while held (None: nothing)."""
        with self._lock:
            self.remaker.contents = contents

    def is_held(self) -> bool:
        """Acquired, not lost or released, and the renew deadline not passed (per the clock)."""
        with self._lock:
            return self.fence is not None and not self._overdue(self._clock.now_ms())

    def release(self) -> None:
        """Expires the lease in place (the fence survives). Idempotent; never raises."""
        with self._lock:
            fence, self.fence = self.fence, None
            if fence is None:
                return
            self._released = True
            try:
                self.table.expire(fence)
            except Exception as err:  # shutdown must go on; the lease then expires by itself
                logger.warning(
                    "lease %r: %s could not release fence %s: %s", self.name, self.holder, fence, err
                )
            else:
                logger.info("lease %r released by %s (fence %s)", self.name, self.holder, fence)

    @property
    def released(self) -> bool:
        """Whether release() ended the last custody (rather than a loss)."""
        return self._released

    def current(self) -> tuple[str, int, int] | None:
        """(holder, fence, expires_ms) as stored, for logs and tests. Raises StateUnavailable."""
        return read_lease(self.store, self.name)

    def _overdue(self, now_ms: int) -> bool:
        """Whether the renew deadline has passed since the last successful renewal."""
        return now_ms - self._renewed_ms >= self.timing.renew_deadline_ms

    def _lose(self, reason: str) -> bool:
        """Counts the lease lost for ``reason``; returns False, for the caller to return."""
        logger.warning("lease %r lost by %s (fence %s): %s", self.name, self.holder, self.fence, reason)
        self.fence = None
        return False


class LeaseKeeper:
    """Renews a held lease from a daemon thread; calls ``on_lost`` once if it is lost."""

    def __init__(self, lease: Lease, *, on_lost: Callable[[], None], poll_s: float = 1.0) -> None:
        self.lease = lease
        self._on_lost = on_lost
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("LeaseKeeper.start() called twice")
        self._thread = threading.Thread(target=self._run, name=f"lease-keeper-{self.lease.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops renewing (does not release the lease) and waits for the thread to end."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(5.0, 2 * self._poll_s))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._poll_s):
                try:
                    held = self.lease.renew_if_due()
                except Exception:
                    logger.exception("lease %r: renewal failed unexpectedly", self.lease.name)
                    held = False
                if not held:
                    if not self._stop.is_set() and not self.lease.released:
                        self._on_lost()
                    return
        finally:
            self.lease.store.file.connections.close_current_thread()
