"""A purge backend of the tests' own, named by its dotted path: how a new CDN is added."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from craft_apps.cdn.backends.base import PurgeBackend
from craft_apps.cdn.plan import PurgeRequest
from craft_apps.conf import PurgeTarget


class QueryPurge(PurgeBackend):
    """Asks ``CDN_PURGE_URL?path=<path>`` with ``PURGE`` for each changed path."""

    def requests(self, target: PurgeTarget, paths: Sequence[str]) -> tuple[PurgeRequest, ...]:
        return tuple(
            PurgeRequest("PURGE", f"{target.url}?path={quote(path, safe='')}", drops=path) for path in paths
        )

    def auth(self, token: str) -> dict[str, str]:
        return {"X-Purge-Key": token}
