"""The reports' way in: a bounded queue the request puts a report on without waiting, and the
writer thread that adds them to the counts in batches. A full queue or a store that can't be
written drops reports, counted and logged once; the request never waits on either."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from craft_apps.kernel.clock import Clock, SystemClock
from craft_apps.reports import meters
from craft_apps.reports.counts import Counted, CountStore, ReportsUnavailable
from craft_apps.reports.digest import deployment_key, install_digest, release_digest
from craft_apps.reports.limits import RateLimits
from craft_apps.reports.report import Report
from craft_apps.reports.stores import count_store

logger = logging.getLogger(__name__)

CAPACITY = 10_000  # reports waiting for the writer, per web process
BATCH = 500  # reports per write at most
IDLE_WAIT_S = 1.0


class Intake:
    """One web process's queue, rate limits and writer thread (started on the first report)."""

    def __init__(
        self,
        store: Callable[[], CountStore] = count_store,
        *,
        capacity: int = CAPACITY,
        clock: Clock | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        writer: bool = True,
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.limits = RateLimits(monotonic)
        self.queue: queue.Queue[Counted] = queue.Queue(maxsize=capacity)
        self._key: bytes | None = None
        self._writer = writer
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def offer(self, report: Report, address: str) -> None:
        """Queue ``report`` unless a limit (the address's first: then no hash) or a full queue refuses it."""
        key = self._key
        if key is None:
            key = self._key = deployment_key()
        install = ""

        def hashed() -> str:
            nonlocal install
            install = install_digest(key, report)
            return install

        refusal = self.limits.refusal(address, hashed)
        if refusal is not None:
            meters.not_counted(refusal, "a client sent more reports than its rate limit")
            return
        counted = Counted(report.app, report.version, report.outcome, install, release_digest(key, report))
        try:
            self.queue.put_nowait(counted)
        except queue.Full:
            meters.not_counted(meters.QUEUE_FULL, "the reports' queue is full: the writer is behind")
            return
        self._start()

    def _start(self) -> None:
        if self._thread is not None or not self._writer:
            return
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="craft-apps-reports", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.write_batch(IDLE_WAIT_S)

    def write_batch(self, wait_s: float = 0.0) -> int:
        """Writes the reports waiting (up to ``BATCH``, waiting ``wait_s`` for a first one);
        returns how many were written. Never raises."""
        batch = self._take(wait_s)
        if not batch:
            return 0
        try:
            new = self.store().add(batch, self.clock.now_ms())
        except ReportsUnavailable as err:
            meters.not_counted(meters.UNWRITABLE, f"the counts can't be written: {err}", len(batch))
            return 0
        except Exception as err:  # a bug must not end the thread: each batch is tried anew
            logger.exception("Install reports: a batch couldn't be written")
            meters.not_counted(meters.UNWRITABLE, f"the counts can't be written: {err!r}", len(batch))
            return 0
        meters.counted(len(batch))
        logger.debug("Install reports: wrote %d, %d of them a first outcome.", len(batch), new)
        return len(batch)

    def _take(self, wait_s: float) -> list[Counted]:
        try:
            batch = [self.queue.get(timeout=wait_s) if wait_s > 0 else self.queue.get_nowait()]
        except queue.Empty:
            return []
        while len(batch) < BATCH:
            try:
                batch.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def close(self) -> None:
        """Stops the writer after its current batch (waits for it)."""
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()


class _Slot:
    """Where this process's intake is: the one piece of process state at module level here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.intake: Intake | None = None


_slot = _Slot()


def intake() -> Intake:
    """This process's intake, made on the first call."""
    current = _slot.intake
    if current is None:
        with _slot.lock:
            if _slot.intake is None:
                _slot.intake = Intake()
            current = _slot.intake
    return current


@contextmanager
def use(replacement: Intake) -> Iterator[Intake]:
    """``replacement`` is this process's intake for the block; then it is closed."""
    with _slot.lock:
        before, _slot.intake = _slot.intake, replacement
    try:
        yield replacement
    finally:
        with _slot.lock:
            _slot.intake = before
        replacement.close()
