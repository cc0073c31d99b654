"""The credentials the settings describe for GitHub's API: a GitHub App when ``GITHUB_APP_ID``
and its key are set (``app_auth``), else ``GITHUB_TOKEN`` (or none).

``credentials_from_settings`` returns them with what they were made of (a fingerprint, never a
secret), so a holder can tell when to make them anew; an App's credentials are kept per process
while the settings stay the same, so its installation tokens are made once an hour, not per use.
"""

from __future__ import annotations

import hashlib
import threading

from craft_apps.conf import GitHubApp, app_settings
from craft_apps.github.app_auth import AppCredentials
from craft_apps.github.asset_links import Credentials, StaticToken


class _Kept:
    """The App's credentials last made in this process, with what they were made of."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made: tuple[object, AppCredentials] | None = None


_kept = _Kept()


def credentials_from_settings() -> tuple[Credentials, object]:
    """The configured credentials, and a fingerprint of the settings they came from."""
    app = app_settings.GITHUB_APP
    if app is not None:
        return _app_credentials(app, app_settings.GITHUB_API_URL)
    token = app_settings.GITHUB_TOKEN
    fingerprint = None if token is None else hashlib.sha256(token.encode()).hexdigest()
    return StaticToken(token), ("token", fingerprint)


def _app_credentials(app: GitHubApp, api_url: str) -> tuple[Credentials, object]:
    private = tuple(sorted(spec.repo.lower() for spec in app_settings.APPS if spec.private))
    made_of = ("app", app.app_id, app.private_key.fingerprint, app.installation_id, api_url, private)
    with _kept.lock:
        if _kept.made is None or _kept.made[0] != made_of:
            credentials = AppCredentials(
                api_url=api_url,
                app_id=app.app_id,
                private_key=app.private_key.key,
                installation_id=app.installation_id,
                private_repos=private,
            )
            _kept.made = (made_of, credentials)
        return _kept.made[1], made_of
