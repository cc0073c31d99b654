"""One request to GitHub for a repository's latest release, as a typed outcome: GitHub as the
poller's ``craft_apps.kernel.source.Source``.

Contract: ``GitHubClient.fetch_latest_release`` (and ``fetch_releases``, the release list of
the history) never raises; every answer becomes ``Fetched``,
``NotModified``, ``RateLimited`` or ``Failed`` (``craft_apps.kernel.source``, with a one-line reason);
``fetch_updater`` reads a release's Tauri updater files (``updater_files``) the same way, as
``UpdaterFetched`` or ``UpdaterFailed``, downloading them without the token;
``rejudge`` applies ``parsing``'s rules to a stored release. ``GitHubClient.from_settings`` is
the client the settings describe. Invariants: the token is
sent only as ``Authorization: Bearer`` to GitHub's API host and never appears in a log line, a
reason, an exception or a ``repr``; ``~/.netrc`` never adds credentials; a request takes at most
``total_timeout`` for the whole exchange (a small file ``DOWNLOAD_TIMEOUT_S``), however slowly the
server drips: each connect (a redirect's too) and each read waits at most its own timeout and
never past that deadline; no more than ``max_body_bytes`` of an answer are ever read; a redirect
from https to anything else, or to another host than the API's, is refused before it is followed.

A redirect within the API host is how GitHub answers for a renamed or transferred repository
(301 to ``/repositories/{id}/...``): it is followed, the answer is judged as the new
repository's, and ``Fetched.moved_to`` names it so that the operator can be told to update
``APPS``.

The total deadline is real elapsed time (``Deadlines``, by default ``time.monotonic`` and a
timer thread), not the poller's clock: it bounds real socket I/O. The tests hand in their own
``Deadlines`` to expire a request when they choose. The poller's clock only turns rate-limit
headers into ``retry_at_ms``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import replace
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_environ_proxies
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from craft_apps.conf import app_settings, describe
from craft_apps.github.asset_links import Credentials
from craft_apps.github.credentials import credentials_from_settings
from craft_apps.github.links import segments_under
from craft_apps.github.parsing import ReleaseRejected, read_release, read_release_list, rejudge
from craft_apps.github.tauri_names import MANIFEST_NAME
from craft_apps.github.updater_files import (
    Download,
    UpdaterRejected,
    from_signatures,
    read_manifest,
    updater_plan,
)
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import GitHubQuota, Release
from craft_apps.kernel.source import (
    Failed,
    Fetched,
    FetchOutcome,
    ListedRelease,
    ListFetched,
    ListOutcome,
    NotModified,
    RateLimited,
    UpdaterFailed,
    UpdaterFetched,
    UpdaterOutcome,
)
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

GITHUB_API_VERSION = "2022-11-28"
DEFAULT_USER_AGENT = "django-craft-apps (craft apps release poller)"
MAX_RETRY_AFTER_SECS = 86_400
MAX_REDIRECTS = 5
MAX_RESET_SECS = 253_402_300_799  # 9999-12-31: a later rate-limit reset is garbage
# A small file of a release (latest.json, a .sig) takes at most this long, redirects, connects
# and every read included, whatever the client's total timeout: a round downloads a few of them.
DOWNLOAD_TIMEOUT_S = 10.0
_LEAST_WAIT_S = 0.001  # a connect or read that starts with no time left fails at once
_CHUNK_BYTES = 64 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # read from a non-200 answer, for its message and connection reuse
_MAX_ETAG_CHARS = 512
_MAX_ECHO_CHARS = 200
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
_HEADER_TEXT = re.compile(r"[\x20-\x7e]+")


class _RedirectRefused(requests.RequestException):
    """A redirect the client won't follow; the message is the one-line reason."""


# --- The client -----------------------------------------------------------------------------------


