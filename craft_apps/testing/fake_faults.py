"""Faults the fake GitHub can inject instead of, or into, a release's answer.

The fault classes (``StatusFault``, ``HangFault``, ``DripFault``, ...) say what goes wrong;
``FaultBoard`` holds which repository has which fault and which web-side files are held open.
``faulted_answer(fault, rate_headers)`` takes a fault that replaces the answer and returns the
``Answer`` to send instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from craft_apps.testing.fake_http import DOCS, JSON, Answer, error_body

MAX_CLIENT_BODY_BYTES = 4 * 1024 * 1024  # what the poller accepts; OversizedFault goes past it
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class StatusFault:
    """Answer with ``status`` and ``body`` instead of the release (a 5xx, a 401, ...)."""

    status: int = 502
    body: bytes = b'{"message": "Server Error"}'
    content_type: str = JSON


@dataclass(frozen=True)
class SlowFault:
    """Wait ``seconds`` before giving the normal answer."""

    seconds: float


@dataclass(frozen=True)
class HangFault:
    """Read the request and never answer; ``stop()`` releases it."""


@dataclass(frozen=True)
class DropFault:
    """Read the request and close the connection without answering."""


@dataclass(frozen=True)
class OversizedFault:
    """A ``200`` with a valid release JSON bigger than the poller accepts (4 MiB).

    Without ``content_length`` the body is sent chunked, so only counting the bytes read
    reveals the size.
    """

    size: int = MAX_CLIENT_BODY_BYTES + 256 * 1024
    content_length: bool = True


@dataclass(frozen=True)
class GarbageFault:
    """A ``200`` whose body is not JSON."""

    body: bytes = b"<!DOCTYPE html><html><body><h1>Unicorn!</h1>This page is taking too long</body></html>"


@dataclass(frozen=True)
class ForeignAssetsFault:
    """The normal release, but every asset's ``browser_download_url`` points under ``prefix``."""

    prefix: str = "https://downloads.evil.example/"


@dataclass(frozen=True)
class RateLimited429Fault:
    """GitHub's secondary rate limit: ``429`` with ``Retry-After``."""

    retry_after_s: int = 60


@dataclass(frozen=True)
class DripFault:
    """The normal answer, its body sent one byte every ``interval_s`` seconds."""

    interval_s: float = 0.05


Fault = (
    StatusFault
    | SlowFault
    | HangFault
    | DropFault
    | OversizedFault
    | GarbageFault
    | ForeignAssetsFault
    | RateLimited429Fault
    | DripFault
)
REPLACING_FAULTS = (StatusFault, HangFault, DropFault, OversizedFault, GarbageFault, RateLimited429Fault)


class FaultBoard:
    """Which repository has which fault, and which web-side files get no answer. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str | None, Fault] = {}
        self._held_paths: set[str] = set()  # web-side files whose requests get no answer
        self._held_open = 0

    def set_fault(self, repo: str | None, fault: Fault | None) -> None:
        """Injects ``fault`` for ``repo`` (None: every repo without its own); None clears it."""
        key = None if repo is None else repo.lower()
        with self._lock:
            if fault is None:
                self._faults.pop(key, None)
            else:
                self._faults[key] = fault

    def fault_for(self, repo: str | None) -> Fault | None:
        """The fault of ``repo``, else the one for every repository, else None."""
        if repo is None:
            return None
        with self._lock:
            return self._faults.get(repo.lower(), self._faults.get(None))

    def hold_download(self, path: str) -> None:
        """Holds every request for ``path`` (a file of the web side, as
        ``/{owner}/{repo}/releases/download/{tag}/{name}``) open without an answer until its
        client closes the connection, or ``stop()``."""
        with self._lock:
            self._held_paths.add(path)

    def open_if_held(self, path: str) -> bool:
        """Whether requests for ``path`` are held; a held one counts as open from now."""
        with self._lock:
            held = path in self._held_paths
            self._held_open += held
            return held

    def held_open(self) -> int:
        """How many held requests are open now: their clients have not closed them yet."""
        with self._lock:
            return self._held_open

    def held_closed(self) -> None:
        """A held request's client closed its connection."""
        with self._lock:
            self._held_open -= 1


def faulted_answer(fault: Fault, rate_headers: list[tuple[str, str]]) -> Answer:
    """The answer a fault that replaces the release sends instead."""
    if isinstance(fault, HangFault):
        return Answer(None, delivery="hang")
    if isinstance(fault, DropFault):
        return Answer(None, delivery="drop")
    if isinstance(fault, StatusFault):
        return Answer(fault.status, [("content-type", fault.content_type), *rate_headers], fault.body)
    if isinstance(fault, GarbageFault):
        return Answer(200, [("content-type", "text/html; charset=utf-8"), *rate_headers], fault.body)
    if isinstance(fault, RateLimited429Fault):
        message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
        body = error_body(message, f"{DOCS}/overview/rate-limits-for-the-rest-api", 429)
        headers = [("content-type", JSON), ("retry-after", str(fault.retry_after_s)), *rate_headers]
        return Answer(429, headers, body)
    assert isinstance(fault, OversizedFault)
    return _oversized_answer(fault, rate_headers)


def _oversized_answer(fault: OversizedFault, rate_headers: list[tuple[str, str]]) -> Answer:
    # Valid JSON, so a client that reads it all would accept it: only a size limit protects.
    head = b'{"tag_name": "v9.9.9", "name": "Oversized", "draft": false, "assets": [], "body": "'
    tail = b'"}'
    filler = max(0, fault.size - len(head) - len(tail))

    def chunks() -> Iterator[bytes]:
        yield head
        block = b"x" * _CHUNK
        left = filler
        while left > 0:
            yield block[: min(left, _CHUNK)]
            left -= _CHUNK
        yield tail

    headers = [("content-type", JSON), *rate_headers]
    if fault.content_length:
        headers.append(("content-length", str(len(head) + filler + len(tail))))
        return Answer(200, headers, chunks, delivery="stream")
    return Answer(200, headers, chunks, delivery="chunked")
