"""Which answers changed, and the requests that make the CDN drop them: pure rules, no I/O.

An answer changed when the ETag its URL serves (the answer's own, before any signature) is not
the one of the last look. Only a cacheable answer counts: a cold host's answer says
``no-store`` and no cache holds it. Each channel is its own URL. A purge by URL drops every
variant a cache keeps for it (``Vary: Accept-Encoding``'s brotli, gzip and plain); a ``BAN`` of
a path drops every URL under it, the channels' query strings and the updater paths included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from craft_apps.conf import PurgeTarget
from craft_apps.kernel.domain import Channel

RELEASE_INFO = "/v1/craft_apps/release_info"
UPDATER_PREFIX = "/v1/craft_apps/updates/tauri/"  # one URL per app and platform: banned as a prefix
CLOUDFLARE_FILES_PER_CALL = 30  # Cloudflare's limit of URLs in one purge by URL


def answer_path(channel: Channel) -> str:
    """The path (and query) launchers ask ``channel``'s answer with."""
    return RELEASE_INFO if channel == Channel.STABLE else f"{RELEASE_INFO}?channel={channel.value}"


def changed_paths(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[str, ...]:
    """The paths whose ETag differs from the last look's; one that wasn't cacheable then (not
    in ``before``) was kept by no cache, so it has nothing to drop."""
    return tuple(path for path, etag in now.items() if path in before and before[path] != etag)


@dataclass(frozen=True)
class PurgeRequest:
    """One request to the CDN. ``headers`` hold no secret: the sender adds the token.
    ``drops`` says what it drops, for the log line."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    drops: str = ""


class Refused(str):
    """Why the CDN refused a request for good (a 4xx but 429: bad credentials, a wrong zone, an
    address outside its ACL): trying again would be refused the same way."""


def requests_for(target: PurgeTarget, paths: Iterable[str]) -> tuple[PurgeRequest, ...]:
    """The requests that drop ``paths`` (and, where the kind can, every updater path)."""
    paths = tuple(paths)
    if not paths:
        return ()
    if target.kind == "cloudflare":
        return _cloudflare(target, paths)
    host = (("Host", target.public_host),)
    if target.method == "BAN":
        prefixes = sorted({RELEASE_INFO for path in paths if path.startswith(RELEASE_INFO)})
        prefixes.append(UPDATER_PREFIX)
        return tuple(
            PurgeRequest("BAN", target.url.replace("{path}", prefix), host, drops=f"every URL under {prefix}")
            for prefix in prefixes
        )
    return tuple(
        PurgeRequest("PURGE", target.url.replace("{path}", path), host, drops=path) for path in paths
    )


def _cloudflare(target: PurgeTarget, paths: tuple[str, ...]) -> tuple[PurgeRequest, ...]:
    """Cloudflare's purge by URL, ``CLOUDFLARE_FILES_PER_CALL`` URLs a call. Its purge by
    prefix is not on every plan, so the updater paths are left to age out."""
    url = f"{target.url}/zones/{target.zone}/purge_cache"
    size = CLOUDFLARE_FILES_PER_CALL
    chunks = [paths[at : at + size] for at in range(0, len(paths), size)]
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
