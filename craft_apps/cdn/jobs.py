"""A few threads that run the purge's jobs side by side, so one slow job never holds another.

At most ``size`` threads, started as jobs come and kept until ``close``; a job waits in the
queue only while every thread is busy. The threads are daemons: a request in flight never
holds the process's exit (``concurrent.futures`` joins its threads at exit).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

logger = logging.getLogger(__name__)


class Jobs:
    """Runs jobs on at most ``size`` daemon threads; ``idle`` waits until every job has ended."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[tuple[Callable[[], bool], Future[bool]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._pending = 0  # queued or running
        self._changed = threading.Condition()

    def submit(self, job: Callable[[], bool]) -> Future[bool]:
        """Runs ``job`` on a free thread (a new one while fewer than ``size`` run); its outcome."""
        outcome: Future[bool] = Future()
        with self._changed:
            self._pending += 1
            if self._pending > len(self._threads) and len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._run, name=f"{self._name}-{len(self._threads) + 1}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._queue.put((job, outcome))
        return outcome

    def idle(self, timeout_s: float) -> bool:
        """Waits until no job is queued or running; False if some still were after ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(lambda: self._pending == 0, timeout_s)

    def close(self) -> None:
        """Ends each thread once the jobs queued before are done (it doesn't wait for them)."""
        with self._changed:
            threads = len(self._threads)
        for _ in range(threads):
            self._queue.put(None)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            job, outcome = item
            try:
                outcome.set_result(job())
            except Exception as err:  # a job's bug must not end the thread: the next job runs
                logger.exception("Craft apps CDN purge: a purge job failed")
                outcome.set_exception(err)
            finally:
                with self._changed:
                    self._pending -= 1
                    self._changed.notify_all()
