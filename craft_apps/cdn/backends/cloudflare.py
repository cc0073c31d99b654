"""Cloudflare's purge by URL through its API, 30 URLs a call."""

from __future__ import annotations

import json
from collections.abc import Sequence

from requests import Response

from craft_apps.cdn.backends.base import PurgeBackend
from craft_apps.cdn.plan import PurgeRequest
from craft_apps.conf import PurgeTarget
from craft_apps.kernel.text import one_line

API_URL = "https://api.cloudflare.com/client/v4"
FILES_PER_CALL = 30  # Cloudflare's limit of URLs in one purge by URL


class CloudflarePurge(PurgeBackend):
    """Purges the changed URLs of zone ``CDN_PURGE_ZONE``; the updater paths age out, since a
    purge by prefix is not on every plan."""

    needs = ("CDN_PURGE_URL", "CDN_PUBLIC_URL", "CDN_PURGE_TOKEN", "CDN_PURGE_ZONE")
    default_url = API_URL

    def requests(self, target: PurgeTarget, paths: Sequence[str]) -> tuple[PurgeRequest, ...]:
        url = f"{target.url}/zones/{target.zone}/purge_cache"
        chunks = [paths[at : at + FILES_PER_CALL] for at in range(0, len(paths), FILES_PER_CALL)]
        headers = (("Content-Type", "application/json"),)
        return tuple(
            PurgeRequest(
                "POST",
                url,
                headers,
                json.dumps({"files": [target.public_url + path for path in chunk]}).encode(),
                drops=", ".join(chunk),
            )
            for chunk in chunks
        )

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def refusal(self, response: Response) -> str | None:
        status = super().refusal(response)
        if status is not None:
            return status
        try:
            body = response.json()
        except ValueError:
            return "HTTP 200 without a JSON body"
        if isinstance(body, dict) and body.get("success") is True:
            return None
        errors = body.get("errors") if isinstance(body, dict) else None
        return one_line(f"refused: {errors!r}", 200)
