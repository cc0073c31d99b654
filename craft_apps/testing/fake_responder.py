"""How the fake GitHub answers each request, and the log of every request it received.

``Responder.answer(method, path, headers, client_ip)`` takes one request and returns the
``Answer`` GitHub would give: a private repository's or App's (``private``), a held or web-side
file, or the release (``fake_releases``) with its faults (``fake_faults``) and rate limit
(``fake_quota``). Every request is recorded in the ``RequestLog`` before it is answered.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from craft_apps.testing.fake_faults import (
    REPLACING_FAULTS,
    DripFault,
    Fault,
    FaultBoard,
    ForeignAssetsFault,
    SlowFault,
    faulted_answer,
)
from craft_apps.testing.fake_http import DOCS, JSON, TEXT, Answer, error_body, etag_matches
from craft_apps.testing.fake_quota import Caller, Quotas
from craft_apps.testing.fake_releases import Published, ReleaseCatalogue, with_foreign_assets
from craft_apps.testing.private import PrivateGitHub

_RELEASES_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/releases/latest/?$")
_LIST_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/releases/?$")
_MAX_PER_PAGE = 100  # GitHub's own bound
_DEFAULT_PER_PAGE = 30
# The web side: /{owner}/{repo}/releases/download/{tag}/{name} and /{owner}/{repo}/releases/tag/{tag}
_WEB_PATH = re.compile(r"^/([^/]+)/([^/]+)/releases/(download|tag)/([^/]+)(?:/([^/]+))?$")


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
        """The header's value, whatever the case of ``name``; None without it."""
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        shown = {k: ("<redacted>" if k == "authorization" else v) for k, v in self.headers.items()}
        return (
            f"RecordedRequest(method={self.method!r}, path={self.path!r}, repo={self.repo!r}, "
            f"status={self.status!r}, time={self.time!r}, headers={shown!r})"
        )


