"""What one web process serves as renames and notices, without a database query per request.

The process keeps every published, not yet expired item with its window. At most once per
``RECHECK_S`` it reads the one-row version marker (one tiny query) and reloads the items only
when the number changed, so an edit anywhere in the fleet shows within about a second. A window
opening or closing needs no edit and no query: the kept items say when the served set changes
next, and the set is recomputed at that instant.

If the database can't be read, the process keeps serving what it had (nothing, if it never
read it), logs one line when the trouble starts and one when it ends, and tries again a
second later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import router
from django.db.models import Q

from craft_apps.clock import Clock, SystemClock
from craft_apps.instants import ms_to_datetime
from craft_apps.notices.items import NO_NOTICES, Notices, Scheduled, Window
from craft_apps.notices.models import Alert, Announcement, AppRename, Notice, NoticesVersion, RepoRename
from craft_apps.text import one_line

logger = logging.getLogger(__name__)

RECHECK_S = 1.0  # the version marker is read at most this often: an edit shows within it


def read_version(using: str) -> int | None:
    """The marker every write bumps; None before the first write. One query."""
    version: int | None = (
        NoticesVersion.objects.using(using).filter(pk=1).values_list("version", flat=True).first()
    )
    return version


def load_scheduled(using: str, now: datetime) -> Scheduled:
    """Every item that is or may become served, newest first (four queries). Unpublished and
    expired items are left in the database: only an edit can bring them back, and an edit
    bumps the marker."""
    may_be_served = Q(published=True) & (Q(visible_until__isnull=True) | Q(visible_until__gt=now))

    def pairs(model: type[Notice]) -> tuple[tuple[Window, Any], ...]:
        rows = model._default_manager.using(using).filter(may_be_served)
        return tuple((row.window(), row.to_item()) for row in rows)

    return Scheduled(
        app_renames=pairs(AppRename),
        repo_renames=pairs(RepoRename),
        announcements=pairs(Announcement),
        alerts=pairs(Alert),
    )


@dataclass(frozen=True)
class _Served:
    source: Scheduled  # what it was computed from: a reload makes it stale
    notices: Notices
    until: datetime | None  # when a window opens or closes next


class NoticesFeed:
    def __init__(
        self,
        recheck_s: float = RECHECK_S,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Clock | None = None,
    ) -> None:
        self.recheck_s = recheck_s
        self._monotonic = monotonic
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forgets everything: the next call reads the database (tests)."""
        self._next_look = float("-inf")
        self._version: int | None = None
        self._scheduled: Scheduled | None = None
        self._served: _Served | None = None
        self._failing = False

    def current(self) -> Notices:
        """The notices to serve now. Never raises."""
        if self._monotonic() >= self._next_look:
            with self._lock:
                if self._monotonic() >= self._next_look:
                    self._next_look = self._monotonic() + self.recheck_s
                    self._look()
        now = ms_to_datetime(self._clock.now_ms())
        scheduled, served = self._scheduled, self._served
        if scheduled is None:
            return NO_NOTICES
        if (
            served is None
            or served.source is not scheduled
            or (served.until is not None and now >= served.until)
        ):
            served = _Served(scheduled, scheduled.served(now), scheduled.next_change(now))
            self._served = served
        return served.notices

    def _look(self) -> None:
        using = router.db_for_read(NoticesVersion)
        try:
            version = read_version(using)
            if self._scheduled is not None and version == self._version:
                return
            scheduled = load_scheduled(using, ms_to_datetime(self._clock.now_ms()))
        except Exception as err:  # the endpoint never fails, whatever the database does
            if not self._failing:
                self._failing = True
                reason = one_line(f"{type(err).__name__}: {err}", 300)
                kept = (
                    len(self._scheduled.served(ms_to_datetime(self._clock.now_ms())))
                    if self._scheduled
                    else 0
                )
                logger.warning(
                    "Craft apps notices: the database can't be read (%s); serving the last %d "
                    "notices and renames this process had, trying again every %g s",
                    reason,
                    kept,
                    self.recheck_s,
                )
            return
        self._version, self._scheduled = version, scheduled
        if self._failing:
            self._failing = False
            logger.info("Craft apps notices: the database is readable again")


feed = NoticesFeed()
