"""Which answers changed, and the shape of a request that makes the CDN drop them: no I/O.

An answer changed when the ETag its URL serves (the answer's own, before any signature) is not
the one of the last look. Only a cacheable answer counts: a cold host's answer says
``no-store`` and no cache holds it. Each channel is its own URL. A purge by URL drops every
variant a cache keeps for it (``Vary: Accept-Encoding``'s brotli, gzip and plain); a ``BAN`` of
a path drops every URL under it, the channels' query strings and the updater paths included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from craft_apps.kernel.domain import Channel

RELEASE_INFO = "/v1/craft_apps/release_info"
UPDATER_PREFIX = "/v1/craft_apps/updates/tauri/"  # one URL per app and platform: banned as a prefix


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
