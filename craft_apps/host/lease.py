"""One active poller per state directory: a named lease with a fencing token in the state file.

Acquiring is a single upsert that only takes an expired lease, and every change of custody
(anyone acquiring after expiry, the same holder included) increments the fence. The holder
renews every TTL/3. If no renewal has succeeded for the renew deadline (2/3 TTL) it counts
itself lost, whatever the reason (a takeover, or a blackout it cannot see through), and since
the deadline is shorter than the TTL it does so before anyone else may take over. Every write to
the state file carries the fence (holder, number and a random epoch per custody), so a stalled
former holder's writes are refused, in this file and in any file made after it was deleted. A
clean shutdown expires the lease in place: a standby takes over at once and the fence survives.

A holder whose file is deleted makes it anew at once (within a renewal check), whole, from what
its poller holds (``keep_file_with``) and with its own lease row, unless another process made
one first: then that file's lease decides and the holder steps down. A standby that finds no
file leaves the holder a TTL to do so before it creates an empty one itself.
All timing comes from the injected clock; timestamps are Unix milliseconds.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable

from craft_apps.host.database import FileId, StateFileMissing, StateUnavailable
from craft_apps.host.lease_rows import POLLER_LEASE, Fence
from craft_apps.host.store import StateSnapshot, StateStore
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import HistoryFetch, LeaseTiming

logger = logging.getLogger(__name__)


def make_holder() -> str:
    """A holder name unique to this process instance: ``host:pid:random hex``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


