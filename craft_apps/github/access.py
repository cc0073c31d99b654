"""What authenticates requests to GitHub's API, and which repositories are private.

``RepoAccess(token, credentials, private_repos)`` holds a token or a GitHub App's credentials;
``authorization(repo)`` takes a repository and returns its ``Authorization`` header or None, and
``no_credentials(repo)`` returns the ``Failed`` naming the setting to fix.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from craft_apps.conf import describe
from craft_apps.github.answers import echo
from craft_apps.github.asset_links import Credentials
from craft_apps.kernel.source import Failed

# The client's log lines keep the one logger name operators may have configured.
logger = logging.getLogger("craft_apps.github.client")

_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")


class RepoAccess:
    """A token or a GitHub App's installation tokens (``app_auth``), and the private repositories."""

    def __init__(
        self, token: str | None, credentials: Credentials | None, private_repos: Iterable[str]
    ) -> None:
        # Their releases keep each asset's id, and their small files are read through the API.
        self._private = frozenset(repo.lower() for repo in private_repos)
        # A GitHub App's installation tokens, used instead of ``token`` when given.
        self._credentials = credentials
        trimmed = (token or "").strip()
        self.token = trimmed if _VISIBLE_ASCII.fullmatch(trimmed) else None
        self.token_unusable = bool(trimmed) and self.token is None
        if self.token_unusable:
            logger.error("The GitHub token holds characters an HTTP header cannot carry; fetches will fail.")

    def label(self) -> str:
        """What authenticates, for a ``repr``: never the token itself."""
        if self._credentials is not None:
            return "GitHub App"
        return "unusable" if self.token_unusable else ("set" if self.token else "none")

    def is_private(self, repo: str) -> bool:
        """Whether ``repo`` is one of the private apps' repositories."""
        return repo.lower() in self._private

    def authorization(self, repo: str) -> str | None:
        """The ``Authorization`` header for a request about ``repo``, or None."""
        if self._credentials is not None:
            return self._credentials.authorization(repo)
        return None if self.token is None else f"Bearer {self.token}"

    def no_credentials(self, repo: str) -> Failed:
        """Why a private app's request can't be made: one line naming the settings."""
        if self._credentials is not None and (found := self._credentials.problem(repo)) is not None:
            return Failed(found, setting=self._credentials.setting(repo))
        line = f"a private app needs a GitHub token or a GitHub App ({describe('GITHUB_TOKEN')})"
        return Failed(line, setting="GITHUB_TOKEN")

    def renew(self, repo: str) -> bool:
        """Drop a GitHub App's refused token for ``repo``; False when there is no App to renew."""
        if self._credentials is None:
            return False
        self._credentials.rejected(repo)
        return True

    def setting(self, repo: str) -> str:
        """The setting that authenticates requests about ``repo``."""
        return "GITHUB_TOKEN" if self._credentials is None else self._credentials.setting(repo)

    def scrub(self, text: str) -> str:
        """Belt and braces: whatever a server or a library echoed, the token does not leave."""
        return echo(text, limit=len(text), secret=self.token)
