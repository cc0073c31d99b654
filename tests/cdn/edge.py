"""A CDN's purge endpoint for the purge tests: a real HTTP server in this process that records
each request (method, path, ``Host``), sets an event per path when it got one, and answers 200,
or, for the paths in ``hang``, nothing until ``release`` is set (then a 500). ``on_purge`` runs
with each request's path before it is answered."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_AT_MOST_S = 30  # a hanging path answers after this even if the test never releases it


def serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """``handler`` served on a free port of 127.0.0.1 by a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


class PurgeEdge:
    """Takes ``PURGE`` requests; ``requests`` holds (method, path, Host) of each, as it came."""

    def __init__(
        self, hang: frozenset[str] = frozenset(), on_purge: Callable[[str], None] = lambda path: None
    ) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.requests: list[tuple[str, str, str | None]] = []
        self._asked: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        edge = self

        class Handler(BaseHTTPRequestHandler):
            def do_PURGE(self) -> None:
                on_purge(self.path)
                edge.requests.append((self.command, self.path, self.headers.get("Host")))
                edge.got(self.path).set()
                if self.path in edge.hang:
                    edge.release.wait(HANG_AT_MOST_S)
                    return self.answer(500)
                return self.answer(200)

            def answer(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = serve(Handler)

    def got(self, path: str) -> threading.Event:
        """The event set when a request for ``path`` came."""
        with self._lock:
            return self._asked.setdefault(path, threading.Event())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
