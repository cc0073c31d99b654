"""The beat of one web process's feed: a look every second, whether or not requests come.

The beat never touches the database itself (the looker thread does, and may hang), so reading
the kept controls never waits behind a look. A forked child starts its own beat.
See docs/controls.md ("How fast an edit applies").
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Pacer:
    """Calls ``beat`` every ``period_s``, and at once when woken, in a thread of its own."""

    def __init__(self, beat: Callable[[], None], period_s: float) -> None:
        self._beat = beat
        self.period_s = period_s
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._pid: int | None = None
        self._begun = 0
        self._ended = 0

    def start(self) -> None:
        """Starts the thread unless this process has one already (a cheap check)."""
        if self._pid == os.getpid():
            return
        with self._cond:
            if self._pid == os.getpid():
                return
            self._pid, self._wake = os.getpid(), threading.Event()
            self._begun = self._ended = 0
            threading.Thread(
                target=self._run, args=(self._wake,), name="craft-apps-notices-beat", daemon=True
            ).start()

    def wake_and_wait(self, bound_s: float) -> bool:
        """Asks for a beat now and waits until one that began after this call has ended, at
        most ``bound_s``; False when it didn't end in time."""
        self.start()
        with self._cond:
            target = self._begun + 1
            self._wake.set()
            return self._cond.wait_for(lambda: self._ended >= target, timeout=bound_s)

    def stop(self) -> None:
        """Ends the thread after its beat in progress; a later ``start`` starts another."""
        with self._cond:
            wake, self._wake, self._pid = self._wake, threading.Event(), None
        wake.set()

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.wait(self.period_s)
            wake.clear()
            with self._cond:
                if wake is not self._wake:  # stopped
                    return
                self._begun += 1
                number = self._begun
            try:
                self._beat()
            except Exception:  # the beat never raises by design; if it does, it beats on
                logger.exception("Craft apps notices: the feed's beat failed; it goes on")
            finally:
                with self._cond:
                    self._ended = number
                    self._cond.notify_all()
