"""A local stand-in for GitHub's ``GET /repos/{owner}/{repo}/releases/latest`` and its release
list, ``GET /repos/{owner}/{repo}/releases?per_page=N``.

A real HTTP server on a loopback port, serving releases held in memory, for the end-to-end
tests, the demo and the benchmarks. It behaves like GitHub where the poller depends on it:
strong ETags with ``If-None-Match`` revalidation (``304``, no body), ``404`` with GitHub's JSON
for a repository without a release, and the core rate limit with its headers on every answer
(unauthenticated requests counted per client IP, ``304`` included; authenticated ones per
token, where a ``304`` to a conditional request is free; past the quota every request, even a
conditional one, gets ``403``). Faults can be injected per repository or for all of them; a
fault that replaces the answer is not counted against the quota.

Invariants: every request is recorded, with its headers, before it is answered; a token never
reaches a log line or a ``repr``; ``stop()`` releases every fault that holds a connection
(hang, slow, drip), closes every connection and returns with no handler thread left running.

The release list holds every release published (``publish``), prereleases
(``publish_prerelease``) and drafts (``add_draft``, listed as GitHub lists them to a token that
may see them), newest first by ``published_at``, with an ETag of its own and the same 304s
and rate limit; ``delete_release`` removes one (the latest falls back to the newest stable
release left). Requests for it are recorded and counted like the latest's.

Private repositories (404 without a token), their files through expiring signed URLs and
GitHub Apps' token exchange are ``private``'s (``FakeGitHub.private``).

It also serves the web side of a release (``/{owner}/{repo}/releases/download/{tag}/{name}``,
``/{owner}/{repo}/releases/tag/{tag}``) with a line of text, so links work offline when
``web_url`` is its own URL. ``hold_download`` makes one of those files hang: its requests get
no answer until the client gives up (``held_open`` counts them) or ``stop()``.

Run ``python -m craft_apps.testing.fake_github [--host H] [--port P] [--empty] [--web-url U]``
to serve the demo releases until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import logging
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from craft_apps.conf import DEFAULT_GITHUB_WEB_URL
from craft_apps.testing.demo_releases import demo_files, demo_releases
from craft_apps.testing.private import PrivateGitHub

logger = logging.getLogger(__name__)

MAX_CLIENT_BODY_BYTES = 4 * 1024 * 1024  # what the poller accepts; OversizedFault goes past it
_RELEASES_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/releases/latest/?$")
_LIST_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/releases/?$")
_MAX_PER_PAGE = 100  # GitHub's own bound
_DEFAULT_PER_PAGE = 30
# The web side: /{owner}/{repo}/releases/download/{tag}/{name} and /{owner}/{repo}/releases/tag/{tag}
_WEB_PATH = re.compile(r"^/([^/]+)/([^/]+)/releases/(download|tag)/([^/]+)(?:/([^/]+))?$")
_TEXT = "text/plain; charset=utf-8"
_DOCS = "https://docs.github.com/rest"
_JSON = "application/json; charset=utf-8"
_CHUNK = 64 * 1024


# --- Faults -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusFault:
    """Answer with ``status`` and ``body`` instead of the release (a 5xx, a 401, ...)."""

    status: int = 502
    body: bytes = b'{"message": "Server Error"}'
    content_type: str = _JSON


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
_REPLACING_FAULTS = (StatusFault, HangFault, DropFault, OversizedFault, GarbageFault, RateLimited429Fault)


# --- Requests as recorded -----------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it.

    ``headers`` has lowercase names. ``status`` is None when no answer was sent (hang, drop).
    ``time`` is the injected ``now()`` at arrival, epoch seconds.
    """

    method: str
    path: str
    repo: str | None
    headers: dict[str, str]
    status: int | None
    time: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        shown = {k: ("<redacted>" if k == "authorization" else v) for k, v in self.headers.items()}
        return (
            f"RecordedRequest(method={self.method!r}, path={self.path!r}, repo={self.repo!r}, "
            f"status={self.status!r}, time={self.time!r}, headers={shown!r})"
        )


# --- Rate limits --------------------------------------------------------------------------------


@dataclass
class _Window:
    reset: int  # epoch seconds
    used: int = 0


@dataclass(frozen=True)
class _Caller:
    """Who a request counts against. ``key`` holds a digest of the token, never the token."""

    key: str
    limit: int
    description: str  # for the 403 message
    authenticated: bool


