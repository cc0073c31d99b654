"""GitHub as the poller's release source (``craft_apps.kernel.source.Source``), never raising.

``GitHubClient.fetch_latest_release(repo, etag)`` and ``fetch_releases`` return a typed outcome
(``release_requests``); ``fetch_updater(release)`` the release's Tauri updater files
(``updater_downloads``). ``GitHubClient.from_settings(clock)`` returns the client the settings
describe. The token goes only to the API's host and never into a log line, reason or ``repr``;
each request keeps to its total deadline (``deadline``) and refuses unsafe redirects
(``guarded_session``). Rules and cases: docs/security.md and the tests in tests/github/.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from types import TracebackType

import requests

from craft_apps.conf import app_settings
from craft_apps.github.access import RepoAccess
from craft_apps.github.asset_links import Credentials
from craft_apps.github.credentials import credentials_from_settings
from craft_apps.github.deadline import Deadlines, RealDeadlines
from craft_apps.github.guarded_session import GuardedSession
from craft_apps.github.parsing import rejudge
from craft_apps.github.release_requests import ReleaseRequests
from craft_apps.github.updater_downloads import DOWNLOAD_TIMEOUT_S, UpdaterDownloads
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import GitHubQuota, Release
from craft_apps.kernel.source import (
    Failed,
    Fetched,
    FetchOutcome,
    ListFetched,
    ListOutcome,
    UpdaterFailed,
    UpdaterOutcome,
)
from craft_apps.tauri.files import updater_plan

__all__ = ["DEFAULT_USER_AGENT", "DOWNLOAD_TIMEOUT_S", "Deadlines", "GitHubClient", "RealDeadlines"]

logger = logging.getLogger(__name__)

DEFAULT_USER_AGENT = "django-craft-apps (craft apps release poller)"


class GitHubClient:
    """Fetches releases and updater files over one ``requests.Session``, reusing its connections.

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
        urls = (api_url.rstrip("/"), web_url.rstrip("/"))
        timeouts = (connect_timeout, total_timeout)
        self._access = RepoAccess(token, credentials, private_repos)
        self._session = GuardedSession(
            session, api_url=urls[0], deadlines=deadlines or RealDeadlines(), secret=self._access.token
        )
        self._releases = ReleaseRequests(
            self._session,
            self._access,
            clock,
            urls=urls,
            timeouts=timeouts,
            max_body_bytes=max_body_bytes,
            user_agent=user_agent,
        )
        self._updater = UpdaterDownloads(
            self._session, self._access, urls=urls, timeouts=timeouts, user_agent=user_agent
        )
        self._urls = urls

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
        api_url, web_url = self._urls
        return f"GitHubClient(api_url={api_url!r}, web_url={web_url!r}, token={self._access.label()})"

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the session's connections."""
        self._session.close()

    @property
    def last_quota(self) -> GitHubQuota | None:
        """GitHub's rate-limit headers from the latest answer that carried them."""
        return self._releases.last_quota

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
        """``GET {api_url}/repos/{repo}/releases/latest``, revalidated with ``etag`` when given."""
        outcome: FetchOutcome | ListOutcome
        try:
            outcome = self._releases.fetch(repo, etag)
        except Exception as exc:  # the contract is "never raises"; a bug here must not stop polling
            outcome = Failed(f"unexpected error: {type(exc).__name__}")
            logger.error("Fetching the latest release of %s failed unexpectedly: %s", repo, outcome.reason)
        if isinstance(outcome, Failed):
            outcome = replace(outcome, reason=self._access.scrub(outcome.reason))
        assert not isinstance(outcome, ListFetched)
        return outcome

    def fetch_releases(self, repo: str, etag: str | None, *, per_page: int = 20) -> ListOutcome:
        """``GET {api_url}/repos/{repo}/releases?per_page=N``, revalidated with ``etag`` when
        given (the list's own ETag); every entry judged by ``parsing``'s one set of rules."""
        outcome: FetchOutcome | ListOutcome
        try:
            outcome = self._releases.fetch(repo, etag, per_page=max(1, min(per_page, 100)))
        except Exception as exc:  # "never raises", as for the latest
            outcome = Failed(f"unexpected error: {type(exc).__name__}")
            logger.error("Fetching the releases of %s failed unexpectedly: %s", repo, outcome.reason)
        if isinstance(outcome, Failed):
            return replace(outcome, reason=self._access.scrub(outcome.reason))
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
            return self._updater.fetch(release)
        except Exception as exc:  # "never raises", as for the latest
            reason = f"unexpected error: {type(exc).__name__}"
            logger.error("Reading the updater files of %s failed unexpectedly: %s", release.tag, reason)
            return UpdaterFailed(reason, 0)
