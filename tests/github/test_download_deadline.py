"""A release's small file downloads over real loopback sockets, its deadline handed in: the whole
download (connects, redirects, each read and the body) ends within ``DOWNLOAD_TIMEOUT_S``.

The deadline's expiry fires when the test says (a server's script, once it has sent some of the
body), and its time can be set ahead, so nothing here waits for 10 s to pass."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from craft_apps.github.client import DOWNLOAD_TIMEOUT_S, GitHubClient
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.domain import Release
from craft_apps.kernel.source import UpdaterFailed, UpdaterFetched
from craft_apps.testing.clock import FakeClock

from .support import ScriptedServer, drip

FIXTURES = Path(__file__).parent / "fixtures"
REPO = "storytold/artcraft"
Start = Callable[..., ScriptedServer]
TRICKLE_S = 0.005  # between two bytes of a body: only the deadline can end a trickle
GONE = f"latest.json: no complete answer within {DOWNLOAD_TIMEOUT_S:g} s"


class _Held:
    def __init__(self, owner: HeldDeadlines) -> None:
        self._owner = owner

    def cancel(self) -> None:
        self._owner.expire = None


class HeldDeadlines:
    """Real time plus what the test spends ahead; the expiry fires only through ``fire``."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.spent_before = 0.0  # spent as the deadline is armed, as if the download had run so long
        self.armed: list[float] = []
        self.expire: Callable[[], None] | None = None

    def monotonic(self) -> float:
        return time.monotonic() + self.spent

    def arm(self, seconds: float, expire: Callable[[], None]) -> _Held:
        self.armed.append(seconds)
        self.expire = expire
        self.spent += self.spent_before
        return _Held(self)

    def fire(self) -> None:
        expire = self.expire
        if expire is not None:
            expire()


@pytest.fixture
def deadlines() -> HeldDeadlines:
    return HeldDeadlines()


def release_at(url: str) -> Release:
    """The tauri-action fixture release, its files served by the server at ``url``."""
    text = (FIXTURES / "tauri_action_release.json").read_text().replace("https://github.com", url)
    return parse_release(text.encode(), REPO, url)


def fetch(server_url: str, deadlines: HeldDeadlines) -> tuple[object, float]:
    github = GitHubClient(
        api_url=server_url, web_url=server_url, token=None, clock=FakeClock(), deadlines=deadlines
    )
    started = time.monotonic()
    with github:
        outcome = github.fetch_updater(release_at(server_url))
    return outcome, time.monotonic() - started


def test_a_download_in_time_is_read_with_the_deadline_armed_once(
    scripted_server: Start, deadlines: HeldDeadlines
) -> None:
    def manifest(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        body = (FIXTURES / "tauri_action_latest.json").read_bytes().replace(b"https://github.com", url)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    server = scripted_server(manifest)
    url = server.url.encode()
    outcome, _ = fetch(server.url, deadlines)
    assert isinstance(outcome, UpdaterFetched) and outcome.files
    assert deadlines.armed == [DOWNLOAD_TIMEOUT_S] and deadlines.expire is None


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_body_trickling_past_the_deadline_ends_when_it_passes(
    scripted_server: Start, deadlines: HeldDeadlines, framing: str
) -> None:
    def trickle(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        if framing == "length":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n{")
            drip(conn, stop, b" " * 50, TRICKLE_S)
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
            for _ in range(50):
                if stop.wait(TRICKLE_S):
                    return
                conn.sendall(b"1\r\n \r\n")
        deadlines.fire()  # the deadline passes mid-body; the trickle goes on
        drip(conn, stop, b" " * 50_000, TRICKLE_S)

    outcome, _ = fetch(scripted_server(trickle).url, deadlines)
    assert outcome == UpdaterFailed(GONE, 1)
    assert deadlines.armed == [DOWNLOAD_TIMEOUT_S]


def test_a_read_waits_only_for_the_time_the_deadline_has_left(
    scripted_server: Start, deadlines: HeldDeadlines
) -> None:
    def stall_mid_body(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n{ ")
        stop.wait()

    deadlines.spent_before = DOWNLOAD_TIMEOUT_S - 0.05
    outcome, elapsed = fetch(scripted_server(stall_mid_body).url, deadlines)
    assert outcome == UpdaterFailed(GONE, 1)
    assert elapsed < DOWNLOAD_TIMEOUT_S / 2  # the read's own timeout (10 s) was cut to what was left


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose listener's queue is full: a new connection's SYN is dropped, so its connect
    hangs until its timeout."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))  # fills the queue (backlog + 1)
    yield port
    queued.close()
    listener.close()


def test_a_redirect_connects_only_for_the_time_the_deadline_has_left(
    scripted_server: Start, deadlines: HeldDeadlines, unanswered_port: int
) -> None:
    def redirect_late(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        deadlines.spent = DOWNLOAD_TIMEOUT_S - 0.05  # the first hop took nearly all of it
        location = f"http://127.0.0.1:{unanswered_port}/latest.json"
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    outcome, elapsed = fetch(scripted_server(redirect_late).url, deadlines)
    assert outcome == UpdaterFailed(GONE, 1)
    assert elapsed < DOWNLOAD_TIMEOUT_S / 2  # the new connect timeout (10 s) was cut to what was left
    assert deadlines.armed == [DOWNLOAD_TIMEOUT_S]