class _RateLimits:
    """GitHub's core quota: fixed windows of ``window_s`` starting at a caller's first request."""

    def __init__(self, window_s: int, now: Callable[[], float]) -> None:
        self._window_s = window_s
        self._now = now
        self._windows: dict[str, _Window] = {}

    def window(self, caller: _Caller) -> _Window:
        now = self._now()
        window = self._windows.get(caller.key)
        if window is None or now >= window.reset:
            window = _Window(reset=int(now) + self._window_s)
            self._windows[caller.key] = window
        return window

    @staticmethod
    def headers(caller: _Caller, window: _Window) -> list[tuple[str, str]]:
        return [
            ("x-ratelimit-limit", str(caller.limit)),
            ("x-ratelimit-remaining", str(max(0, caller.limit - window.used))),
            ("x-ratelimit-used", str(window.used)),
            ("x-ratelimit-reset", str(window.reset)),
            ("x-ratelimit-resource", "core"),
        ]


# --- Answers ------------------------------------------------------------------------------------


@dataclass
class _Answer:
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


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def _etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Weak comparison, as RFC 9110 asks for ``If-None-Match``; ``*`` matches any release."""
    if if_none_match is None:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _error_body(message: str, docs: str, status: int) -> bytes:
    return _json_bytes({"message": message, "documentation_url": docs, "status": str(status)})


@dataclass(frozen=True)
class _Published:
    release: dict[str, Any]
    body: bytes
    etag: str
    files: dict[str, bytes] = field(default_factory=dict)  # file name -> the bytes served


class FakeGitHub:
    """The stand-in server. Thread-safe: tests publish and set faults while clients poll."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        web_url: str = DEFAULT_GITHUB_WEB_URL,
        unauthenticated_limit: int = 60,
        authenticated_limit: int = 5000,
        window_s: int = 3600,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._host = host
        self._port = port
        self.web_url = web_url.rstrip("/")
        self._unauthenticated_limit = unauthenticated_limit
        self._authenticated_limit = authenticated_limit
        self._now = now
        self._lock = threading.Lock()
        self._releases: dict[str, _Published] = {}
        self._listed: dict[str, list[dict[str, Any]]] = {}  # repo -> every release, drafts too
        self._faults: dict[str | None, Fault] = {}
        self._requests: list[RecordedRequest] = []
        self._rate_limits = _RateLimits(window_s, now)
        self._user_ids: dict[str, int] = {}
        self._held_paths: set[str] = set()  # web-side files whose requests get no answer
        self.private = PrivateGitHub(now)  # private repositories and GitHub Apps
        self._held_open = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # Lifecycle

    def start(self) -> FakeGitHub:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self._host, self._port), _Handler)
        server.stand_in = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-github", daemon=True
        )
        self._thread.start()
        logger.debug("fake GitHub listening on %s", self.url)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # releases hang, slow and drip before the sockets go
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        left = server.join_handlers(timeout=5)
        if left:
            logger.warning("fake GitHub: %d handler thread(s) still running after stop()", left)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL, without a trailing slash."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not running; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # Releases and faults

    def publish(self, repo: str, release: dict[str, Any], files: Mapping[str, bytes] | None = None) -> None:
        """Serves ``release`` (GitHub's JSON shape) as ``repo``'s latest release from now on;
        ``files`` are the bytes its web side serves for those assets (e.g. a Tauri release's
        ``latest.json`` and ``.sig`` files), the others being a line of text."""
        kept = copy.deepcopy(release)
        body = _json_bytes(kept)
        with self._lock:
            self._releases[repo.lower()] = _Published(kept, body, _etag(body), dict(files or {}))
            self._list_add(repo, kept)

    def publish_prerelease(self, repo: str, release: dict[str, Any]) -> None:
        """Adds ``release`` as a prerelease to ``repo``'s release list; the latest stays."""
        with self._lock:
            self._list_add(repo, {**copy.deepcopy(release), "prerelease": True, "draft": False})

    def add_draft(self, repo: str, release: dict[str, Any]) -> None:
        """Adds ``release`` as a draft to ``repo``'s release list; the latest stays."""
        with self._lock:
            self._list_add(repo, {**copy.deepcopy(release), "draft": True})

    def delete_release(self, repo: str, tag: str) -> None:
        """Deletes the release ``tag``: it leaves the list, and if it was the latest, the newest
        stable, published release left becomes the latest (none left: a 404)."""
        key = repo.lower()
        with self._lock:
            self._listed[key] = [r for r in self._listed.get(key, []) if r.get("tag_name") != tag]
            latest = self._releases.get(key)
            if latest is None or latest.release.get("tag_name") != tag:
                return
            stable = [r for r in self._sorted_list(key) if not r.get("draft") and not r.get("prerelease")]
            if stable:
                body = _json_bytes(stable[0])
                self._releases[key] = _Published(stable[0], body, _etag(body))
            else:
                self._releases.pop(key, None)

    def unpublish(self, repo: str) -> None:
        with self._lock:
            self._releases.pop(repo.lower(), None)
            self._listed.pop(repo.lower(), None)

    def _list_add(self, repo: str, release: dict[str, Any]) -> None:
        listed = self._listed.setdefault(repo.lower(), [])
        listed[:] = [r for r in listed if r.get("tag_name") != release.get("tag_name")]
        listed.append(release)

    def _sorted_list(self, key: str) -> list[dict[str, Any]]:
        # Newest first, as GitHub lists them (a release without a time, a draft, first).
        return sorted(
            self._listed.get(key, []), key=lambda r: str(r.get("published_at") or "~"), reverse=True
        )

    def load_demo(self) -> FakeGitHub:
        """Publishes the demo release of each of the 13 apps, with the bytes of their files."""
        files = demo_files(web_url=self.web_url)
        for repo, release in demo_releases(web_url=self.web_url).items():
            self.publish(repo, release, files.get(repo))
        return self

    def published(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {repo: copy.deepcopy(p.release) for repo, p in self._releases.items()}

    def etag_of(self, repo: str) -> str | None:
        """The ETag a plain request for ``repo`` gets, or None without a release."""
        with self._lock:
            published = self._releases.get(repo.lower())
        return None if published is None else published.etag

    def set_fault(self, repo: str | None, fault: Fault | None) -> None:
        """Injects ``fault`` for ``repo`` (None: every repo without its own); None clears it."""
        key = None if repo is None else repo.lower()
        with self._lock:
            if fault is None:
                self._faults.pop(key, None)
            else:
                self._faults[key] = fault

    def hold_download(self, path: str) -> None:
        """Holds every request for ``path`` (a file of the web side, as
        ``/{owner}/{repo}/releases/download/{tag}/{name}``) open without an answer until its
        client closes the connection, or ``stop()``."""
        with self._lock:
            self._held_paths.add(path)

    def held_open(self) -> int:
        """How many held requests are open now: their clients have not closed them yet."""
        with self._lock:
            return self._held_open

    def _held_closed(self) -> None:
        with self._lock:
            self._held_open -= 1

    # Recorded requests

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, repo: str) -> list[RecordedRequest]:
        wanted = repo.lower()
        return [r for r in self.requests if r.repo is not None and r.repo.lower() == wanted]

    def reset_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # Answering (called by the handler threads)

    def _answer(self, method: str, path: str, headers: dict[str, str], client_ip: str) -> _Answer:
        arrived = self._now()
        parts = urlsplit(path)
        listing = _LIST_PATH.match(parts.path)
        match = _RELEASES_PATH.match(parts.path) or listing
        repo = f"{unquote(match[1])}/{unquote(match[2])}" if match else None
        # Private repositories, their files and GitHub Apps (``private``) come first.
        replied = self.private.answer(method, parts.path, parts.query, headers, self.url, self._find_asset)
        web = _WEB_PATH.match(parts.path)
        gated = repo or (f"{unquote(web[1])}/{unquote(web[2])}" if web else None)
        replied = replied or (self.private.refused(gated, headers.get("authorization")) if gated else None)
        if replied is not None:
            with self._lock:
                self._requests.append(RecordedRequest(method, path, repo, dict(headers), replied[0], arrived))
            return _Answer(*replied)
        with self._lock:
            held = parts.path in self._held_paths
            self._held_open += held  # open from the moment it is recorded
            web_page = (
                None if match else _Answer(None, delivery="hold") if held else self._web_page(parts.path)
            )
            per_page = _per_page(parts.query) if listing else None
            answer = web_page or self._decide(method, repo, headers, client_ip, per_page)
            self._requests.append(RecordedRequest(method, path, repo, dict(headers), answer.status, arrived))
        return answer

    def _find_asset(self, repo: str, asset_id: int) -> tuple[dict[str, Any], bytes | None] | None:
        """``repo``'s asset ``asset_id`` in any release it lists, and the bytes published for it."""
        with self._lock:
            latest = self._releases.get(repo.lower())
            releases = [
                r for r in self._listed.get(repo.lower(), []) if latest is None or r is not latest.release
            ]
            files = latest.files if latest is not None else {}
            for release in ([latest.release] if latest is not None else []) + releases:
                for asset in release.get("assets") or []:
                    if isinstance(asset, dict) and asset.get("id") == asset_id:
                        return copy.deepcopy(asset), files.get(str(asset.get("name")))
        return None

    def _web_page(self, path: str) -> _Answer | None:
        """A release's file or page on the web side (``web_url``), or None for any other path.

        Files are the bytes ``publish`` was given for them, else a line of text naming the file
        (not its real bytes: the digests won't match); the release page is its notes. Neither
        counts against the API's rate limit.
        """
        match = _WEB_PATH.match(path)
        if match is None:
            return None
        published = self._releases.get(f"{unquote(match[1])}/{unquote(match[2])}".lower())
        tag, name = unquote(match[4]), unquote(match[5] or "")
        if published is None or published.release.get("tag_name") != tag:
            return _Answer(404, [("content-type", _TEXT)], b"Not Found\n")
        if match[3] == "tag" and not name:
            notes = str(published.release.get("body") or "")
            return _Answer(200, [("content-type", _TEXT)], notes.encode())
        names = {a.get("name") for a in published.release.get("assets") or [] if isinstance(a, dict)}
        if match[3] != "download" or name not in names:
            return _Answer(404, [("content-type", _TEXT)], b"Not Found\n")
        if name in published.files:
            return _Answer(200, [("content-type", "application/octet-stream")], published.files[name])
        body = f"{name}: a stand-in for this file of {published.release.get('name')}.\n".encode()
        return _Answer(200, [("content-type", _TEXT)], body)

    def _decide(
        self,
        method: str,
        repo: str | None,
        headers: dict[str, str],
        client_ip: str,
        per_page: int | None = None,
    ) -> _Answer:
        caller = self._caller(headers.get("authorization"), client_ip)
        fault = self._fault_for(repo)
        if isinstance(fault, _REPLACING_FAULTS):
            # A replaced answer is not counted: GitHub never really handled it.
            return self._faulted(fault, caller, self._rate_limits.window(caller))
        window = self._rate_limits.window(caller)
        if window.used >= caller.limit:
            return self._rate_limit_exceeded(caller, window)

        answer = self._plain_answer(method, repo, headers, caller, fault, per_page)
        if not (caller.authenticated and answer.status == 304):
            window.used += 1
        answer.headers.extend(self._rate_limits.headers(caller, window))
        if isinstance(fault, SlowFault):
            answer.delivery, answer.delay_s = "slow", fault.seconds
        elif isinstance(fault, DripFault):
            answer.delivery, answer.delay_s = "drip", fault.interval_s
        return answer

    def _plain_answer(
        self,
        method: str,
        repo: str | None,
        headers: dict[str, str],
        caller: _Caller,
        fault: Fault | None,
        per_page: int | None = None,
    ) -> _Answer:
        if headers.get("authorization") is not None and not caller.authenticated:
            return _Answer(401, [("content-type", _JSON)], _error_body("Bad credentials", _DOCS, 401))
        published: _Published | None
        if per_page is not None and repo is not None and repo.lower() in self._listed and method == "GET":
            body = _json_bytes(self._sorted_list(repo.lower())[:per_page])
            published = _Published({}, body, _etag(body))
        else:
            published = self._releases.get(repo.lower()) if repo is not None else None
        if method != "GET" or published is None:
            docs = f"{_DOCS}/releases/releases#get-the-latest-release"
            return _Answer(404, [("content-type", _JSON)], _error_body("Not Found", docs, 404))
        if isinstance(fault, ForeignAssetsFault):
            published = _with_foreign_assets(published, fault.prefix)
        cache = "private" if caller.authenticated else "public"
        headers_out = [
            ("etag", published.etag),
            ("cache-control", f"{cache}, max-age=60, s-maxage=60"),
            ("vary", "Accept, Authorization, Cookie, X-GitHub-OTP"),
            ("x-github-api-version-selected", "2022-11-28"),
        ]
        if _etag_matches(headers.get("if-none-match"), published.etag):
            return _Answer(304, headers_out)
        headers_out.append(("content-type", _JSON))
        return _Answer(200, headers_out, published.body)

    def _faulted(self, fault: Fault, caller: _Caller, window: _Window) -> _Answer:
        rate_headers = self._rate_limits.headers(caller, window)
        if isinstance(fault, HangFault):
            return _Answer(None, delivery="hang")
        if isinstance(fault, DropFault):
            return _Answer(None, delivery="drop")
        if isinstance(fault, StatusFault):
            return _Answer(fault.status, [("content-type", fault.content_type), *rate_headers], fault.body)
        if isinstance(fault, GarbageFault):
            return _Answer(200, [("content-type", "text/html; charset=utf-8"), *rate_headers], fault.body)
        if isinstance(fault, RateLimited429Fault):
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
            )
            body = _error_body(message, f"{_DOCS}/overview/rate-limits-for-the-rest-api", 429)
            headers = [("content-type", _JSON), ("retry-after", str(fault.retry_after_s)), *rate_headers]
            return _Answer(429, headers, body)
        assert isinstance(fault, OversizedFault)
        return _oversized_answer(fault, rate_headers)

    def _rate_limit_exceeded(self, caller: _Caller, window: _Window) -> _Answer:
        message = f"API rate limit exceeded for {caller.description}."
        if not caller.authenticated:
            message += (
                " (But here's the good news: Authenticated requests get a higher rate limit."
                " Check out the documentation for more details.)"
            )
        body = _error_body(message, f"{_DOCS}/overview/rate-limits-for-the-rest-api", 403)
        headers = [("content-type", _JSON), *self._rate_limits.headers(caller, window)]
        return _Answer(403, headers, body)

    def _caller(self, authorization: str | None, client_ip: str) -> _Caller:
        token = _bearer_token(authorization)
        if token is None:
            return _Caller(f"ip:{client_ip}", self._unauthenticated_limit, client_ip, authenticated=False)
        key = "token:" + hashlib.sha256(token.encode()).hexdigest()
        user_id = self._user_ids.setdefault(key, 1000 + len(self._user_ids))
        return _Caller(key, self._authenticated_limit, f"user ID {user_id}", authenticated=True)

    def _fault_for(self, repo: str | None) -> Fault | None:
        if repo is None:
            return None
        return self._faults.get(repo.lower(), self._faults.get(None))


