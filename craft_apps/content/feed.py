"""What one web process serves as notices, channels and release controls: no request waits on the database.

A background look, once a second, reads the version marker and reloads only when it changed;
requests take what the last look left. When the database can't be read the process keeps what
it had and logs one line; a process that never read it applies the kept controls file.
See docs/renames-and-notices.md and docs/controls.md.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import close_old_connections, router
from django.db.models import Q
from prometheus_client import Counter, Gauge

from craft_apps.conf import app_settings
from craft_apps.content.channels import read_channel_apps, read_controls
from craft_apps.content.items import MAX_SERVED_PER_KIND, NO_NOTICES, Notices, Scheduled, Window
from craft_apps.content.models import Alert, Announcement, AppRename, Notice, NoticesVersion, RepoRename
from craft_apps.content.pacer import Pacer
from craft_apps.content.served_versions import Reporter
from craft_apps.controls.kept import KeptControls
from craft_apps.controls.rules import Control
from craft_apps.kernel.clock import Clock, SystemClock
from craft_apps.kernel.domain import NO_CHANNEL_APPS, ChannelApps
from craft_apps.kernel.instants import ms_to_datetime
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

RECHECK_S = 1.0  # a look starts at most this long after the last one ended: an edit shows within it
FIRST_LOOK_WAIT_S = 0.5  # what a process that never read the database waits for it, in all
LOOK_STALLED_S = 3.0  # a look still running this long is logged, as a failure is
# Beats per recheck: a look starts within a quarter of it once due. A beat a whole recheck after
# the last would find that look (which ended after the beat began) not yet due: a look every 2 s.
BEATS_PER_RECHECK = 4

# Registered by the metrics endpoint (craft_apps.api.metrics), in each web process.
LOOK_FAILURES = Counter(
    "craft_apps_notices_look_failures",
    "Looks at the site's database for renames and notices that failed (the last ones stay "
    "served), by the error's class.",
    ["error"],
    registry=None,
)
LEFT_OUT = Gauge(
    "craft_apps_notices_left_out",
    f"Renames and notices served now but left out of the answer: at most {MAX_SERVED_PER_KIND} "
    "of each kind are served, the newest.",
    registry=None,
    multiprocess_mode="max",
)

Runner = Callable[[Callable[[], None]], None]
"""Runs a look: the process's looker thread, or at once in the caller (tests on fake time)."""


def read_version(using: str) -> int | None:
    """The marker every write bumps; None before the first write. One query."""
    version: int | None = (
        NoticesVersion.objects.using(using).filter(pk=1).values_list("version", flat=True).first()
    )
    return version


def load_scheduled(using: str, now: datetime) -> Scheduled:
    """The items of each kind that are or may become served, newest first, at most
    ``MAX_SERVED_PER_KIND`` served now and as many upcoming (two queries a kind, a third to
    count what is left out). Unpublished and expired items stay in the database: only an edit
    can bring them back, and an edit bumps the marker. When the bound kept items back,
    ``reload_at`` is the first instant one of them may be served."""
    live = Q(published=True) & (Q(visible_until__isnull=True) | Q(visible_until__gt=now))
    reloads: list[datetime] = []
    left_out = 0

    def pairs(model: type[Notice]) -> tuple[tuple[Window, Any], ...]:
        nonlocal left_out
        rows = model._default_manager.using(using).filter(live)
        served_now = rows.filter(visible_from__lte=now).order_by("-visible_from", "-id")
        current = list(served_now[: MAX_SERVED_PER_KIND + 1])
        if len(current) > MAX_SERVED_PER_KIND:
            current = current[:MAX_SERVED_PER_KIND]
            left_out += served_now.count() - MAX_SERVED_PER_KIND
            # When a served one expires, the newest one kept back takes its place.
            ends = [row.visible_until for row in current if row.visible_until is not None]
            if ends:
                reloads.append(min(ends))
        upcoming = list(
            rows.filter(visible_from__gt=now).order_by("visible_from", "id")[: MAX_SERVED_PER_KIND + 1]
        )
        if len(upcoming) > MAX_SERVED_PER_KIND:
            reloads.append(upcoming.pop().visible_from)  # the first one not loaded opens then
        return tuple((row.window(), row.to_item()) for row in [*reversed(upcoming), *current])

    return Scheduled(
        app_renames=pairs(AppRename),
        repo_renames=pairs(RepoRename),
        announcements=pairs(Announcement),
        alerts=pairs(Alert),
        reload_at=min(reloads, default=None),
        left_out=left_out,
    )


