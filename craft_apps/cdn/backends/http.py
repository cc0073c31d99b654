"""Purge by HTTP request to a cache: ``PURGE`` per URL or ``BAN`` per path prefix (Varnish,
Fastly, nginx's purge module)."""

from __future__ import annotations

from collections.abc import Sequence

from craft_apps.cdn.backends.base import PurgeBackend
from craft_apps.cdn.plan import RELEASE_INFO, UPDATER_PREFIX, PurgeRequest
from craft_apps.conf import Problem, PurgeTarget


class HttpPurge(PurgeBackend):
    """Sends each request to ``CDN_PURGE_URL`` with ``{path}`` filled in and the public Host."""

    def problem(self, target: PurgeTarget) -> Problem | None:
        if "{path}" not in target.url:
            return Problem("cdn_purge_template", {"value": target.url})
        return None

    def requests(self, target: PurgeTarget, paths: Sequence[str]) -> tuple[PurgeRequest, ...]:
        host = (("Host", target.public_host),)
        if target.method == "BAN":  # the answers' path and every updater path, as prefixes
            prefixes = sorted({RELEASE_INFO for path in paths if path.startswith(RELEASE_INFO)})
            prefixes.append(UPDATER_PREFIX)
            return tuple(
                PurgeRequest("BAN", target.url.replace("{path}", p), host, drops=f"every URL under {p}")
                for p in prefixes
            )
        return tuple(PurgeRequest("PURGE", target.url.replace("{path}", p), host, drops=p) for p in paths)

    def auth(self, token: str) -> dict[str, str]:
        return {"Fastly-Key": token}

    def method(self, target: PurgeTarget) -> str:
        return target.method