class GitHubClient:
    """Fetches latest releases over one ``requests.Session``, reusing its connections.

    A session passed in becomes the client's: it stops reading the environment's netrc (proxy
    and CA-bundle variables are still honoured, per request) and gets the client's adapters.
    """

    def __init__(
        self,
        *,
        api_url: str,
        web_url: str,
        token: str | None,
        clock: Clock,
        session: requests.Session | None = None,
        connect_timeout: float = 10.0,
        total_timeout: float = 30.0,
        max_body_bytes: int = 4 * 1024 * 1024,
        user_agent: str = DEFAULT_USER_AGENT,
        deadlines: Deadlines | None = None,
        private_repos: Iterable[str] = (),
        credentials: Credentials | None = None,
    ) -> None:
        if connect_timeout <= 0 or total_timeout <= 0 or max_body_bytes <= 0:
            raise ValueError("timeouts and the body limit must be positive")
        self._api_url = api_url.rstrip("/")
        self._web_url = web_url.rstrip("/")
        self._clock = clock
        self._connect_timeout = connect_timeout
        self._total_timeout = total_timeout
        self._max_body_bytes = max_body_bytes
        self._user_agent = user_agent
        self._deadlines = deadlines or RealDeadlines()
        # Their releases keep each asset's id, and their small files are read through the API.
        self._private = frozenset(repo.lower() for repo in private_repos)
        # A GitHub App's installation tokens (``app_auth``), used instead of ``token`` when given.
        self._credentials = credentials
        trimmed = (token or "").strip()
        self._token = trimmed if _VISIBLE_ASCII.fullmatch(trimmed) else None
        self._token_unusable = bool(trimmed) and self._token is None
        # GitHub's rate-limit headers from the latest answer that carried them, for the poller
        # to record (operators see them in craft_apps_status and the metrics).
        self.last_quota: GitHubQuota | None = None
        if self._token_unusable:
            logger.error("The GitHub token holds characters an HTTP header cannot carry; fetches will fail.")
        self._session = session if session is not None else requests.Session()
        # Off so that netrc can never add an Authorization header, not even on a redirect.
        self._session.trust_env = False
        self._session.max_redirects = MAX_REDIRECTS
        adapter = _DeadlineAdapter()
        self._session.mount("https://", adapter)
        self._session.mount("http://", adapter)

    @classmethod
    def from_settings(cls, clock: Clock) -> GitHubClient:
        """The client of ``GITHUB_API_URL``, ``GITHUB_WEB_URL`` and ``GITHUB_TOKEN`` (or the
        GitHub App of ``GITHUB_APP_ID``, which then authenticates it instead)."""
        credentials = credentials_from_settings()[0] if app_settings.GITHUB_APP is not None else None
        return cls(
            api_url=app_settings.GITHUB_API_URL,
            web_url=app_settings.GITHUB_WEB_URL,
            token=app_settings.GITHUB_TOKEN,
            clock=clock,
            private_repos=[app.repo for app in app_settings.APPS if app.private],
            credentials=credentials,
        )

    def __repr__(self) -> str:
        token = "unusable" if self._token_unusable else ("set" if self._token else "none")
        token = "GitHub App" if self._credentials is not None else token
        return f"GitHubClient(api_url={self._api_url!r}, web_url={self._web_url!r}, token={token})"

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._session.close()

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
        """``GET {api_url}/repos/{repo}/releases/latest``, revalidated with ``etag`` when given."""
        outcome: FetchOutcome | ListOutcome
        try:
            outcome = self._fetch(repo, etag)
        except Exception as exc:  # the contract is "never raises"; a bug here must not stop polling
            outcome = Failed(f"unexpected error: {type(exc).__name__}")
            logger.error("Fetching the latest release of %s failed unexpectedly: %s", repo, outcome.reason)
        if isinstance(outcome, Failed):
            outcome = replace(outcome, reason=self._scrub(outcome.reason))
        assert not isinstance(outcome, ListFetched)
        return outcome

    def fetch_releases(self, repo: str, etag: str | None, *, per_page: int = 20) -> ListOutcome:
        """``GET {api_url}/repos/{repo}/releases?per_page=N``, revalidated with ``etag`` when
        given (the list's own ETag); every entry judged by ``parsing``'s one set of rules."""
        outcome: FetchOutcome | ListOutcome
        try:
            outcome = self._fetch(repo, etag, per_page=max(1, min(per_page, 100)))
        except Exception as exc:  # "never raises", as for the latest
            outcome = Failed(f"unexpected error: {type(exc).__name__}")
            logger.error("Fetching the releases of %s failed unexpectedly: %s", repo, outcome.reason)
        if isinstance(outcome, Failed):
            return replace(outcome, reason=self._scrub(outcome.reason))
        assert not isinstance(outcome, Fetched)
        return outcome

    def rejudge(self, release: Release, repo: str, web_url: str) -> Release | None:
        """``parsing.rejudge``: a stored release judged by today's rules, as if GitHub sent it
        (its updater files too, by ``updater_files.updater_judged``)."""
        return rejudge(release, repo, web_url)

    def updater_downloads(self, release: Release) -> int:
        """How many downloads ``fetch_updater`` makes for ``release`` (``updater_plan``)."""
        return len(updater_plan(release))

    def fetch_updater(self, release: Release) -> UpdaterOutcome:
        """The release's Tauri updater files, from its ``latest.json`` or its ``.sig`` files
        (``updater_files``), downloaded from their ``browser_download_url`` without the token
        (the web side is not the API's rate limit, but each download is a request)."""
        try:
            return self._fetch_updater(release)
        except Exception as exc:  # "never raises", as for the latest
            reason = f"unexpected error: {type(exc).__name__}"
            logger.error("Reading the updater files of %s failed unexpectedly: %s", release.tag, reason)
            return UpdaterFailed(reason, 0)

    def _fetch_updater(self, release: Release) -> UpdaterOutcome:
        plan = updater_plan(release)
        texts: dict[str, bytes] = {}
        for count, download in enumerate(plan, start=1):
            body = self._download(download)
            if isinstance(body, Failed):
                return UpdaterFailed(self._scrub(f"{download.name}: {body.reason}"), count)
            texts[download.name] = body
        if [download.name for download in plan] == [MANIFEST_NAME]:
            try:
                read = read_manifest(texts[MANIFEST_NAME], release, self._web_url)
            except UpdaterRejected as rejected:
                return UpdaterFetched((), len(plan), (rejected.reason,))
        else:
            read = from_signatures(texts, release)
        return UpdaterFetched(read.files, len(plan), read.refused)

    def _download(self, download: Download) -> bytes | Failed:
        """One small file: at most ``download.limit`` bytes within ``DOWNLOAD_TIMEOUT_S``,
        following redirects (GitHub sends downloads to its file host) but never off https. A
        private app's file is asked of the API with the token (``_private_download``)."""
        timeout = min(self._total_timeout, DOWNLOAD_TIMEOUT_S)
        connect = min(self._connect_timeout, timeout)
        headers = {"User-Agent": self._user_agent, "Accept": "application/octet-stream"}
        url = download.url
        if download.asset_id is not None:
            private = self._private_download(download.url, download.asset_id)
            if isinstance(private, Failed):
                return private
            url, headers["Authorization"] = private
            headers["X-GitHub-Api-Version"] = GITHUB_API_VERSION
        with _Deadline(timeout, self._deadlines) as deadline:
            try:
                response = self._session.get(
                    url,
                    headers=headers,
                    timeout=(connect, timeout),
                    stream=True,
                    allow_redirects=True,
                    hooks={"response": [self._refuse_insecure_redirect]},
                    proxies=get_environ_proxies(url),
                    verify=self._verify(),
                )
            except requests.RequestException as exc:
                return self._request_failed(exc, deadline, connect)
            with response:
                try:
                    body = self._small_file(response, download.limit)
                except requests.RequestException as exc:
                    return self._request_failed(exc, deadline, connect)
            if deadline.expired:
                return Failed(f"no complete answer within {timeout:g} s")
            return body

    def _private_download(self, link: str, asset_id: int) -> tuple[str, str] | Failed:
        """The API's URL of a private app's asset (its repository read from ``link``, which
        the parser accepted as the release's own) and the ``Authorization`` to ask it with, or
        why it can't be asked for."""
        segments = segments_under(link, f"{self._web_url}/")
        if segments is None or len(segments) < 2:
            return Failed("the file's link names no repository")
        repo = f"{segments[0]}/{segments[1]}"
        if repo.lower() not in self._private or not _is_repo_name(repo):
            return Failed("the file is not of a private app")
        authorization = self._authorization(repo)
        if authorization is None:
            return self._no_credentials(repo)
        return f"{self._api_url}/repos/{repo}/releases/assets/{asset_id}", authorization

    def _authorization(self, repo: str) -> str | None:
        """The ``Authorization`` header for a request about ``repo``, or None."""
        if self._credentials is not None:
            return self._credentials.authorization(repo)
        return None if self._token is None else f"Bearer {self._token}"

    def _no_credentials(self, repo: str) -> Failed:
        """Why a private app's request can't be made: one line naming the settings."""
        if self._credentials is not None and (found := self._credentials.problem(repo)) is not None:
            return Failed(found, setting=self._credentials.setting(repo))
        line = f"a private app needs a GitHub token or a GitHub App ({describe('GITHUB_TOKEN')})"
        return Failed(line, setting="GITHUB_TOKEN")

    def _small_file(self, response: requests.Response, limit: int) -> bytes | Failed:
        if response.status_code != 200:
            return Failed(f"HTTP {response.status_code} {_echo(response.reason or '', 80)}".rstrip())
        declared = _int_header(response.headers.get("Content-Length"))
        if declared is not None and declared > limit:
            return Failed(f"too large: {declared} bytes declared, over {limit}")
        body = _read_at_most(response, limit)
        return Failed(f"too large: over {limit} bytes") if body is None else body

    def _refuse_insecure_redirect(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """A response hook: a redirect from https to anything else is refused (a download's
        whole rule; the API's adds its host)."""
        target = self._session.get_redirect_target(response)
        if target is None:
            return
        resolved = urlsplit(urljoin(response.url, target))
        if urlsplit(response.url).scheme == "https" and resolved.scheme != "https":
            response.close()
            raise _RedirectRefused(
                f"refused a redirect from https to {_echo(resolved.scheme or 'no scheme', 20)}"
            )

    def _fetch(
        self, repo: str, etag: str | None, *, per_page: int | None = None
    ) -> FetchOutcome | ListOutcome:
        """The latest release; or, with ``per_page``, the list of that many recent releases. A
        GitHub App's token refused (401) is made anew and the request asked once more."""
        outcome = self._fetch_once(repo, etag, per_page=per_page)
        if (
            self._credentials is not None
            and isinstance(outcome, Failed)
            and outcome.reason.startswith("HTTP 401")
        ):
            self._credentials.rejected(repo)
            outcome = self._fetch_once(repo, etag, per_page=per_page)
        if isinstance(outcome, Failed) and outcome.reason.startswith("HTTP 401"):  # refused, renewed or not
            setting = "GITHUB_TOKEN" if self._credentials is None else self._credentials.setting(repo)
            outcome = replace(outcome, setting=setting)
        return outcome

    def _fetch_once(
        self, repo: str, etag: str | None, *, per_page: int | None = None
    ) -> FetchOutcome | ListOutcome:
        if not _is_repo_name(repo):
            return Failed(f"not a repository name: {_echo(repr(repo), secret=self._token)}")
        if self._token_unusable:
            return Failed("the GitHub token holds characters an HTTP header cannot carry")
        url = f"{self._api_url}/repos/{repo}/releases/latest"
        if per_page is not None:
            url = f"{self._api_url}/repos/{repo}/releases?per_page={per_page}"
        headers = self._headers(repo, etag)
        if repo.lower() in self._private and "Authorization" not in headers:
            return self._no_credentials(repo)  # GitHub would answer 404: no release
        with _Deadline(self._total_timeout, self._deadlines) as deadline:
            try:
                response = self._session.get(
                    url,
                    headers=headers,
                    timeout=(self._connect_timeout, self._total_timeout),
                    stream=True,
                    allow_redirects=True,
                    hooks={"response": [self._refuse_downgrade]},
                    proxies=get_environ_proxies(url),
                    verify=self._verify(),
                )
            except requests.RequestException as exc:
                return self._request_failed(exc, deadline, self._connect_timeout)
            self.last_quota = _quota(response.headers, self._clock.now_ms()) or self.last_quota
            # Closing an unread answer drops its connection instead of reading the rest.
            with response:
                try:
                    outcome = self._outcome(
                        repo, response, revalidating="If-None-Match" in headers, listing=per_page is not None
                    )
                except requests.RequestException as exc:
                    return self._request_failed(exc, deadline, self._connect_timeout)
            # A socket cut mid-headers reads like an answer that ended there: never trust it.
            if deadline.expired:
                return Failed(f"no complete answer within {self._total_timeout:g} s")
            return outcome

    def _headers(self, repo: str, etag: str | None) -> dict[str, str]:
        headers = {
            "User-Agent": self._user_agent,
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": GITHUB_API_VERSION,
        }
        if etag is not None:
            usable = _usable_etag(etag)
            if usable is None:
                logger.warning("Ignoring the stored ETag of %s: it is not a valid header value.", repo)
            else:
                headers["If-None-Match"] = usable
        authorization = self._authorization(repo)
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def _verify(self) -> bool | str:
        """The CA bundle requests would take from the environment, which ``trust_env`` turned off."""
        configured = self._session.verify
        if configured is not True and configured is not None:
            return configured
        return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True

    def _outcome(
        self, repo: str, response: requests.Response, *, revalidating: bool, listing: bool = False
    ) -> FetchOutcome | ListOutcome:
        status = response.status_code
        if status == 200:
            body = self._read_release_body(response)
            if isinstance(body, Failed):
                return body
            redirected = bool(response.history)
            if listing:
                return self._list_outcome(body, repo, response, redirected)
            try:
                parsed = read_release(
                    body, repo, self._web_url, renamed=redirected, keep_ids=repo.lower() in self._private
                )
            except ReleaseRejected as rejected:
                return Failed(f"unusable release: {rejected.reason}")
            moved = redirected and parsed.repo.lower() != repo.lower()
            return Fetched(
                release=parsed.release,
                etag=_usable_etag(response.headers.get("ETag")),
                moved_to=parsed.repo if moved else None,
                dropped=parsed.dropped,
            )
        message = _error_message(response, self._token)
        if status == 304:
            # Only an ETag we sent can be "not modified": a 304 to a plain request (a confused
            # proxy or cache) says nothing about the release, so it is a failed request.
            if revalidating:
                return NotModified()
            return Failed("HTTP 304 Not Modified to a request that sent no ETag (If-None-Match)")
        if status == 404:
            return ListFetched(releases=(), etag=None) if listing else Fetched(release=None, etag=None)
        headers = response.headers
        if status == 429 or (
            status == 403
            and ((headers.get("x-ratelimit-remaining") or "").strip() == "0" or "Retry-After" in headers)
        ):
            return RateLimited(retry_at_ms=self._retry_at_ms(headers))
        reason = f"HTTP {status} {_echo(response.reason or '', secret=self._token)}".rstrip()
        return Failed(f"{reason}: {message}" if message else reason)

    def _list_outcome(
        self, body: bytes, repo: str, response: requests.Response, redirected: bool
    ) -> ListOutcome:
        try:
            parsed = read_release_list(
                body, repo, self._web_url, renamed=redirected, keep_ids=repo.lower() in self._private
            )
        except ReleaseRejected as rejected:
            return Failed(f"unusable release list: {rejected.reason}")
        return ListFetched(
            releases=tuple(ListedRelease(item.release, item.dropped) for item in parsed.releases),
            etag=_usable_etag(response.headers.get("ETag")),
            refused=tuple(self._scrub(line) for line in parsed.refused),
        )

    def _read_release_body(self, response: requests.Response) -> bytes | Failed:
        declared = _int_header(response.headers.get("Content-Length"))
        if declared is not None and declared > self._max_body_bytes:
            return Failed(f"answer too large: {declared} bytes declared, over {self._max_body_bytes}")
        body = _read_at_most(response, self._max_body_bytes)
        if body is None:
            return Failed(f"answer too large: over {self._max_body_bytes} bytes")
        return body

    def _retry_at_ms(self, headers: CaseInsensitiveDict[str]) -> int | None:
        now_ms = self._clock.now_ms()
        retry_after = _int_header(headers.get("Retry-After"))
        if retry_after is not None:
            return now_ms + min(max(retry_after, 0), MAX_RETRY_AFTER_SECS) * 1000
        reset = _int_header(headers.get("x-ratelimit-reset"))
        if reset is not None:
            # A reset in the past means "now"; one absurdly far ahead must not stop polling for good.
            return min(max(reset * 1000, now_ms), now_ms + MAX_RETRY_AFTER_SECS * 1000)
        return None

    def _refuse_downgrade(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """A response hook, run on every answer of a request, redirects included, before the
        next one is asked for: an answer that came over https is never followed elsewhere, and
        no answer is followed off the API's host (a rename redirects within it)."""
        self._refuse_insecure_redirect(response)
        target = self._session.get_redirect_target(response)
        if target is None:
            return
        resolved = urlsplit(urljoin(response.url, target))
        if (resolved.hostname or "") != (urlsplit(self._api_url).hostname or ""):
            response.close()
            raise _RedirectRefused(
                f"refused a redirect off the API host to {_echo(resolved.hostname or 'no host', 80)}"
            )

    def _request_failed(self, exc: requests.RequestException, deadline: _Deadline, connect: float) -> Failed:
        """One line for a request that raised; the times named are the ones this request had."""
        if isinstance(exc, _RedirectRefused):
            return Failed(str(exc))
        if deadline.expired or deadline.remaining() <= 0:
            return Failed(f"no complete answer within {deadline.seconds:g} s")
        if isinstance(exc, requests.ConnectTimeout):
            return Failed(f"could not connect within {connect:g} s")
        if isinstance(exc, requests.ReadTimeout):
            return Failed(f"the answer stalled for {deadline.seconds:g} s")
        if isinstance(exc, requests.TooManyRedirects):
            return Failed(f"more than {MAX_REDIRECTS} redirects")
        return Failed(f"request failed: {type(exc).__name__}: {_echo(str(exc), secret=self._token)}")

    def _scrub(self, text: str) -> str:
        """Belt and braces: whatever a server or a library echoed, the token does not leave."""
        return _echo(text, limit=len(text), secret=self._token)


# --- Reading answers ------------------------------------------------------------------------------


def _read_at_most(response: requests.Response, limit: int) -> bytes | None:
    """The (decoded) body, or None as soon as it passes ``limit`` bytes, without reading further."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=_CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _error_message(response: requests.Response, secret: str | None) -> str:
    """GitHub's ``message`` from a small error body, one line; reading it also frees the connection."""
    try:
        body = _read_at_most(response, _ERROR_BODY_BYTES)
        message = json.loads(body)["message"] if body else None
    except Exception:  # an error body is optional decoration; its status already decided the outcome
        return ""
    return _echo(message, secret=secret) if isinstance(message, str) else ""


def _usable_etag(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if len(value) <= _MAX_ETAG_CHARS and _HEADER_TEXT.fullmatch(value) else None


def _int_header(value: str | None) -> int | None:
    if value is None or not _INTEGER.fullmatch(value.strip()):
        return None
    return int(value)


def _quota(headers: CaseInsensitiveDict[str], now_ms: int) -> GitHubQuota | None:
    """The answer's rate-limit headers; None unless both the remaining count and the limit
    are there and are sane numbers (a reset that isn't is left out)."""
    remaining = _int_header(headers.get("x-ratelimit-remaining"))
    limit = _int_header(headers.get("x-ratelimit-limit"))
    if remaining is None or limit is None or not 0 <= remaining <= limit:
        return None
    reset = _int_header(headers.get("x-ratelimit-reset"))
    reset_ms = reset * 1000 if reset is not None and 0 < reset < MAX_RESET_SECS else None
    return GitHubQuota(remaining=remaining, limit=limit, reset_ms=reset_ms, seen_ms=now_ms)


def _is_repo_name(repo: str) -> bool:
    return bool(_REPO_NAME.fullmatch(repo)) and not any(part in (".", "..") for part in repo.split("/"))


def _echo(text: str, limit: int = _MAX_ECHO_CHARS, secret: str | None = None) -> str:
    """Outside text made safe for a reason: no secret, one line of printable characters, capped.

    The secret goes first, so that no cut can leave a piece of it behind.
    """
    if secret:
        text = text.replace(secret, "[token]")
    return one_line(text, limit)


# --- The total deadline ---------------------------------------------------------------------------
#
# requests' read timeout restarts at every byte, so a server dripping one byte per second could
# hold a request forever. A timer shuts down the request's socket when the deadline passes; the
# blocked read then fails at once. The socket reaches the timer through connection classes that
# register it, with the request's deadline, as soon as it is connected. The same classes cut each
# connect and each read's timeout to the time the deadline has left, so a redirect's new
# connection can't start a fresh connect timeout after the deadline.


class Armed(Protocol):
    def cancel(self) -> None:
        """Stops the expiry; should it be running, waits until it has ended."""
        ...


class Deadlines(Protocol):
    """Real time for a request's deadline: what reads it and what arms its expiry."""

    def monotonic(self) -> float:
        """Seconds, only ever increasing."""
        ...

    def arm(self, seconds: float, expire: Callable[[], None]) -> Armed:
        """Calls ``expire`` from another thread ``seconds`` from now, unless cancelled first."""
        ...


class _ArmedTimer:
    def __init__(self, timer: threading.Timer) -> None:
        self._timer = timer

    def cancel(self) -> None:
        self._timer.cancel()
        self._timer.join()


class RealDeadlines:
    """``time.monotonic`` and a daemon timer thread per request."""

    def monotonic(self) -> float:
        return time.monotonic()

    def arm(self, seconds: float, expire: Callable[[], None]) -> Armed:
        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        return _ArmedTimer(timer)


_current_deadline: ContextVar[_Deadline | None] = ContextVar("craft_apps_github_deadline", default=None)


class _Deadline:
    def __init__(self, seconds: float, deadlines: Deadlines) -> None:
        self.seconds = seconds
        self._deadlines = deadlines
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False
        self._started = deadlines.monotonic()
        self._armed: Armed | None = None

    def __enter__(self) -> _Deadline:
        self._context_token = _current_deadline.set(self)
        self._armed = self._deadlines.arm(self.seconds, self._expire)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Should the expiry be running right now, wait: no shutdown may reach a connection that
        # is back in the pool for the next request.
        if self._armed is not None:
            self._armed.cancel()
        _current_deadline.reset(self._context_token)
        with self._lock:
            self._sockets.clear()

    def remaining(self) -> float:
        """Seconds left before the deadline (0 or less once it has passed)."""
        return self.seconds - (self._deadlines.monotonic() - self._started)

    def cut(self, timeout: object) -> float:
        """``timeout`` (a socket timeout: seconds, or None for none) cut to the time left."""
        left = max(self.remaining(), _LEAST_WAIT_S)
        return min(timeout, left) if isinstance(timeout, int | float) else left

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if not self.expired:
                if sock not in self._sockets:
                    self._sockets.append(sock)
                return
        _shut_down(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets, self._sockets = self._sockets, []
        elapsed = self._deadlines.monotonic() - self._started
        logger.debug("A GitHub request overran its deadline after %.2f s.", elapsed)
        for sock in sockets:
            _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for TLS sockets: it only wakes the blocked reader.
    # OSError: the socket is already closed, so there is nothing left to interrupt.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _cut_to_deadline(connection: HTTPConnection) -> None:
    """The connection's next connect or read waits no longer than the request's deadline allows."""
    deadline = _current_deadline.get()
    if deadline is not None:
        connection.timeout = deadline.cut(connection.timeout)


def _watch_current(sock: Any) -> None:
    deadline = _current_deadline.get()
    if deadline is not None and isinstance(sock, socket.socket):
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        _cut_to_deadline(self)
        super().connect()
        _watch_current(self.sock)

    def getresponse(self) -> Any:
        _cut_to_deadline(self)  # the answer's reads wait this long each (urllib3 sets it)
        _watch_current(self.sock)
        return super().getresponse()


class _WatchedHTTPSConnection(_WatchedHTTPConnection, HTTPSConnection):
    """The same, for https: ``connect`` (the TLS handshake's reads too) and ``getresponse``."""


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS: dict[str, type[HTTPConnectionPool]] = {
    "http": _WatchedHTTPConnectionPool,
    "https": _WatchedHTTPSConnectionPool,
}


class _DeadlineAdapter(HTTPAdapter):
    """An adapter whose connections (direct or through an HTTP proxy) honour ``_Deadline``."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS pools keep their own connection classes
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager
