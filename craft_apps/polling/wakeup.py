"""The pause between ticks, which notices within a second a refresh asked for ahead of schedule.

``WakeUps.wait(seconds)`` replaces the runner's sleep between ticks: it sleeps in steps of
``WAKE_CHECK_MS``, checks after each whether a refresh was asked for (one Redis ``GET`` with the
fleet, one small read of the host's state file alone) and runs a tick at once when so. It
returns False when asked to stop, True at the end of the pause.
"""

from __future__ import annotations

import logging

from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.host.due import HostDueMarks
from craft_apps.host.store import StateUnavailable
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.instants import format_ms
from craft_apps.polling.poller import Poller
from craft_apps.polling.schedule import WAKE_CHECK_MS

logger = logging.getLogger(__name__)

_UNREAD = b"\x00unread"  # no counter read yet: the first look reads the marks


class WakeUps:
    """Refreshes asked for between ticks, checked every ``WAKE_CHECK_MS`` during the pause.

    With the fleet a check is one ``GET`` of a counter in Redis (the marks are read only when it
    moved); alone, or while Redis is in trouble, one small read of the host's state file. A
    refresh still awaiting another host's answer runs a tick every second for up to
    ``PATIENCE_MS``: the host that wins the claim asks GitHub within about a second of the
    webhook, and the others take its answer from Redis within about a second more. A mark on the
    host's state file that didn't reach Redis is passed on to the fleet before the poller acts.
    """

    def __init__(
        self,
        poller: Poller,
        clock: Clock,
        *,
        host_marks: HostDueMarks | None = None,
        shared_marks: SharedDueMarks | None = None,
    ) -> None:
        self.poller = poller
        self.clock = clock
        self.host_marks = host_marks
        self.shared_marks = shared_marks
        self._apps = frozenset(app.key for app in poller.config.apps)
        self._seq: bytes | None = _UNREAD

    def wait(self, seconds: float) -> bool:
        """Waits ``seconds``, running a tick whenever a refresh needs one; False when asked to
        stop, True at the end of the wait (or at once when the poller lost its lease)."""
        end_ms = self.clock.now_ms() + round(max(0.0, seconds) * 1000)
        while (left := end_ms - self.clock.now_ms()) > 0:
            if not self.clock.sleep(min(WAKE_CHECK_MS, left) / 1000):
                return False
            if self.look():
                self.poller.tick()
                if self.poller.fence_lost:
                    return True
        return True

    def look(self, *, at_tick: bool = False) -> bool:
        """Takes the marks asked for since the last look; True when a tick should run now.
        ``at_tick``: right before an ordinary tick, which reads the host's marks in any case."""
        now_ms = self.clock.now_ms()
        coordinated = self.shared_marks is not None and not self.poller.redis_log.is_failing
        news = False
        if self.host_marks is not None and (at_tick or not coordinated):
            news = self._take_host_marks(coordinated, now_ms)
        if coordinated:
            news = self._take_shared_marks(now_ms) or news
        requests = self.poller.requests
        return news or (requests.awaiting(now_ms) and not self.poller.backoff.is_active(now_ms))

    def _take_host_marks(self, coordinated: bool, now_ms: int) -> bool:
        assert self.host_marks is not None
        try:
            marks = self.host_marks.marks()
        except StateUnavailable as err:
            logger.debug("Craft app releases: couldn't read the due marks: %s", err)
            return False
        if not marks:
            return False
        news = False
        for mark in marks:
            if not mark.shared and coordinated:
                self._pass_on(mark.app, mark.requested_ms, now_ms)
            if mark.app in self._apps and self.poller.requests.take(mark.app, mark.requested_ms, now_ms):
                news = True
                logger.info("Craft app releases: a refresh of %s was asked for on this host.", mark.app)
        try:
            self.host_marks.forget(marks)
        except StateUnavailable as err:
            logger.warning("Craft app releases: couldn't clear the due marks taken: %s", err)
        return news

    def keep_pending(self) -> None:
        """Puts the refreshes still waiting (the 10 s gap, another host's claim) back on the
        host's state file as the poller stops, with one line each: the next run (a ``--once``,
        a restart) takes them again instead of their being dropped with this process."""
        pending = self.poller.requests.pending()
        if self.host_marks is None or not pending:
            return
        for app, requested_ms in sorted(pending.items()):
            try:
                self.host_marks.mark([app], requested_ms, shared=True)
            except StateUnavailable as err:
                logger.warning(
                    "Craft app releases: couldn't keep the refresh of %s for the next run: %s", app, err
                )
                continue
            logger.info(
                "Craft app releases: the refresh of %s asked for at %s isn't answered yet (the 10 s "
                "between two requests about an app, a backoff or another host's claim); kept on the "
                "state file for the next run.",
                app,
                format_ms(requested_ms),
            )

    def _pass_on(self, app: str, requested_ms: int, now_ms: int) -> None:
        """A mark the web worker couldn't share: shares it now, so the fleet hears of it."""
        assert self.shared_marks is not None
        try:
            self.shared_marks.mark([app], requested_ms)
        except RedisTrouble as err:
            self.poller.redis_log.failed(err, now_ms)
        else:
            self.poller.redis_log.succeeded(RedisOperation.WRITE, now_ms)

    def _take_shared_marks(self, now_ms: int) -> bool:
        assert self.shared_marks is not None
        try:
            seq = self.shared_marks.seq()
            if seq == self._seq:
                return False
            marks = self.shared_marks.marks()
        except RedisTrouble as err:
            self.poller.redis_log.failed(err, now_ms)
            return False
        self._seq = seq
        news = False
        for app, requested_ms in sorted(marks.items()):
            if app in self._apps and self.poller.requests.take(app, requested_ms, now_ms):
                news = True
                logger.debug("Craft app releases: the fleet was asked to refresh %s.", app)
        return news
