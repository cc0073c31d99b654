"""What the GitHub client tests build on: GitHub's release JSON, and a scriptable local TCP server
for what ``responses`` cannot fake (slow drips, endless bodies, connection reuse). The fixture that
starts the server is in conftest.py."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import SHA

REPO = "storytold/photocraft"
WEB_URL = "https://github.com"
API_URL = "https://api.github.com"
LATEST_URL = f"{API_URL}/repos/{REPO}/releases/latest"
HASH = SHA
# A self-signed certificate for 127.0.0.1, valid until 2126, made for these tests only.
TLS_CERT = Path(__file__).parent / "tls" / "cert.pem"
TLS_KEY = Path(__file__).parent / "tls" / "key.pem"


def github_asset(name: str = "photocraft-0.5.0-windows-x64.msi", **overrides: Any) -> dict[str, Any]:
    asset: dict[str, Any] = {
        "url": f"{API_URL}/repos/{REPO}/releases/assets/1",
        "id": 1,
        "name": name,
        "label": "",
        "content_type": "application/octet-stream",
        "state": "uploaded",
        "size": 7,
        "digest": f"sha256:{HASH}",
        "download_count": 3,
        "browser_download_url": f"{WEB_URL}/{REPO}/releases/download/v0.5.0/{name}",
    }
    asset.update(overrides)
    return asset


def github_release(**overrides: Any) -> dict[str, Any]:
    release: dict[str, Any] = {
        "url": f"{API_URL}/repos/{REPO}/releases/1",
        "id": 1,
        "tag_name": "v0.5.0",
        "name": "PhotoCraft v0.5.0",
        "draft": False,
        "prerelease": False,
        "html_url": f"{WEB_URL}/{REPO}/releases/tag/v0.5.0",
        "created_at": "2026-10-08T14:30:00Z",
        "published_at": "2026-10-08T14:52:50Z",
        "body": "Notes",
        "author": {"login": "craft-release-bot[bot]"},
        "unknown_field": [1, 2, 3],
        "assets": [github_asset()],
    }
    release.update(overrides)
    return release


Script = Callable[[socket.socket, bytes, threading.Event], None]


class ScriptedServer:
    """A loopback TCP server: on each connection, for each request head it reads, runs ``script``.

    ``connections`` counts accepted connections; ``stop()`` ends every script (they watch the
    event) and joins every thread. With ``tls`` it speaks HTTPS with ``TLS_CERT``.
    """

    def __init__(self, script: Script, tls: bool = False) -> None:
        self._script = script
        self._tls: ssl.SSLContext | None = None
        if tls:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(TLS_CERT, TLS_KEY)
        self.stop_event = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.connections = 0
        self.requests: list[bytes] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name="scripted-server", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while not self.stop_event.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2.0)
            try:
                if self._tls is not None:
                    conn = self._tls.wrap_socket(conn, server_side=True)
                while not self.stop_event.is_set():
                    head = read_request_head(conn)
                    if head is None:
                        return
                    self.requests.append(head)
                    self._script(conn, head, self.stop_event)
            except OSError:
                return  # the client went away, which several tests make it do

    def stop(self) -> None:
        self.stop_event.set()
        self._acceptor.join(timeout=2)
        for thread in self._threads:
            thread.join(timeout=2)
        self._listener.close()


def read_request_head(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


def drip(conn: socket.socket, stop: threading.Event, data: bytes, interval: float) -> None:
    for byte in data:
        if stop.wait(interval):
            return
        conn.sendall(bytes([byte]))