class RequestLog:
    """Every request received, in order. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []

    def record(self, request: RecordedRequest) -> None:
        """Adds ``request`` at the end."""
        with self._lock:
            self._requests.append(request)

    def all(self) -> list[RecordedRequest]:
        """A copy of every request so far."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        """Forgets every request so far."""
        with self._lock:
            self._requests.clear()


@dataclass(frozen=True)
class Parts:
    """What the responder consults: the releases, the faults, the quota and private repos."""

    releases: ReleaseCatalogue
    faults: FaultBoard
    quotas: Quotas
    private: PrivateGitHub
    log: RequestLog


class Responder:
    """Decides and records each request's answer; the server's ``Site``."""

    def __init__(self, parts: Parts, *, url: Callable[[], str], now: Callable[[], float]) -> None:
        self._parts = parts
        self._url = url
        self._now = now
        self._lock = threading.Lock()  # one answer decided at a time: the quota counts
        self.stopping = threading.Event()  # set by stop(): releases hang, slow and drip

    def held_closed(self) -> None:
        """A held request's client closed its connection."""
        self._parts.faults.held_closed()

    def answer(self, method: str, path: str, headers: dict[str, str], client_ip: str) -> Answer:
        """The answer to one request, recorded before it is sent."""
        arrived = self._now()
        parts = urlsplit(path)
        listing = _LIST_PATH.match(parts.path)
        match = _RELEASES_PATH.match(parts.path) or listing
        repo = f"{unquote(match[1])}/{unquote(match[2])}" if match else None
        # Private repositories, their files and GitHub Apps (``private``) come first.
        private = self._parts.private
        replied = private.answer(
            method, parts.path, parts.query, headers, self._url(), self._parts.releases.find_asset
        )
        web = _WEB_PATH.match(parts.path)
        gated = repo or (f"{unquote(web[1])}/{unquote(web[2])}" if web else None)
        replied = replied or (private.refused(gated, headers.get("authorization")) if gated else None)
        if replied is not None:
            self._parts.log.record(RecordedRequest(method, path, repo, dict(headers), replied[0], arrived))
            return Answer(*replied)
        with self._lock:
            held = self._parts.faults.open_if_held(parts.path)  # open from the moment it is recorded
            web_page = (
                None if match else Answer(None, delivery="hold") if held else self._web_page(parts.path)
            )
            per_page = _per_page(parts.query) if listing else None
            answer = web_page or self._decide(method, repo, headers, client_ip, per_page)
            self._parts.log.record(RecordedRequest(method, path, repo, dict(headers), answer.status, arrived))
        return answer

    def _web_page(self, path: str) -> Answer | None:
        """A release's file or page on the web side (``web_url``), or None for any other path.

        Files are the bytes ``publish`` was given for them, else a line of text naming the file
        (not its real bytes: the digests won't match); the release page is its notes. Neither
        counts against the API's rate limit.
        """
        match = _WEB_PATH.match(path)
        if match is None:
            return None
        published = self._parts.releases.latest(f"{unquote(match[1])}/{unquote(match[2])}")
        tag, name = unquote(match[4]), unquote(match[5] or "")
        if published is None or published.release.get("tag_name") != tag:
            return Answer(404, [("content-type", TEXT)], b"Not Found\n")
        if match[3] == "tag" and not name:
            notes = str(published.release.get("body") or "")
            return Answer(200, [("content-type", TEXT)], notes.encode())
        names = {a.get("name") for a in published.release.get("assets") or [] if isinstance(a, dict)}
        if match[3] != "download" or name not in names:
            return Answer(404, [("content-type", TEXT)], b"Not Found\n")
        if name in published.files:
            return Answer(200, [("content-type", "application/octet-stream")], published.files[name])
        body = f"{name}: a stand-in for this file of {published.release.get('name')}.\n".encode()
        return Answer(200, [("content-type", TEXT)], body)

    def _decide(
        self, method: str, repo: str | None, headers: dict[str, str], client_ip: str, per_page: int | None
    ) -> Answer:
        quotas = self._parts.quotas
        caller = quotas.caller(headers.get("authorization"), client_ip)
        fault = self._parts.faults.fault_for(repo)
        if isinstance(fault, REPLACING_FAULTS):
            # A replaced answer is not counted: GitHub never really handled it.
            return faulted_answer(fault, quotas.headers(caller, quotas.window(caller)))
        window = quotas.window(caller)
        if window.used >= caller.limit:
            return quotas.exceeded(caller, window)

        answer = self._plain_answer(method, repo, headers, caller, fault, per_page)
        if not (caller.authenticated and answer.status == 304):
            window.used += 1
        answer.headers.extend(quotas.headers(caller, window))
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
        caller: Caller,
        fault: Fault | None,
        per_page: int | None,
    ) -> Answer:
        if headers.get("authorization") is not None and not caller.authenticated:
            return Answer(401, [("content-type", JSON)], error_body("Bad credentials", DOCS, 401))
        published: Published | None = None
        if per_page is not None and repo is not None and method == "GET":
            published = self._parts.releases.listing(repo, per_page)
        if published is None and repo is not None:
            published = self._parts.releases.latest(repo)
        if method != "GET" or published is None:
            docs = f"{DOCS}/releases/releases#get-the-latest-release"
            return Answer(404, [("content-type", JSON)], error_body("Not Found", docs, 404))
        if isinstance(fault, ForeignAssetsFault):
            published = with_foreign_assets(published, fault.prefix)
        cache = "private" if caller.authenticated else "public"
        headers_out = [
            ("etag", published.etag),
            ("cache-control", f"{cache}, max-age=60, s-maxage=60"),
            ("vary", "Accept, Authorization, Cookie, X-GitHub-OTP"),
            ("x-github-api-version-selected", "2022-11-28"),
        ]
        if etag_matches(headers.get("if-none-match"), published.etag):
            return Answer(304, headers_out)
        headers_out.append(("content-type", JSON))
        return Answer(200, headers_out, published.body)


def _per_page(query: str) -> int:
    """The list's page size as GitHub reads ``per_page``: 30 without one, at most 100."""
    for name, _, value in (part.partition("=") for part in query.split("&")):
        if name == "per_page" and value.isdigit():
            return max(1, min(int(value), _MAX_PER_PAGE))
    return _DEFAULT_PER_PAGE