class BackgroundLooker:
    """One daemon thread per process that runs the looks it is handed, one at a time. Started
    on the first look, and again in a forked child (threads don't survive a fork). The
    thread's database connection is handled as a request's is (``close_old_connections``), so
    ``CONN_MAX_AGE`` applies and a broken connection is dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: Callable[[], None] | None = None
        self._pid: int | None = None

    def __call__(self, look: Callable[[], None]) -> None:
        with self._lock:
            self._pending = look
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._wake = threading.Event()
                threading.Thread(
                    target=self._run, args=(self._wake,), name="craft-apps-notices", daemon=True
                ).start()
            self._wake.set()

    def stop(self) -> None:
        """Ends the thread once its look is done (a test's or a benchmark's runtime); a later
        look starts another."""
        with self._lock:
            wake, self._wake, self._pid, self._pending = self._wake, threading.Event(), None, None
        wake.set()

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.wait()
            wake.clear()
            with self._lock:
                if wake is not self._wake:  # stopped
                    return
                look, self._pending = self._pending, None
            if look is None:
                continue
            try:
                look()
            finally:
                close_old_connections()


class LeftOutReport:
    """Says once when renames and notices are left out of the answer, and once when none are."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left_out = 0

    def __call__(self, left_out: int) -> None:
        LEFT_OUT.set(left_out)
        with self._lock:
            before, self._left_out = self._left_out, left_out
        if left_out == before:
            return
        if left_out:
            logger.warning(
                "Craft apps notices: %d renames and notices served now are left out of the answer: "
                "at most %d of each kind are served, the newest; unpublish or end the old ones",
                left_out,
                MAX_SERVED_PER_KIND,
            )
        else:
            logger.info("Craft apps notices: every rename and notice served now is in the answer again")