DEFAULT_TIMING = LeaseTiming()


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
        self._clock = clock
        self._renewed_ms = 0  # when the last successful acquire or renewal started
        self._in_blackout = False
        self._released = False
        self._missing_since_ms: int | None = None  # when a standby first found no file
        self._held_file: FileId | None = None  # the file the lease was last taken or renewed in
        self._contents: Callable[[], StateSnapshot] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Lease({self.name!r}, holder={self.holder!r}, fence={self.fence})"

    def try_acquire(self) -> bool:
        """One attempt. True when held (already, or now with a new fence). False when someone
        else holds it, or when the state file can't be reached: then ``unreachable`` says why."""
        with self._lock:
            now = self._clock.now_ms()
            if self._held_at(now):
                return True
            if self.fence is not None:
                self._lose(f"no successful renewal for {now - self._renewed_ms} ms")
            try:
                fence = self._acquire_or_wait_for_the_file(now)
            except StateUnavailable as err:
                self.unreachable = err  # the caller reports it, or waits (and logs it) below
                return False
            self.unreachable = None
            self._end_blackout()
            if fence is None:
                logger.debug("lease %r is held by someone else; %s waits", self.name, self.holder)
                return False
            self.fence = fence
            self._renewed_ms = now
            self._released = False
            self._note_held_file()
            logger.info("lease %r acquired by %s with fence %s", self.name, self.holder, fence)
            return True

    def _acquire_or_wait_for_the_file(self, now: int) -> Fence | None:
        try:
            fence = self.store.acquire_lease(self.name, self.holder, now_ms=now, ttl_ms=self.timing.ttl_ms)
        except StateFileMissing:
            # The holder, if alive, makes the file anew from what it knows within a renewal
            # check; an empty file made here first would throw that away. After a TTL it is gone.
            if self._missing_since_ms is None:
                self._missing_since_ms = now
            if now - self._missing_since_ms < self.timing.ttl_ms:
                raise
            self.store.open_for_writing()
            fence = self.store.acquire_lease(self.name, self.holder, now_ms=now, ttl_ms=self.timing.ttl_ms)
        self._missing_since_ms = None
        return fence

    def wait_until_acquired(self) -> bool:
        """Tries every retry period; False when the clock's sleep reports a stop request."""
        while not self.try_acquire():
            if self.unreachable is not None:
                self._note_blackout("could not try to acquire", self.unreachable)
            if not self._clock.sleep(self.timing.retry_ms / 1000):
                return False
        return True

    def renew_if_due(self) -> bool:
        """Renews once TTL/3 has passed since the last renewal; False when the lease is lost."""
        with self._lock:
            if self.fence is None:
                return False
            fence = self.fence
            now = self._clock.now_ms()
            if self._deadline_passed(now):
                self._lose(f"no successful renewal for {now - self._renewed_ms} ms")
                return False
            recreated = self._recreate_if_deleted(fence, now)
            if recreated is not None:
                return recreated
            # A file replaced since the last renewal is checked at once: this holder's custody
            # is most likely not in it, and the poller must not ask GitHub on its behalf.
            due = now - self._renewed_ms >= self.timing.renew_every_ms
            if not due and not self._file_replaced():
                return True
            try:
                renewed = self.store.renew_lease(self.name, fence, now_ms=now, ttl_ms=self.timing.ttl_ms)
            except StateUnavailable as err:
                # A blackout is not yet a loss; the deadline decides (the attempt itself took time).
                self._note_blackout("could not renew", err)
                later = self._clock.now_ms()
                if self._deadline_passed(later):
                    self._lose(f"no successful renewal for {later - self._renewed_ms} ms")
                    return False
                return True
            if not renewed:
                self._lose("someone else took it over (the fence changed, or the file was made anew)")
                return False
            self._end_blackout()
            self._renewed_ms = now
            self._note_held_file()
            return True

    def keep_file_with(self, contents: Callable[[], StateSnapshot] | None) -> None:
        """What to make the state file anew from if it is deleted while held (None: nothing)."""
        with self._lock:
            self._contents = contents

    def _recreate_if_deleted(self, fence: Fence, now: int) -> bool | None:
        """None when the file is there (or there is nothing to make it from); else whether this
        holder still holds the lease after trying to make it anew."""
        if self._contents is None:
            return None
        try:
            if self.store.file_identity() is not None:
                return None
            contents = self._contents()
            made = self.store.recreate(
                self.name,
                fence,
                expires_ms=now + self.timing.ttl_ms,
                apps=contents.apps,
                backoff=contents.backoff,
                history={
                    key: (releases, contents.history_fetches.get(key, HistoryFetch()))
                    for key, releases in contents.history.items()
                },
            )
        except StateUnavailable as err:
            self._note_blackout("could not make the deleted state file anew", err)
            return None  # the renewal below meets the same trouble; the deadline decides
        if not made:
            self._lose("the state file was deleted and another process made a new one first")
            return False
        logger.warning(
            "Craft app releases: the state file %s was deleted; made it anew from memory "
            "(%d apps, their ETags and fetch times, the backoff and this lease, fence %s).",
            self.store.path,
            len(contents.apps),
            fence,
        )
        self._end_blackout()
        self._renewed_ms = now
        self._note_held_file()
        return True

    def _note_held_file(self) -> None:
        try:
            self._held_file = self.store.file_identity()
        except StateUnavailable:
            self._held_file = None

    def _file_replaced(self) -> bool:
        try:
            return self.store.file_identity() != self._held_file
        except StateUnavailable:
            return False  # the renewal, when due, meets the same trouble

    def is_held(self) -> bool:
        """Acquired, not lost or released, and the renew deadline not passed (per the clock)."""
        with self._lock:
            return self._held_at(self._clock.now_ms())

    def release(self) -> None:
        """Expires the lease in place (the fence survives). Idempotent; never raises."""
        with self._lock:
            fence, self.fence = self.fence, None
            if fence is None:
                return
            self._released = True
            try:
                self.store.expire_lease(self.name, fence)
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
        return self.store.lease_row(self.name)

    def _held_at(self, now_ms: int) -> bool:
        return self.fence is not None and not self._deadline_passed(now_ms)

    def _deadline_passed(self, now_ms: int) -> bool:
        return now_ms - self._renewed_ms >= self.timing.renew_deadline_ms

    def _lose(self, reason: str) -> None:
        logger.warning("lease %r lost by %s (fence %s): %s", self.name, self.holder, self.fence, reason)
        self.fence = None

    def _note_blackout(self, what: str, err: StateUnavailable) -> None:
        if not self._in_blackout:  # once per blackout, not once per attempt
            logger.warning("lease %r: %s %s: %s", self.name, self.holder, what, err)
            self._in_blackout = True

    def _end_blackout(self) -> None:
        if self._in_blackout:
            logger.info("lease %r: the state file is reachable again", self.name)
            self._in_blackout = False


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
            self.lease.store.close_current_thread()
