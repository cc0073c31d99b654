"""What the signed-answer tests share: a server that replays an answer, and
``craft_apps_verify`` run against a URL."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.core.management import call_command

from craft_apps.kernel import signing
from tests.signing.vectors import KEY_A
from tests.support import RELEASE_INFO_URL as URL


@contextmanager
def replaying(body: bytes, headers: list[tuple[str, str]]) -> Iterator[str]:
    """A server on the path (an attacker's, a stale cache) that sends ``body`` with ``headers``,
    whatever is asked; yields the endpoint's URL on it."""

    class Replay(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{URL}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def verify_command(url: str, last_order: int, key: signing.SigningKey = KEY_A) -> str:
    """What ``craft_apps_verify`` prints for ``url`` pinning ``key`` after ``last_order``;
    ``CommandError`` with the reason when it refuses."""
    out = io.StringIO()
    pinned = signing.public_key_text(key.public)
    call_command(
        "craft_apps_verify", url, "--public-key", pinned, "--last-order", str(last_order), stdout=out
    )
    return out.getvalue()
