"""Tell a webhook (Slack-compatible: a JSON ``{"text": ...}`` POST) that a guarded rollout paused
itself, from a thread of its own: ``send`` only queues, so no request and no check waits on it.

Each post waits ``timeout_s`` at most and is tried ``ATTEMPTS`` times, ``RETRY_S`` apart; a
queue of ``QUEUE_MAX`` drops what comes beyond it. A post that never went through is one log
line. See docs/controls.md#guarded-rollouts.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import urllib.request
from collections.abc import Callable

from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

ATTEMPTS = 3
RETRY_S = 2.0
TIMEOUT_S = 5.0
QUEUE_MAX = 100


def post(url: str, text: str, timeout_s: float) -> None:
    """One POST of ``{"text": text}`` to ``url``. Raises OSError (or ValueError) when it fails."""
    body = json.dumps({"text": text}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # an http(s) URLField
        answer.read(1024)


class Notifier:
    """The webhook posts of one process, one at a time in a daemon thread started on the first ``send``."""

    def __init__(
        self,
        sender: Callable[[str, str, float], None] = post,
        sleep: Callable[[float], object] | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self._sender = sender
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self.timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue(QUEUE_MAX)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.sent = 0  # posts that went through
        self.given_up = 0  # posts that failed every attempt, or didn't fit the queue

    def send(self, url: str, text: str) -> None:
        """Queues one post; never waits."""
        if not url:
            return
        try:
            self._queue.put_nowait((url, text))
        except queue.Full:
            self.given_up += 1
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="craft-apps-notify", daemon=True)
                self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                url, text = self._queue.get(timeout=1.0)
            except queue.Empty:
                continue
            self._deliver(url, text)

    def _deliver(self, url: str, text: str) -> None:
        failure = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(RETRY_S)
            try:
                self._sender(url, text, self.timeout_s)
            except (OSError, ValueError) as err:
                failure = one_line(f"{type(err).__name__}: {err}")
                continue
            self.sent += 1
            return
        self.given_up += 1
        logger.warning(
            "Craft app releases: the guarded rollout webhook failed %d times (%s); not sent: %s",
            ATTEMPTS,
            failure,
            one_line(text),
        )
