"""``GET``/``HEAD /v1/craft_apps/assets/<app_key>/<asset_id>/<name>``: a private app's file.

``respond(request, app_key, asset_id, name)`` answers ``302`` to the short-lived URL GitHub gives
for that asset (``github.asset_links``), never the file's bytes; ``404`` for an app not in
``PRIVATE_APPS`` or an asset no served release holds; ``502`` when GitHub gives no URL. Its
docstring holds the rest. See docs/private.md.
"""

from __future__ import annotations

import logging
import threading

from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter

from craft_apps.api.downloads import refused, shown
from craft_apps.api.private_links import find_asset
from craft_apps.api.runtime import runtime
from craft_apps.conf import app_settings
from craft_apps.github.asset_links import KEEP_S, AssetLinks, LinkFailed
from craft_apps.github.credentials import credentials_from_settings
from craft_apps.kernel.domain import AppSpec, Channel, ReleaseAsset

logger = logging.getLogger(__name__)

# A CDN keeps the redirect 30 s at most and never uses it stale: with the link kept KEEP_S
# (60 s) here, a URL handed out is at most 90 s old, and GitHub's last about 300 s.
REDIRECT_MAX_AGE_S = 30
REDIRECT_CACHE = f"public, max-age={REDIRECT_MAX_AGE_S}, must-revalidate"
assert REDIRECT_MAX_AGE_S + KEEP_S < 300

FAILURES = Counter(
    "craft_apps_private_asset_failures",
    "Requests for a private app's file that GitHub gave no URL for (answered 502), by kind.",
    ["kind"],
    registry=None,
)


class _Links:
    """This process's ``AssetLinks``, made anew when the API URL or the credentials change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: tuple[object, AssetLinks] | None = None

    def get(self) -> AssetLinks:
        credentials, made_of = credentials_from_settings()
        inputs = (app_settings.GITHUB_API_URL, made_of)
        with self._lock:
            if self._made is None or self._made[0] != inputs:
                links = AssetLinks(api_url=app_settings.GITHUB_API_URL, credentials=credentials)
                self._made = (inputs, links)
            return self._made[1]

    def clear(self) -> None:
        """Forgets the links kept (the tests, between sites)."""
        with self._lock:
            self._made = None


LINKS = _Links()


def private_app(app_key: str) -> AppSpec | None:
    """The configured app ``app_key`` when it is private."""
    for app in app_settings.APPS:
        if app.key == app_key and app.private:
            return app
    return None


def served_asset(app_key: str, asset_id: int, name: str) -> ReleaseAsset | None:
    """The asset when a release some channel lists for the app holds it."""
    answers = runtime().answers
    for channel in Channel:
        found = find_asset(answers.answer(channel.value).release_info, app_key, asset_id, name)
        if found is not None:
            return found
    return None


def respond(request: HttpRequest, app_key: str, asset_id: int, name: str) -> HttpResponse:
    """``302`` to the URL GitHub gives (asked with the server's credentials, kept ``KEEP_S``), with
    ``Cache-Control: REDIRECT_CACHE``, short enough that a CDN never serves a redirect past the
    URL's expiry. ``404`` ``{"success": false, "error": ...}`` for an app not in ``PRIVATE_APPS`` or
    an asset that no release this host serves holds (a yanked one, one replaced): the asset must be
    in a release some channel's answer (``runtime().answers``) lists. ``502`` of the same form when
    GitHub gives no URL, with one log line and ``craft_apps_private_asset_failures`` counted by kind.
    """
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    app = private_app(app_key)
    if app is None:
        return refused(request, f"no private app {shown(app_key)} is configured", 404)
    if served_asset(app_key, asset_id, name) is None:
        reason = f"no release of {app.name} served here has the file {shown(name)} ({asset_id})"
        return refused(request, reason, 404)
    link = LINKS.get().link(app.repo, asset_id)
    if isinstance(link, LinkFailed):
        logger.warning("GitHub gave no download URL for %s's file %s: %s", app.key, asset_id, link.reason)
        FAILURES.labels(link.kind).inc()
        return refused(
            request, f"GitHub gave no download URL for this file: {link.reason}", 502, cacheable=False
        )
    response = HttpResponse(status=302)
    response["Location"] = link
    response["Cache-Control"] = REDIRECT_CACHE
    return response


def private_asset(request: HttpRequest, app_key: str, asset_id: int, name: str) -> HttpResponse:
    """The view (a plain one: not in the OpenAPI schema, which lists the launchers' contract)."""
    return respond(request, app_key, asset_id, name)
