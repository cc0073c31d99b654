"""Requests for a repository's latest release or its release list, judged into outcomes.

``ReleaseRequests.fetch(repo, etag, per_page)`` takes a repository, the ETag to revalidate with
and, for the list, how many releases to ask for; it returns ``Fetched``, ``ListFetched``,
``NotModified``, ``RateLimited`` or ``Failed``, and keeps the latest quota in ``last_quota``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import requests

from craft_apps.github.access import RepoAccess
from craft_apps.github.answers import (
    echo,
    error_message,
    int_header,
    is_repo_name,
    quota_of,
    read_at_most,
    retry_at_ms,
    usable_etag,
)
from craft_apps.github.guarded_session import GuardedSession
from craft_apps.github.parsing import ReleaseRejected, read_release, read_release_list
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import GitHubQuota
from craft_apps.kernel.source import (
    Failed,
    Fetched,
    FetchOutcome,
    ListedRelease,
    ListFetched,
    ListOutcome,
    NotModified,
    RateLimited,
)

# The client's log lines keep the one logger name operators may have configured.
logger = logging.getLogger("craft_apps.github.client")

GITHUB_API_VERSION = "2022-11-28"


class ReleaseRequests:
    """The API's release endpoints over a ``GuardedSession``, and the last rate-limit headers."""

    def __init__(
        self,
        session: GuardedSession,
        access: RepoAccess,
        clock: Clock,
        *,
        urls: tuple[str, str],
        timeouts: tuple[float, float],
        max_body_bytes: int,
        user_agent: str,
    ) -> None:
        self._session = session
        self._access = access
        self._clock = clock
        self._api_url, self._web_url = urls
        self._connect_timeout, self._total_timeout = timeouts
        self._max_body_bytes = max_body_bytes
        self._user_agent = user_agent
        # GitHub's rate-limit headers from the latest answer that carried them, for the poller
        # to record (operators see them in craft_apps_status and the metrics).
        self.last_quota: GitHubQuota | None = None

    def fetch(
        self, repo: str, etag: str | None, *, per_page: int | None = None
    ) -> FetchOutcome | ListOutcome:
        """The latest release; or, with ``per_page``, the list of that many recent releases. A
        GitHub App's token refused (401) is made anew and the request asked once more."""
        outcome = self._fetch_once(repo, etag, per_page=per_page)
        if _refused(outcome) and self._access.renew(repo):
            outcome = self._fetch_once(repo, etag, per_page=per_page)
        if isinstance(outcome, Failed) and _refused(outcome):  # refused, renewed or not
            outcome = replace(outcome, setting=self._access.setting(repo))
        return outcome

    def _fetch_once(self, repo: str, etag: str | None, *, per_page: int | None) -> FetchOutcome | ListOutcome:
        if not is_repo_name(repo):
            return Failed(f"not a repository name: {echo(repr(repo), secret=self._access.token)}")
        if self._access.token_unusable:
            return Failed("the GitHub token holds characters an HTTP header cannot carry")
        url = f"{self._api_url}/repos/{repo}/releases/latest"
        if per_page is not None:
            url = f"{self._api_url}/repos/{repo}/releases?per_page={per_page}"
        headers = self._headers(repo, etag)
        if self._access.is_private(repo) and "Authorization" not in headers:
            return self._access.no_credentials(repo)  # GitHub would answer 404: no release
        revalidating = "If-None-Match" in headers

        def read(response: requests.Response) -> FetchOutcome | ListOutcome:
            self.last_quota = quota_of(response.headers, self._clock.now_ms()) or self.last_quota
            return self._outcome(repo, response, revalidating=revalidating, listing=per_page is not None)

        return self._session.get(
            url, headers, seconds=self._total_timeout, connect=self._connect_timeout, api_only=True, read=read
        )

    def _headers(self, repo: str, etag: str | None) -> dict[str, str]:
        headers = {
            "User-Agent": self._user_agent,
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": GITHUB_API_VERSION,
        }
        if etag is not None:
            usable = usable_etag(etag)
            if usable is None:
                logger.warning("Ignoring the stored ETag of %s: it is not a valid header value.", repo)
            else:
                headers["If-None-Match"] = usable
        authorization = self._access.authorization(repo)
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def _outcome(
        self, repo: str, response: requests.Response, *, revalidating: bool, listing: bool
    ) -> FetchOutcome | ListOutcome:
        status = response.status_code
        if status == 200:
            return self._read_ok(repo, response, listing=listing)
        message = error_message(response, self._access.token)
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
            return RateLimited(retry_at_ms=retry_at_ms(headers, self._clock.now_ms()))
        reason = f"HTTP {status} {echo(response.reason or '', secret=self._access.token)}".rstrip()
        return Failed(f"{reason}: {message}" if message else reason)

    def _read_ok(
        self, repo: str, response: requests.Response, *, listing: bool
    ) -> FetchOutcome | ListOutcome:
        body = self._read_release_body(response)
        if isinstance(body, Failed):
            return body
        redirected = bool(response.history)
        if listing:
            return self._list_outcome(body, repo, response, redirected)
        try:
            parsed = read_release(
                body, repo, self._web_url, renamed=redirected, keep_ids=self._access.is_private(repo)
            )
        except ReleaseRejected as rejected:
            return Failed(f"unusable release: {rejected.reason}")
        moved = redirected and parsed.repo.lower() != repo.lower()
        return Fetched(
            release=parsed.release,
            etag=usable_etag(response.headers.get("ETag")),
            moved_to=parsed.repo if moved else None,
            dropped=parsed.dropped,
        )

    def _list_outcome(
        self, body: bytes, repo: str, response: requests.Response, redirected: bool
    ) -> ListOutcome:
        try:
            parsed = read_release_list(
                body, repo, self._web_url, renamed=redirected, keep_ids=self._access.is_private(repo)
            )
        except ReleaseRejected as rejected:
            return Failed(f"unusable release list: {rejected.reason}")
        return ListFetched(
            releases=tuple(ListedRelease(item.release, item.dropped) for item in parsed.releases),
            etag=usable_etag(response.headers.get("ETag")),
            refused=tuple(self._access.scrub(line) for line in parsed.refused),
        )

    def _read_release_body(self, response: requests.Response) -> bytes | Failed:
        declared = int_header(response.headers.get("Content-Length"))
        if declared is not None and declared > self._max_body_bytes:
            return Failed(f"answer too large: {declared} bytes declared, over {self._max_body_bytes}")
        body = read_at_most(response, self._max_body_bytes)
        if body is None:
            return Failed(f"answer too large: over {self._max_body_bytes} bytes")
        return body


def _refused(outcome: FetchOutcome | ListOutcome) -> bool:
    """Whether GitHub refused the request's credentials (HTTP 401)."""
    return isinstance(outcome, Failed) and outcome.reason.startswith("HTTP 401")
