"""The fake GitHub's HTTP side: an answer as data, and the threaded server that sends it.

``FakeServer((host, port), site)`` serves on a loopback port; each request goes to
``site.answer(method, path, headers, client_ip)``, which returns an ``Answer``: a status,
headers and a body, sent normally or slow, dripped, held, hung, dropped, streamed or chunked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

# The fake's log lines keep the one logger name its users may have configured.
logger = logging.getLogger("craft_apps.testing.fake_github")

TEXT = "text/plain; charset=utf-8"
JSON = "application/json; charset=utf-8"
DOCS = "https://docs.github.com/rest"


@dataclass
class Answer:
    """What to send, and how.

    ``delivery``: normal, slow (after ``delay_s``), drip (a byte per ``delay_s``), hang, hold
    (no answer until the client closes), drop, stream (``body`` yields chunks, the headers
    carry Content-Length) or chunked.
    """

    status: int | None
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | Callable[[], Iterator[bytes]] = b""
    delivery: str = "normal"
    delay_s: float = 0.0


def json_bytes(value: object) -> bytes:
    """``value`` as GitHub's indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


def etag(body: bytes) -> str:
    """A strong ETag of ``body``."""
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Weak comparison, as RFC 9110 asks for ``If-None-Match``; ``*`` matches any release."""
    if if_none_match is None:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def error_body(message: str, docs: str, status: int) -> bytes:
    """GitHub's JSON error body."""
    return json_bytes({"message": message, "documentation_url": docs, "status": str(status)})


class Site(Protocol):
    """What the server asks each request's answer of."""

    stopping: threading.Event

    def answer(self, method: str, path: str, headers: dict[str, str], client_ip: str) -> Answer:
        """The answer to one request, recorded before it is sent."""
        ...

    def held_closed(self) -> None:
        """A held request's client closed its connection."""
        ...


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    site: Site

    def __init__(self, address: tuple[str, int], site: Site) -> None:
        super().__init__(address, _Handler)
        self.site = site
        self._live_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        """ThreadingMixIn's, with the thread known before it starts: ``join_handlers`` waits for
        a connection accepted just before ``stop`` too."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self._live_lock:
            self._handlers = {known for known in self._handlers if known.is_alive()}
            self._handlers.add(thread)
        thread.start()

    def track(self, connection: socket.socket) -> None:
        with self._live_lock:
            self._connections.add(connection)

    def untrack(self, connection: socket.socket) -> None:
        # The thread stays in ``_handlers``: it still runs after this (closing the socket), and
        # ``join_handlers`` must wait for its end, not for this line.
        with self._live_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        """Unblocks every handler stuck reading or writing (keep-alive, slow clients)."""
        with self._live_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the other side
                connection.shutdown(socket.SHUT_RDWR)

    def join_handlers(self, timeout: float) -> int:
        """Waits for the handler threads; returns how many are still running."""
        deadline = time.monotonic() + timeout
        while True:
            # Again after each round: a connection accepted just before the shutdown may have
            # registered its thread after the first look.
            with self._live_lock:
                handlers = [thread for thread in self._handlers if thread.is_alive()]
            if not handlers or time.monotonic() >= deadline:
                return len(handlers)
            for thread in handlers:
                thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer is normal here (timeouts, size limits).
        logger.debug("fake GitHub: connection from %s ended abruptly", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def version_string(self) -> str:
        return "GitHub.com"

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        site = self.server.site
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = site.answer(method, self.path, headers, self.client_address[0])
        try:
            self._deliver(answer, site.stopping)
        except OSError as err:  # the client went away; nothing to answer anymore
            logger.debug("fake GitHub: %s %s: client gone (%s)", method, self.path, err)
            self.close_connection = True

    def _deliver(self, answer: Answer, stopping: threading.Event) -> None:
        if answer.delivery == "hang":
            stopping.wait()
            self.close_connection = True
            return
        if answer.delivery == "hold":
            self._hold()
            return
        if answer.delivery == "drop":
            self.close_connection = True
            return
        if answer.delivery == "slow" and stopping.wait(answer.delay_s):
            self.close_connection = True
            return
        assert answer.status is not None
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        if answer.delivery == "chunked":
            self._send_chunked(answer)
            return
        if answer.delivery == "stream":
            self.end_headers()
            assert callable(answer.body)
            for chunk in answer.body():
                self.wfile.write(chunk)
            return
        assert isinstance(answer.body, bytes)
        body = answer.body if self.command != "HEAD" and answer.status != 304 else b""
        if answer.status != 304:
            self.send_header("content-length", str(len(answer.body)))
        self.end_headers()
        if answer.delivery == "drip":
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                if stopping.wait(answer.delay_s):
                    self.close_connection = True
                    return
            return
        self.wfile.write(body)

    def _hold(self) -> None:
        """Waits without answering until the client closes the connection (or ``stop()``
        shuts it down)."""
        try:
            with contextlib.suppress(OSError):
                while self.connection.recv(1):
                    pass  # a client sends nothing more while it waits for an answer
        finally:
            self.server.site.held_closed()
            self.close_connection = True

    def _send_chunked(self, answer: Answer) -> None:
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        assert callable(answer.body)
        for chunk in answer.body():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # The path only: headers (and with them any token) never reach the log.
        logger.debug("fake GitHub: %s %s -> %s", self.command, self.path, code)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("fake GitHub: " + format, *args)
