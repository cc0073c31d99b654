"""``GitHubClient`` over real loopback sockets: the total deadline against servers that drip,
the size cap against an endless body, connection reuse, and connection errors."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from craft_apps.github.client import GitHubClient
from craft_apps.kernel.source import Failed, Fetched, NotModified
from craft_apps.testing.clock import FakeClock

from .support import REPO, TLS_CERT, WEB_URL, ScriptedServer, drip, github_release

Start = Callable[..., ScriptedServer]
TOTAL = 0.5  # seconds: the whole exchange's budget in these tests
DRIP_INTERVAL = 0.02  # far below TOTAL, so only a total deadline can stop a drip


def client(server: ScriptedServer, **kwargs: Any) -> GitHubClient:
    kwargs.setdefault("total_timeout", TOTAL)
    kwargs.setdefault("connect_timeout", 1.0)
    kwargs.setdefault("token", None)
    if server.url.startswith("https:"):
        kwargs["session"] = requests.Session()
        kwargs["session"].verify = str(TLS_CERT)
    return GitHubClient(api_url=server.url, web_url=WEB_URL, clock=FakeClock(), **kwargs)


def timed_fetch(github: GitHubClient, etag: str | None = None) -> tuple[object, float]:
    started = time.monotonic()
    outcome = github.fetch_latest_release(REPO, etag)
    return outcome, time.monotonic() - started


def drip_headers(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    drip(conn, stop, b"X-Drip: " + b"a" * 10_000, DRIP_INTERVAL)


def drip_body(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n")
    drip(conn, stop, b" " * 10_000, DRIP_INTERVAL)


def hang(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
    stop.wait()


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
@pytest.mark.parametrize("script", [drip_headers, drip_body], ids=["headers", "body"])
def test_a_server_dripping_its_answer_fails_at_the_total_deadline(
    scripted_server: Start, script: Any, tls: bool
) -> None:
    with client(scripted_server(script, tls=tls)) as github:
        outcome, elapsed = timed_fetch(github)
    assert outcome == Failed(f"no complete answer within {TOTAL:g} s")
    assert TOTAL * 0.9 <= elapsed < TOTAL + 1.0


def test_a_server_that_never_answers_fails_in_time(scripted_server: Start) -> None:
    with client(scripted_server(hang)) as github:
        outcome, elapsed = timed_fetch(github)
    assert outcome in (
        Failed(f"no complete answer within {TOTAL:g} s"),
        Failed(f"the answer stalled for {TOTAL:g} s"),
    )
    assert elapsed < TOTAL + 1.0


def test_an_endless_body_is_refused_once_past_the_limit(scripted_server: Start) -> None:
    sent = [0]

    def endless_chunks(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
        while not stop.is_set():
            conn.sendall(chunk)
            sent[0] += 0x10000

    limit = 256 * 1024
    with client(scripted_server(endless_chunks), total_timeout=5.0, max_body_bytes=limit) as github:
        outcome, elapsed = timed_fetch(github)
    assert outcome == Failed(f"answer too large: over {limit} bytes")
    assert elapsed < 2.0  # the size, not the deadline, ended it


def test_after_a_deadline_the_same_client_fetches_normally(scripted_server: Start) -> None:
    answers = [drip_body, answer_like_github]

    def slow_then_fast(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        answers.pop(0)(conn, head, stop)

    server = scripted_server(slow_then_fast)
    with client(server) as github:
        assert github.fetch_latest_release(REPO, None) == Failed(f"no complete answer within {TOTAL:g} s")
        outcome = github.fetch_latest_release(REPO, None)
    assert isinstance(outcome, Fetched) and outcome.release is not None
    assert server.connections == 2  # the cut connection was not reused


RELEASE = json.dumps(github_release()).encode()


def answer_like_github(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
    if b"/repos/storytold/missing/" in head:
        body = (
            b'{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}'
        )
        status = b"404 Not Found"
    elif b'if-none-match: "v1"' in head.lower():
        conn.sendall(b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n')
        return
    else:
        body, status = RELEASE, b"200 OK"
    conn.sendall(
        b"HTTP/1.1 " + status + b'\r\nETag: "v1"\r\nContent-Type: application/json\r\n'
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def test_one_connection_serves_every_kind_of_answer(scripted_server: Start) -> None:
    server = scripted_server(answer_like_github)
    with client(server, total_timeout=5.0) as github:
        first = github.fetch_latest_release(REPO, None)
        assert isinstance(first, Fetched) and first.etag == '"v1"'
        assert github.fetch_latest_release(REPO, first.etag) == NotModified()
        assert github.fetch_latest_release("storytold/missing", None) == Fetched(None, None)
        assert isinstance(github.fetch_latest_release(REPO, None), Fetched)
    assert len(server.requests) == 4
    assert server.connections == 1


def test_a_refused_connection_fails_without_raising() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    github = GitHubClient(api_url=f"http://127.0.0.1:{port}", web_url=WEB_URL, token=None, clock=FakeClock())
    outcome = github.fetch_latest_release(REPO, None)
    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("request failed: ConnectionError: ")
    assert "\n" not in outcome.reason and len(outcome.reason) < 300


@pytest.mark.parametrize("repeat", range(3))
def test_a_fast_answer_is_not_cut_by_the_deadline_timer(scripted_server: Start, repeat: int) -> None:
    # A timer left over from an earlier request would cut a later one before that one's own 0.2 s
    # were up. An answer that did take 0.2 s (a loaded machine) is the deadline doing its job, and
    # the connection it closed is opened anew.
    server = scripted_server(answer_like_github)
    cut_early = []
    timed_out = 0
    with client(server, total_timeout=0.2) as github:
        for _ in range(20):
            started = time.monotonic()
            outcome = github.fetch_latest_release(REPO, '"v1"')
            took = time.monotonic() - started
            if outcome != NotModified():
                assert outcome == Failed("no complete answer within 0.2 s"), outcome
                timed_out += 1
                if took < 0.2:
                    cut_early.append(took)
    assert cut_early == []
    assert timed_out < 20, "not one fast answer"
    assert server.connections == 1 + timed_out


def test_https_carries_the_token_and_reuses_its_connection(scripted_server: Start) -> None:
    server = scripted_server(answer_like_github, tls=True)
    with client(server, total_timeout=5.0, token="ghp_tls_token") as github:
        first = github.fetch_latest_release(REPO, None)
        assert isinstance(first, Fetched) and first.etag == '"v1"'
        assert github.fetch_latest_release(REPO, first.etag) == NotModified()
    assert server.connections == 1
    assert all(b"authorization: bearer ghp_tls_token\r\n" in head.lower() for head in server.requests)


def test_https_redirecting_to_plain_http_fails_and_never_reaches_it(scripted_server: Start) -> None:
    plain = scripted_server(answer_like_github)

    def downgrade(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        location = f"{plain.url}/repos/{REPO}/releases/latest".encode()
        conn.sendall(
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"
        )

    secure = scripted_server(downgrade, tls=True)
    with client(secure, total_timeout=5.0, token="ghp_tls_token") as github:
        assert github.fetch_latest_release(REPO, None) == Failed("refused a redirect from https to http")
    assert len(secure.requests) == 1
    assert plain.connections == 0