def _per_page(query: str) -> int:
    """The list's page size as GitHub reads ``per_page``: 30 without one, at most 100."""
    for name, _, value in (part.partition("=") for part in query.split("&")):
        if name == "per_page" and value.isdigit():
            return max(1, min(int(value), _MAX_PER_PAGE))
    return _DEFAULT_PER_PAGE


def _bearer_token(authorization: str | None) -> str | None:
    """The token of ``Bearer <token>`` (or GitHub's older ``token <token>``); None otherwise."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() not in {"bearer", "token"} or not token.strip():
        return None
    return token.strip()


def _with_foreign_assets(published: _Published, prefix: str) -> _Published:
    release = copy.deepcopy(published.release)
    for asset in release.get("assets") or []:
        if isinstance(asset, dict):
            asset["browser_download_url"] = prefix + str(asset.get("name", "download"))
    body = _json_bytes(release)
    return _Published(release, body, _etag(body))


def _oversized_answer(fault: OversizedFault, rate_headers: list[tuple[str, str]]) -> _Answer:
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

    headers = [("content-type", _JSON), *rate_headers]
    if fault.content_length:
        headers.append(("content-length", str(len(head) + filler + len(tail))))
        return _Answer(200, headers, chunks, delivery="stream")
    return _Answer(200, headers, chunks, delivery="chunked")


# --- HTTP plumbing ------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stand_in: FakeGitHub

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
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
    server: _Server

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
        stand_in = self.server.stand_in
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = stand_in._answer(method, self.path, headers, self.client_address[0])
        try:
            self._deliver(answer, stand_in._stopping)
        except OSError as err:  # the client went away; nothing to answer anymore
            logger.debug("fake GitHub: %s %s: client gone (%s)", method, self.path, err)
            self.close_connection = True

    def _deliver(self, answer: _Answer, stopping: threading.Event) -> None:
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
            self.server.stand_in._held_closed()
            self.close_connection = True

    def _send_chunked(self, answer: _Answer) -> None:
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


# --- Command line -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m craft_apps.testing.fake_github",
        description="Serve GitHub's latest-release API for the Craft Apps from memory.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--empty", action="store_true", help="start without the demo releases")
    parser.add_argument(
        "--web-url",
        default=DEFAULT_GITHUB_WEB_URL,
        help="where release links point; this server's own URL serves the files too (works offline)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log every request")
    options = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if options.verbose else logging.INFO, format="%(message)s"
    )

    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        stand_in = FakeGitHub(host=options.host, port=options.port, web_url=options.web_url).start()
    except OSError as err:
        logger.error("fake GitHub: cannot listen on %s:%s: %s", options.host, options.port, err)
        return 1
    if not options.empty:
        stand_in.load_demo()
    releases = len(stand_in.published())
    logger.info("fake GitHub serving %d release(s) at %s", releases, stand_in.url)
    while not stop.wait(0.5):
        pass
    stand_in.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
