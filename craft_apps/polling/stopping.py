"""SIGTERM and SIGINT for the poller process: the first stops it gracefully, a second at once.

``StopOnSignals(runner)`` is a context manager: on the first signal the runner is asked to stop,
waits end at once, the request in flight may finish for ``GRACE_S`` and the process exits 0 (the
lease expired so a standby takes over); a second signal exits 130 at once. Signals arrive through
``signal.set_wakeup_fd`` and a thread of its own handles them. See docs/poller.md.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from craft_apps.polling.process import EXIT_OK, PollerRunner

logger = logging.getLogger(__name__)

GRACE_S = 1.5  # the request in flight may finish this long after the first stop signal
EXIT_INTERRUPTED = 130
RELEASE_WAIT_S = 0.5  # how long a second signal waits for the lease to be expired in place
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _noted_by_the_wakeup_fd(signum: int, frame: FrameType | None) -> None:
    """Replaces the default action (KeyboardInterrupt, or death for SIGTERM); the interpreter has
    written the signal to the wakeup fd before this runs, if it ever does."""


def _exit_now(status: int) -> NoReturn:
    logging.shutdown()
    os._exit(status)


_DONE = 0  # written on leaving: the watching thread ends (no signal has the number 0)


class StopOnSignals:
    """While entered (main thread only: Python takes signals there), SIGTERM and SIGINT stop
    ``runner`` gracefully, a second at once; leaving restores the handlers that were there before.

    The interpreter's own C handler writes each signal's number to a pipe (``set_wakeup_fd``),
    from whichever thread the kernel picked; a thread started beforehand reads it and does
    everything else, and the Python-level handler does nothing. A Python handler that logs, sets
    an event or starts a thread hung for good when two signals came together: it runs on the main
    thread between two bytecodes and can find it holding the very lock it needs, and it runs only
    once the main thread gets back to Python, which may wait on a socket.
    """

    def __init__(
        self,
        runner: PollerRunner,
        *,
        grace_s: float = GRACE_S,
        exit_now: Callable[[int], object] = _exit_now,
    ) -> None:
        self.runner = runner
        self.grace_s = grace_s
        self.exit_now = exit_now
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)
        self._previous_fd = -1
        self._previous: dict[int, object] = {}
        self._watcher = threading.Thread(target=self._watch, name="craft_apps-stop-signals", daemon=True)

    def __enter__(self) -> StopOnSignals:
        self._watcher.start()
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, _noted_by_the_wakeup_fd)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]  # what signal.signal gave
        signal.set_wakeup_fd(self._previous_fd)
        os.write(self._write_fd, bytes([_DONE]))
        self._watcher.join(RELEASE_WAIT_S)
        if not self._watcher.is_alive():
            os.close(self._read_fd)
            os.close(self._write_fd)

    def _next(self, timeout_s: float | None) -> int | None:
        """The number of the next signal (``_DONE`` once restored); None when ``timeout_s`` passed."""
        ready, _, _ = select.select([self._read_fd], [], [], timeout_s)
        return os.read(self._read_fd, 1)[0] if ready else None

    def _watch(self) -> None:
        first = self._next(None)
        if first is None or first == _DONE:  # (no timeout: None never comes)
            return
        logger.info("%s: stopping after the request in flight (a second signal exits at once).", _name(first))
        self.runner.stop.set()
        second = self._next(self.grace_s)
        if second == _DONE:
            return  # the run ended within the grace
        if second is None:
            self._release()  # the request in flight took longer than the grace
            self.exit_now(EXIT_OK)
            return
        logger.warning("Second %s: exiting now.", _name(second))
        # The main thread may hold the lease's lock: release from another thread, briefly.
        releasing = threading.Thread(target=self._release, daemon=True)
        releasing.start()
        releasing.join(RELEASE_WAIT_S)
        self.exit_now(EXIT_INTERRUPTED)

    def _release(self) -> None:
        """Expires the lease in place, so a standby takes over at once. SQLite transactions are
        atomic: a write cut short by the exit is simply not there."""
        if self.runner.lease is not None:
            self.runner.note_stop()
            self.runner.lease.release()


def _name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
