"""What every purge backend does: the requests that drop some paths, their token and outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from requests import Response

from craft_apps.cdn.plan import PurgeRequest
from craft_apps.conf import Problem, PurgeTarget


class PurgeBackend:
    """Turns changed paths into requests to one kind of CDN and reads its answers."""

    needs: ClassVar[tuple[str, ...]] = ("CDN_PURGE_URL", "CDN_PUBLIC_URL")  # settings it requires
    default_url: ClassVar[str | None] = None  # ``CDN_PURGE_URL`` when it is not set

    def problem(self, target: PurgeTarget) -> Problem | None:
        """What makes ``target`` unusable; None when it can work."""
        return None

    def requests(self, target: PurgeTarget, paths: Sequence[str]) -> tuple[PurgeRequest, ...]:
        """The requests that drop ``paths`` (never empty when ``paths`` is not)."""
        raise NotImplementedError

    def auth(self, token: str) -> dict[str, str]:
        """The headers that carry ``token``."""
        return {}

    def refusal(self, response: Response) -> str | None:
        """Why ``response`` is not a purge done, in a few words; None when it is."""
        return None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"

    def method(self, target: PurgeTarget) -> str:
        """How it drops answers, for ``craft_apps_status``."""
        return "purge by URL"