class KeptFile:
    """The state directory's copy of the controls (``controls.kept``), or None when not kept."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self._file: KeptControls | None = None

    def __call__(self) -> KeptControls | None:
        """The file in the configured state directory (opened anew when that changes)."""
        if not self.keep:
            return None
        directory = app_settings.STATE_DIR
        if self._file is None or self._file.path.parent != directory:
            self._file = KeptControls(directory)
        return self._file


def served_count(scheduled: Scheduled | None, now_ms: int) -> int:
    """How many renames and notices ``scheduled`` serves at ``now_ms``."""
    return len(scheduled.served(ms_to_datetime(now_ms))) if scheduled else 0


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
        runner: Runner | None = None,
        first_look_wait_s: float = FIRST_LOOK_WAIT_S,
        stalled_s: float = LOOK_STALLED_S,
        keep_controls: bool = True,
        pace: bool | None = None,
        report_served: bool | None = None,
    ) -> None:
        self.recheck_s = recheck_s
        self.keep_controls = keep_controls  # in the state directory's file (``controls.kept``)
        self.stalled_s = stalled_s
        self.first_look_wait_s = first_look_wait_s
        self._monotonic = monotonic
        self._clock: Clock = clock or SystemClock()
        self._runner: Runner = runner or BackgroundLooker()
        # The beat: a look every ``recheck_s`` whether or not requests come, started by the
        # first ``current`` or at the process's start (``api.startup``) (None: the looks are
        # started by the calls alone, as tests on fake time want).
        paced = runner is None if pace is None else pace
        self.pacer = Pacer(self._beat, recheck_s / BEATS_PER_RECHECK) if paced else None
        # After each look that read the database, which version it serves, for the CDN purge
        # (None: when paced, as a web process's feed is; the purge thread's own says False).
        reports = paced if report_served is None else report_served
        self._report = Reporter() if reports else None
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forgets everything: the next call looks at the database again (tests)."""
        with self._lock:
            self._generation = getattr(self, "_generation", 0) + 1
            self._pid = os.getpid()
            self._next_look = float("-inf")
            self._looking = False
            self._first_look = threading.Event()
            self._wait_until: float | None = None
            self._version: int | None = None
            self._scheduled: Scheduled | None = None
            self._served: _Served | None = None
            self._channel_apps: ChannelApps = NO_CHANNEL_APPS
            self._controls: tuple[Control, ...] = ()
            self._controls_read = False  # from the database, by this process
            self._kept_controls = KeptFile(self.keep_controls)  # read anew, as at a process's start
            self._failing = False
            self._report_left_out = LeftOutReport()

    def close(self) -> None:
        """Ends the beat and the looker thread this feed started, if any."""
        if self.pacer is not None:
            self.pacer.stop()
        if isinstance(self._runner, BackgroundLooker):
            self._runner.stop()

    def _beat(self) -> None:
        """Every ``recheck_s`` in the pacer's thread: the kept file when the database was never
        read, then a look when one is due. Never waits on the database."""
        if not self._controls_read:
            self._take_kept(self._generation)
        if self._monotonic() >= self._next_look or self._pid != os.getpid():
            self._start_look()

    def current(self) -> Notices:
        """The notices to serve now. Never raises, never waits on the database (but for a
        process's first look, at most ``first_look_wait_s`` in all)."""
        if self.pacer is not None:
            self.pacer.start()
        if self._monotonic() >= self._next_look or self._pid != os.getpid():
            self._start_look()
        if self._scheduled is None and self._wait_until is not None:
            left = self._wait_until - self._monotonic()
            if left > 0:
                self._first_look.wait(left)
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

    def channel_apps(self) -> ChannelApps:
        """Which apps each channel chosen per app is on for, as the last look left them (none
        before the first). Starts no look: ``current``, which every answer asks first, does."""
        return self._channel_apps

    def version(self) -> int | None:
        """The version marker the last look read (None before a look that read the database)."""
        return self._version

    def controls_changed_ms(self) -> int | None:
        """When the site's notices and controls were last written (Unix ms), from the marker the
        last look read (``bump_version`` keeps it at least the writer's clock in ns); None
        before a look that read the database."""
        version = self._version
        return None if version is None else version // 1_000_000

    def controls(self) -> tuple[Control, ...]:
        """The release controls as the last look left them (none before the first). Starts no
        look, as ``channel_apps``. A process that has never read them from the database stats the
        kept file, and when it changed waits for the beat to read it, at most
        ``first_look_wait_s``: the poller writes the fleet's there before it publishes the
        releases they apply to (``controls.relay``). A request never opens the file."""
        if not self._controls_read:
            kept = self._kept_controls()
            if self.pacer is None:
                self._take_kept(self._generation)  # no beat: the caller is the background
            elif kept is not None and kept.changed():
                self.pacer.wake_and_wait(self.first_look_wait_s)
        return self._controls

    def _take_kept(self, generation: int) -> None:
        kept = self._kept_controls()
        loaded = None if kept is None else kept.load_changed()
        if loaded is None:
            return
        with self._lock:
            if generation == self._generation and not self._controls_read:
                self._controls = loaded

    def _start_look(self) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's look isn't running here
                self._pid, self._looking = os.getpid(), False
            if self._monotonic() < self._next_look:
                return
            if self._looking:  # the look in flight is past LOOK_STALLED_S
                self._next_look = float("inf")
                stalled, self._failing = not self._failing, True
            else:
                stalled = False
                self._looking, self._next_look = True, self._monotonic() + self.stalled_s
            if self._wait_until is None:
                self._wait_until = self._monotonic() + self.first_look_wait_s
            generation = self._generation
        if stalled:
            LOOK_FAILURES.labels("stalled").inc()
            logger.warning(
                "Craft apps notices: the database hasn't answered for %g s; serving the last %d "
                "notices and renames this process had until it does",
                self.stalled_s,
                served_count(self._scheduled, self._clock.now_ms()),
            )
            return
        try:
            self._runner(lambda: self._look(generation))
        except Exception as err:  # no thread to be had: try again at the next recheck
            self._looked(generation, err)

    def _look(self, generation: int) -> None:
        failure: Exception | None = None
        try:
            self._read(generation)
        except Exception as err:  # the endpoint never fails, whatever the database does
            failure = err
        self._looked(generation, failure)

    def _read(self, generation: int) -> None:
        if not self._controls_read:
            self._take_kept(generation)  # before the database, which may not answer
        using = router.db_for_read(NoticesVersion)
        version = read_version(using)
        now = ms_to_datetime(self._clock.now_ms())
        scheduled = self._scheduled
        if (
            scheduled is None
            or version != self._version
            or (scheduled.reload_at is not None and now >= scheduled.reload_at)
        ):
            scheduled = load_scheduled(using, now)
            channel_apps = read_channel_apps(using)
            controls = read_controls(using)
            with self._lock:
                if generation == self._generation:
                    self._version, self._scheduled = version, scheduled
                    self._channel_apps = channel_apps
                    self._controls, self._controls_read = controls, True
            self._report_left_out(scheduled.left_out)
        self._keep(generation)
        with self._lock:  # then says which version this process serves now
            current, version = generation == self._generation, self._version
        if self._report is not None and current:
            self._report(version, self._clock.now_ms())

    def _keep(self, generation: int) -> None:
        """Makes sure the kept file holds what the database said, after every look that read
        it: a file damaged or replaced since is rewritten (a stat when it is as we left it)."""
        kept = self._kept_controls()
        with self._lock:
            read, controls = generation == self._generation and self._controls_read, self._controls
        if kept is not None and read:
            kept.save(controls)

    def _looked(self, generation: int, failure: Exception | None) -> None:
        """The end of a look: the next is due ``recheck_s`` from now; one line when the
        database stops or starts answering."""
        with self._lock:
            if generation != self._generation:
                return
            self._looking = False
            self._next_look = self._monotonic() + self.recheck_s
            failing_before, self._failing = self._failing, failure is not None
        self._first_look.set()
        if failure is None:
            if failing_before:
                logger.info("Craft apps notices: the database is readable again")
            return
        LOOK_FAILURES.labels(type(failure).__name__).inc()
        if failing_before:
            return
        reason = one_line(f"{type(failure).__name__}: {failure}", 300)
        logger.warning(
            "Craft apps notices: the database can't be read (%s); serving the last %d "
            "notices and renames this process had, trying again %g s after each attempt",
            reason,
            served_count(self._scheduled, self._clock.now_ms()),
            self.recheck_s,
        )
