"""A GitHub App's installation tokens, the alternative to ``GITHUB_TOKEN`` (docs/private.md).

``AppCredentials.authorization(repo)`` returns the ``Authorization`` header for a repository, or
None: it signs a JWT with the App's key, exchanges it for an installation token, and makes a new
one ``RENEW_BEFORE_S`` before expiry or once after a 401 (``rejected``). ``problem(repo)`` says
what failed in one line naming the setting. The key, the JWT and the tokens stay in this
process's memory: never logged, never in a reason, a ``repr``, a file or Redis.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jwt
import requests

from craft_apps.conf import describe

logger = logging.getLogger(__name__)

RENEW_BEFORE_S = 300.0  # a token this close to its expiry is made anew
JWT_BACKDATE_S = 60  # GitHub's advice: issued a minute ago, for clock drift
JWT_LIFETIME_S = 540  # at most 10 minutes; 9 leaves room for drift
TIMEOUT_S = (5.0, 10.0)  # connect, read
ASK_AGAIN_S = 600.0  # a private repository no installation sees is asked about again after this
USER_AGENT = "django-craft-apps (GitHub App authentication)"


@dataclass(frozen=True)
class _Token:
    value: str
    expires_s: float  # on the wall clock


class AppCredentials:
    """A GitHub App's credentials: an installation token per installation, made when needed."""

    def __init__(
        self,
        *,
        api_url: str,
        app_id: str,
        private_key: Any,
        installation_id: int | None = None,
        private_repos: Iterable[str] = (),
        session: requests.Session | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._app_id = app_id
        self._key = private_key
        self._installation_id = installation_id
        self._session = session if session is not None else requests.Session()
        self._session.trust_env = False  # no netrc credentials, ever
        self._now = now
        self._lock = threading.Lock()
        self._private = frozenset(repo.lower() for repo in private_repos)
        self._installations: dict[str, int | None] = {}  # repo (lowercase) -> installation id
        self._tokens: dict[int, _Token] = {}
        self._problems: dict[str, str] = {}
        self._problem_settings: dict[str, str] = {}  # repo -> the setting its problem is about
        self._unseen: dict[str, float] = {}  # private repo -> when to ask for its installation again
        self.exchanges = 0  # tokens made (the tests and the benchmarks read it)

    def __repr__(self) -> str:
        return f"AppCredentials(app_id={self._app_id!r}, api_url={self._api_url!r})"

    def authorization(self, repo: str) -> str | None:
        """``Bearer <installation token>`` for ``repo``, or None (``problem`` says why)."""
        with self._lock:
            token = self._token_for(repo)
        return None if token is None else f"Bearer {token}"

    def rejected(self, repo: str) -> None:
        """GitHub refused the token (401): the next request makes a new one."""
        with self._lock:
            installation = self._installations.get(repo.lower()) or self._installation_id
            if installation is not None:
                self._tokens.pop(installation, None)

    def problem(self, repo: str) -> str | None:
        """Why no token could be made for ``repo`` last time, or None."""
        with self._lock:
            return self._problems.get(repo.lower())

    def setting(self, repo: str) -> str:
        """The setting ``repo``'s last problem is about; ``GITHUB_APP_ID`` when there is none."""
        with self._lock:
            return self._problem_settings.get(repo.lower(), "GITHUB_APP_ID")

    def _token_for(self, repo: str) -> str | None:
        installation = self._installation(repo)
        if installation is None:
            return None
        kept = self._tokens.get(installation)
        if kept is not None and self._now() < kept.expires_s - RENEW_BEFORE_S:
            return kept.value
        made = self._exchange(repo, installation)
        if made is None:
            return None
        self._tokens[installation] = made
        self._problems.pop(repo.lower(), None)
        return made.value

    def _installation(self, repo: str) -> int | None:
        """The installation to use for ``repo``. A private repository's is asked once
        (``GET /repos/{repo}/installation``) and must be the configured one, if any; a public
        one takes the configured installation, else its own if the App is installed on it,
        else none (it is read without the App, and that is no problem)."""
        key = repo.lower()
        if key in self._installations:
            return self._installations[key]
        if self._now() < self._unseen.get(key, 0.0):
            return None  # asked a while ago and not seen: asked again after ASK_AGAIN_S
        configured = self._installation_id
        if key not in self._private and configured is not None:
            return configured
        answer = self._ask("GET", f"/repos/{repo}/installation")
        found = _positive_int(answer.get("id")) if isinstance(answer, dict) else None
        if found is not None and configured is not None and found != configured:
            found = None
            answer = "another installation sees it"
        if found is None and key in self._private:
            setting = describe("GITHUB_APP_INSTALLATION_ID")
            which = f"{setting}'s installation" if configured else "the GitHub App"
            installed = "GITHUB_APP_INSTALLATION_ID" if configured else "GITHUB_APP_ID"
            self._failed(repo, f"{which} can't see the private repository {repo} ({answer})", installed)
            self._unseen[key] = self._now() + ASK_AGAIN_S
            return None
        self._installations[key] = found
        return found

    def _exchange(self, repo: str, installation: int) -> _Token | None:
        answer = self._ask("POST", f"/app/installations/{installation}/access_tokens")
        if isinstance(answer, str):
            self._failed(repo, f"GitHub gave no installation token for {repo} ({answer})")
            return None
        token, expires = answer.get("token"), _expiry(answer.get("expires_at"))
        if not isinstance(token, str) or not token or expires is None:
            self._failed(repo, f"GitHub's installation token for {repo} is not one")
            return None
        self.exchanges += 1
        return _Token(token, expires)

    def _ask(self, method: str, path: str) -> dict[str, Any] | str:
        """One request signed with a new JWT: the JSON object answered, or why there is none."""
        try:
            response = self._session.request(
                method, self._api_url + path, headers=self._jwt_headers(), timeout=TIMEOUT_S
            )
            data = response.json() if response.status_code in (200, 201) else None
        except (requests.RequestException, ValueError) as exc:
            return f"asking GitHub failed: {type(exc).__name__}"
        return data if isinstance(data, dict) else f"HTTP {response.status_code}"

    def _jwt_headers(self) -> dict[str, str]:
        now = int(self._now())
        claims = {"iat": now - JWT_BACKDATE_S, "exp": now + JWT_LIFETIME_S, "iss": self._app_id}
        signed = jwt.encode(claims, self._key, algorithm="RS256")
        return {
            "Authorization": f"Bearer {signed}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": USER_AGENT,
        }

    def _failed(self, repo: str, line: str, setting: str = "GITHUB_APP_ID") -> None:
        """Keeps ``line`` as ``repo``'s problem (about ``setting``), logged once while it stays
        the same."""
        if self._problems.get(repo.lower()) != line:
            logger.error("GitHub App authentication: %s.", line)
        self._problems[repo.lower()] = line
        self._problem_settings[repo.lower()] = setting


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _expiry(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
