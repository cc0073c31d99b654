"""The credentials the settings describe for GitHub's API: ``GITHUB_TOKEN`` for now.

``credentials_from_settings`` returns them with what they were made of (never the secret
itself), so a holder can tell when to make them anew.
"""

from __future__ import annotations

import hashlib

from craft_apps.conf import app_settings
from craft_apps.github.asset_links import Credentials, StaticToken


def credentials_from_settings() -> tuple[Credentials, object]:
    """The configured credentials, and a fingerprint of the settings they came from."""
    token = app_settings.GITHUB_TOKEN
    fingerprint = None if token is None else hashlib.sha256(token.encode()).hexdigest()
    return StaticToken(token), ("token", fingerprint)
