"""The poller process: waits for the lease, polls while it holds it, stops cleanly.

``PollerRunner(make_source=...).run()`` waits as a standby until it holds the state directory's
lease, polls with ``polling.loop`` while it holds it, stands by again when another process took
over, and returns the exit status. A state file that can't be written at start ends it with the
file and cause named. A stop request ends any wait at once, and a clean stop expires the lease
so a standby takes over within seconds. See docs/poller.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.db import close_old_connections

from craft_apps.conf import app_settings
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.store import SharedStore
from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease, LeaseKeeper, make_holder
from craft_apps.host.store import StateUnavailable
from craft_apps.kernel.clock import Clock, SystemClock
from craft_apps.kernel.domain import LeaseTiming
from craft_apps.kernel.source import Source
from craft_apps.polling.loop import PollerParts, PollingLoop, build_poller_parts
from craft_apps.polling.poller import PollConfig, Poller, TickReport
from craft_apps.polling.tally import EXIT_STALE, Tally, once_trouble
from craft_apps.polling.wakeup import WakeUps

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_STATE_UNUSABLE = 2


@dataclass
class RunnerOptions:
    once: bool = False
    startup_delay: bool = True  # spread a fleet deploy's first rounds over 0-30 s
    hostname: str | None = None  # written as `by` in Redis; the machine's name by default
    lease_timing: LeaseTiming | None = None  # the settings' LEASE_TTL_SECS / LEASE_RETRY_SECS
    keep_lease_in_background: bool = True  # a thread renews during long requests (not on a fake clock)
    progress: Callable[[int, int], None] | None = None  # told (apps done, apps due) during a round


class _LeaseUnwritable(Exception):
    """The lease could not be written to the state file; the message names the file and why."""


class PollerRunner:
    """One poller process: standby, polling and a clean stop for one state directory.

    It steps down to standby when it learns (a write refused for an outdated lease, a lost
    renewal) that another process took over. A state file it can't write at start (read-only,
    disk full, locked past the lock wait, a symbolic link) is reported as such, never as "another
    poller is active". After a stop request the round in flight ends after its current request.
    """

    def __init__(
        self,
        *,
        make_source: Callable[[Clock], Source],
        clock: Clock | None = None,
        shared: SharedStore | None = None,
        options: RunnerOptions | None = None,
        needs_history: Callable[[], frozenset[str]] | None = None,
    ) -> None:
        self.stop = threading.Event()
        # Which apps need GitHub's release list (a beta channel, a control); None: none do.
        self._needs_history = needs_history
        self.clock: Clock = clock or SystemClock(self.stop)
        self.options = options or RunnerOptions()
        self._make_source = make_source  # GitHubClient.from_settings in production
        self._shared = shared
        self.lease: Lease | None = None
        self.poller: Poller | None = None
        self.tally: Tally | None = None
        self.last_report: TickReport | None = None

    def run(self) -> int:
        """Polls until stopped (or one round with ``once``). Returns the exit status."""
        try:
            parts = build_poller_parts(
                self.clock,
                make_source=self._make_source,
                lease_timing=self.options.lease_timing,
                hostname=self.options.hostname,
                shared=self._shared,
                needs_history=self._needs_history,
            )
        except StateUnavailable as err:
            logger.error("Craft app releases: can't use the state file: %s", err)
            return EXIT_STATE_UNUSABLE
        config, host, github, shared = parts.config, parts.host, parts.github, parts.shared
        logger.info(
            "Polling GitHub for %d craft app releases, each at most every %d s "
            "(GitHub token: %s; coordinated through Redis: %s; state: %s).",
            len(config.apps),
            config.interval_ms // 1000,
            "yes" if app_settings.GITHUB_TOKEN else "no",
            "yes" if shared is not None else "no",
            host.path,
        )
        self.lease = Lease(host, holder=make_holder(), clock=self.clock, timing=parts.timing)
        self.tally = Tally(host, self.clock)
        try:
            at_start = True
            while not self.stop.is_set():
                if not self._acquire(at_start):
                    return EXIT_OK
                at_start = False
                self._hold(parts)
                if self.options.once:
                    return self._once_status(config)
            return EXIT_OK
        except _LeaseUnwritable as err:
            logger.error("Craft app releases: can't write the lease to the state file: %s", err)
            return EXIT_STATE_UNUSABLE
        finally:
            try:
                self.note_stop()
            finally:
                self.lease.release()
            close = getattr(github, "close", None)  # the source is this runner's: made by it
            if callable(close):
                close()

    def _acquire(self, at_start: bool) -> bool:
        """Whether this process now holds the lease (False: exit 0). Raises _LeaseUnwritable
        when the state file can't take the lease at start-up or in a --once run: that is a
        storage fault to report, not another poller."""
        assert self.lease is not None
        if self.lease.try_acquire():
            logger.info("Craft app releases: this poller is active (fence %s).", self.lease.fence)
            return True
        unreachable = self.lease.unreachable
        if unreachable is not None and (at_start or self.options.once):
            raise _LeaseUnwritable(str(unreachable))
        holder = self._holder_name()
        if self.options.once:
            logger.warning(
                "Craft app releases: another poller (%s) is active for this state directory; not polling.",
                holder,
            )
            return False
        if unreachable is None:  # else the lease has logged why it can't reach the file
            logger.info("Craft app releases: standing by while %s polls.", holder)
        acquired = self.lease.wait_until_acquired()
        if acquired:
            logger.info("Craft app releases: took over polling (fence %s).", self.lease.fence)
        return acquired

    def _holder_name(self) -> str:
        assert self.lease is not None
        try:
            current = self.lease.current()
        except StateUnavailable:
            current = None
        return current[0] if current else "another process"

    def _hold(self, parts: PollerParts) -> None:
        """Polls while this process holds the lease."""
        lease, tally, shared = self.lease, self.tally, parts.shared
        assert lease is not None and lease.fence is not None and tally is not None
        keeper = None
        if self.options.keep_lease_in_background:
            keeper = LeaseKeeper(lease, on_lost=lambda: logger.error("Craft app releases: lease lost."))
            keeper.start()
        try:
            poller = Poller(
                config=parts.config,
                github=parts.github,
                host=parts.host,
                fence=lease.fence,
                clock=self.clock,
                shared=shared,
                still_leader=lambda: lease.renew_if_due() and not self.stop.is_set(),
                needs_history=parts.needs_history,
                on_asked=self.options.progress,
            )
            self.poller = poller
            wakeups = WakeUps(
                poller,
                self.clock,
                host_marks=HostDueMarks(parts.host.state_dir),
                shared_marks=None
                if shared is None
                else SharedDueMarks(shared.client, key_prefix=shared.key_prefix),
            )
            loop = PollingLoop(
                poller,
                wakeups,
                lease=lease,
                tally=tally,
                clock=self.clock,
                stop=self.stop,
                once=self.options.once,
                startup_delay=self.options.startup_delay,
                before_tick=close_old_connections,  # Django's: drop connections past their age
            )
            try:
                loop.run()
            finally:
                self.last_report = loop.last_report or self.last_report
        finally:
            if keeper is not None:
                keeper.stop()

    def note_stop(self) -> None:
        """Records a clean stop in the host's counters while this process holds the lease."""
        if self.tally is not None and self.lease is not None and self.lease.fence is not None:
            self.tally.stopped()

    def _once_status(self, config: PollConfig) -> int:
        """0, or EXIT_STALE when the round's requests failed, or a backoff or the apps' next
        tries kept it from asking, and apps are now out of date (one line says which and until
        when)."""
        if self.poller is None or self.last_report is None:
            return EXIT_OK
        trouble = once_trouble(
            self.last_report, self.poller.memory, self.poller.backoff, self.clock.now_ms(), config.interval_ms
        )
        if trouble is None:
            return EXIT_OK
        logger.error("%s", trouble)
        return EXIT_STALE
