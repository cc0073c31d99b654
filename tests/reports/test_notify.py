"""The guarded rollouts' webhook (``reports.notify``) against local HTTP servers: a post is
Slack's JSON ``{"text": ...}``; a server that hangs never holds up ``send``; failures are retried,
then given up with one line."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from craft_apps.reports.notify import ATTEMPTS, Notifier, post


@contextmanager
def server(
    statuses: list[int], release: threading.Event | None = None
) -> Iterator[tuple[str, list[bytes], threading.Event]]:
    """A server answering each POST with the next of ``statuses`` (after ``release``, if given)."""
    bodies: list[bytes] = []
    arrived = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            arrived.set()
            if release is not None:
                release.wait(10)
            self.send_response(statuses.pop(0) if statuses else 200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/hook", bodies, arrived
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_post_is_slacks_json_text():
    with server([200]) as (url, bodies, _):
        post(url, "paused", 5.0)
    assert [json.loads(b) for b in bodies] == [{"text": "paused"}]


def test_a_hanging_server_never_holds_up_send():
    release = threading.Event()
    notifier = Notifier(timeout_s=30.0)
    with server([200], release) as (url, _, arrived):
        notifier.send(url, "paused")  # returns while nothing has even reached the server
        assert arrived.wait(10), "the post is made on the notifier's thread"
        assert notifier.sent == 0, "send returned while the server still holds the post"
        release.set()
    notifier.close()


class Lines(logging.Handler):
    """The lines ``reports.notify`` logs, and an event set by the first."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self.first = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.first.set()


@pytest.fixture
def lines() -> Iterator[Lines]:
    found, logger = Lines(), logging.getLogger("craft_apps.reports.notify")
    logger.addHandler(found)
    try:
        yield found
    finally:
        logger.removeHandler(found)


def test_a_failing_server_is_tried_again_then_given_up_with_one_line(lines: Lines):
    sleeps: list[float] = []
    notifier = Notifier(sleep=sleeps.append, timeout_s=5.0)
    with server([500] * ATTEMPTS) as (url, bodies, _):
        notifier.send(url, "paused at 10 %:\n12 of 250 installs failing")
        assert lines.first.wait(10), "the give-up line is the signal that every attempt was made"
    notifier.close()
    assert len(bodies) == ATTEMPTS and len(sleeps) == ATTEMPTS - 1
    assert notifier.given_up == 1 and notifier.sent == 0
    assert lines.lines == [
        "Craft app releases: the guarded rollout webhook failed 3 times "
        "(HTTPError: HTTP Error 500: Internal Server Error); "
        "not sent: paused at 10 %: 12 of 250 installs failing"
    ]
