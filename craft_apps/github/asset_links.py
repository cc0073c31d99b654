"""A private release asset's short-lived download URL, asked of GitHub's API (docs/private.md).

``AssetLinks.link(repo, asset_id)`` returns the signed URL GitHub's ``302`` points to, without
following it, kept ``KEEP_S`` per process; or ``LinkFailed`` with a reason naming neither the
token nor the URL's query. It never raises. The token goes only to the API's host as
``Authorization``; ``~/.netrc`` never adds credentials.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urljoin, urlsplit

import requests

from craft_apps.conf import describe
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

KEEP_S = 60.0  # a signed URL is kept this long; GitHub's last about 300 s
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 10.0
USER_AGENT = "django-craft-apps (private asset link)"
MAX_KEPT = 4096  # links kept per process, the oldest going first


class Credentials(Protocol):
    """What authenticates a request for a repository: a token, or a GitHub App's."""

    def authorization(self, repo: str) -> str | None:
        """The ``Authorization`` header's value for ``repo``, or None when there is none."""
        ...

    def rejected(self, repo: str) -> None:
        """GitHub answered 401 with the value given: the next one is made anew."""
        ...

    def problem(self, repo: str) -> str | None:
        """Why ``authorization`` gave None for ``repo`` (one line naming a setting), or None."""
        ...

    def setting(self, repo: str) -> str:
        """The setting to check when GitHub lacks or refuses these credentials for ``repo``."""
        ...


class StaticToken:
    """``GITHUB_TOKEN``: the same token for every repository."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    def __repr__(self) -> str:
        return f"StaticToken({'set' if self._token else 'none'})"

    def authorization(self, repo: str) -> str | None:
        return None if self._token is None else f"Bearer {self._token}"

    def rejected(self, repo: str) -> None:
        """A static token can't be renewed."""

    def setting(self, repo: str) -> str:
        return "GITHUB_TOKEN"

    def problem(self, repo: str) -> str | None:
        if self._token is not None:
            return None
        return f"no GitHub token or GitHub App is configured ({describe('GITHUB_TOKEN')})"


@dataclass(frozen=True)
class LinkFailed:
    """Why GitHub gave no URL: one line, and a short kind for the metric."""

    reason: str
    kind: str  # http_<status>, no_credentials, network, bad_location


class AssetLinks:
    """One web process's signed asset URLs, kept ``KEEP_S`` each."""

    def __init__(
        self,
        *,
        api_url: str,
        credentials: Credentials,
        session: requests.Session | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        keep_s: float = KEEP_S,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._credentials = credentials
        self._session = session if session is not None else requests.Session()
        self._session.trust_env = False  # no netrc credentials, ever
        self._monotonic = monotonic
        self._keep_s = keep_s
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, int], tuple[str, float]] = {}
        self._asking: dict[tuple[str, int], threading.Lock] = {}
        self.requests = 0  # requests made to GitHub (the benchmarks and the tests read it)

    def link(self, repo: str, asset_id: int) -> str | LinkFailed:
        """The signed URL of ``repo``'s asset ``asset_id``: kept, or asked of GitHub."""
        key = (repo.lower(), asset_id)
        kept = self._fresh(key)
        if kept is not None:
            return kept
        with self._lock:
            asking = self._asking.setdefault(key, threading.Lock())
        with asking:  # one request per asset at a time: the others take its answer
            kept = self._fresh(key)
            if kept is not None:
                return kept
            found = self._ask(repo, asset_id)
            if isinstance(found, str):
                self._keep(key, found)
            return found

    def _fresh(self, key: tuple[str, int]) -> str | None:
        with self._lock:
            kept = self._kept.get(key)
        return kept[0] if kept is not None and self._monotonic() < kept[1] else None

    def _keep(self, key: tuple[str, int], url: str) -> None:
        with self._lock:
            self._kept[key] = (url, self._monotonic() + self._keep_s)
            while len(self._kept) > MAX_KEPT:
                self._kept.pop(next(iter(self._kept)))

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def _ask(self, repo: str, asset_id: int) -> str | LinkFailed:
        try:
            answer = self._request(repo, asset_id)
            if isinstance(answer, LinkFailed) or answer.status_code != 401:
                return self._location(answer)
            self._credentials.rejected(repo)  # an expired installation token: once more, anew
            return self._location(self._request(repo, asset_id))
        except requests.RequestException as exc:
            return LinkFailed(f"request failed: {type(exc).__name__}", "network")

    def _request(self, repo: str, asset_id: int) -> requests.Response | LinkFailed:
        authorization = self._credentials.authorization(repo)
        if authorization is None:
            reason = self._credentials.problem(repo) or "no GitHub token or GitHub App is configured"
            return LinkFailed(reason, "no_credentials")
        url = f"{self._api_url}/repos/{repo}/releases/assets/{asset_id}"
        headers = {
            "Accept": "application/octet-stream",
            "Authorization": authorization,
            "User-Agent": USER_AGENT,
            "X-GitHub-Api-Version": "2022-11-28",
        }
        self.requests += 1
        response = self._session.get(
            url,
            headers=headers,
            allow_redirects=False,
            stream=True,  # the file's bytes, should GitHub send them, are never read
            timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
        )
        response.close()
        return response

    def _location(self, answer: requests.Response | LinkFailed) -> str | LinkFailed:
        if isinstance(answer, LinkFailed):
            return answer
        if answer.status_code not in (301, 302, 303, 307, 308):
            return LinkFailed(f"GitHub answered HTTP {answer.status_code}", f"http_{answer.status_code}")
        target = urljoin(answer.url, answer.headers.get("Location", ""))
        parts = urlsplit(target)
        api_scheme = urlsplit(self._api_url).scheme
        if not parts.hostname or parts.scheme not in ("https", api_scheme):
            shown = one_line(parts.scheme or "no scheme", 20)
            return LinkFailed(f"GitHub's redirect is not a usable URL ({shown})", "bad_location")
        return target
