"""What launchers receive, and when: the contract's four item types and the publish-window rule.

Plain frozen values (no Django), so the endpoint can compare and keep them. The window rule is
one function that the feed, the admin and the preview all use. See docs/renames-and-notices.md.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")

# At most this many items of each kind are served, the newest first: 20,000 alerts made an
# 81 MB answer. The launcher shows a handful; a hundred of each is far past any real need.
MAX_SERVED_PER_KIND = 100


class Visibility(enum.Enum):
    SERVED = "served now"
    SCHEDULED = "scheduled"
    EXPIRED = "expired"
    UNPUBLISHED = "unpublished"


@dataclass(frozen=True)
class Window:
    """When an item is served: published, from ``visible_from`` (inclusive) until
    ``visible_until`` (exclusive; None: no end)."""

    published: bool
    visible_from: datetime
    visible_until: datetime | None

    def visibility(self, now: datetime) -> Visibility:
        if not self.published:
            return Visibility.UNPUBLISHED
        if now < self.visible_from:
            return Visibility.SCHEDULED
        if self.visible_until is not None and now >= self.visible_until:
            return Visibility.EXPIRED
        return Visibility.SERVED

    def next_change(self, now: datetime) -> datetime | None:
        """The first instant after ``now`` at which ``visibility`` changes by itself."""
        if not self.published:
            return None
        if now < self.visible_from:
            return self.visible_from
        if self.visible_until is not None and now < self.visible_until:
            return self.visible_until
        return None


@dataclass(frozen=True)
class AppRenameItem:
    old_name: str
    old_name_lower: str
    new_name: str
    new_name_lower: str
    description: str
    renamed_at: datetime | None


@dataclass(frozen=True)
class RepoRenameItem:
    old_name: str
    new_name: str
    renamed_at: datetime | None


@dataclass(frozen=True)
class AnnouncementItem:
    title: str
    body: str
    created_at: datetime | None


@dataclass(frozen=True)
class AlertItem:
    title: str
    body: str
    maybe_web_link: str | None
    created_at: datetime | None


@dataclass(frozen=True)
class Notices:
    """The served items of each kind, newest first. Compared by value: equal notices encode to
    equal bytes."""

    app_renames: tuple[AppRenameItem, ...] = ()
    repo_renames: tuple[RepoRenameItem, ...] = ()
    announcements: tuple[AnnouncementItem, ...] = ()
    alerts: tuple[AlertItem, ...] = ()

    def contract(self) -> dict[str, Any]:
        """The answer's ``app_renames``, ``repo_renames`` and ``important_notices``, for the
        response serializer."""
        return {
            "app_renames": list(self.app_renames),
            "repo_renames": list(self.repo_renames),
            "important_notices": {"announcements": list(self.announcements), "alerts": list(self.alerts)},
        }

    def __len__(self) -> int:
        return len(self.app_renames) + len(self.repo_renames) + len(self.announcements) + len(self.alerts)


NO_NOTICES = Notices()


@dataclass(frozen=True)
class Scheduled:
    """The published, not yet expired items of each kind with their windows, newest first: all
    the feed needs to know what to serve at any instant until the next edit, or until
    ``reload_at`` when the bound kept some items in the database (``left_out`` of them served
    now)."""

    app_renames: tuple[tuple[Window, AppRenameItem], ...] = ()
    repo_renames: tuple[tuple[Window, RepoRenameItem], ...] = ()
    announcements: tuple[tuple[Window, AnnouncementItem], ...] = ()
    alerts: tuple[tuple[Window, AlertItem], ...] = ()
    reload_at: datetime | None = None
    left_out: int = 0

    def served(self, now: datetime) -> Notices:
        return Notices(
            app_renames=_served(self.app_renames, now),
            repo_renames=_served(self.repo_renames, now),
            announcements=_served(self.announcements, now),
            alerts=_served(self.alerts, now),
        )

    def next_change(self, now: datetime) -> datetime | None:
        """When ``served`` changes by itself next (a window opens or closes); None: never."""
        windows: Iterable[Window] = (
            window
            for kind in (self.app_renames, self.repo_renames, self.announcements, self.alerts)
            for window, _ in kind
        )
        changes = [change for window in windows if (change := window.next_change(now)) is not None]
        return min(changes, default=None)


def _served(pairs: tuple[tuple[Window, T], ...], now: datetime) -> tuple[T, ...]:
    served = (item for window, item in pairs if window.visibility(now) is Visibility.SERVED)
    return tuple(itertools.islice(served, MAX_SERVED_PER_KIND))
