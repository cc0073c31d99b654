"""The API docs' drf-spectacular settings: one default for the demo site and the install snippet.

A settings module can import it (it imports nothing of Django's)::

    from craft_apps.api.docs_settings import spectacular_settings
    SPECTACULAR_SETTINGS = spectacular_settings()

Each call makes a new dict, so a site may change its copy (``spectacular_settings(TITLE=...)``).
"""

from __future__ import annotations

# The contract's version, not the package's: the JSON contract grows only by optional fields.
CONTRACT_VERSION = "1.0.0"


def spectacular_settings(**overrides: object) -> dict[str, object]:
    settings: dict[str, object] = {
        "TITLE": "Craft Apps release info",
        "DESCRIPTION": "The latest release of every Craft App, for ArtCraft Launcher; the downloads, "
        "the host's health, its metrics and the GitHub webhook.",
        "VERSION": CONTRACT_VERSION,
        # The schema endpoint is not part of the API (and its session and basic authentication
        # would give the docs an Authorize button the API has no use for).
        "SERVE_INCLUDE_SCHEMA": False,
        # The docs load nothing from outside the site: Swagger UI and ReDoc from
        # drf-spectacular-sidecar, no online validator badge (an image from validator.swagger.io).
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
        "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    }
    return settings | overrides
