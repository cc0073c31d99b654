"""The poller's loop while this process holds the lease, apart from how the process is built.

``build_poller_parts(clock, make_source=...)`` reads the settings and returns the ``PollerParts``
a poller polls with (the state file, the release source, the shared store, the timing).
``PollingLoop(poller, wakeups, lease=..., ...).run()`` loads the host's state, takes the fleet's
releases, waits an optional start-up delay, then runs tick after tick with the lease renewed
until asked to stop or the lease is lost. The process, the benchmarks and the tests all run it.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from craft_apps.conf import app_settings
from craft_apps.fleet.connection import poller_redis_client
from craft_apps.fleet.store import SharedStore
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import LeaseTiming
from craft_apps.kernel.source import Source
from craft_apps.polling.poller import PollConfig, Poller, TickReport
from craft_apps.polling.schedule import startup_delay_ms, tick_delay_ms
from craft_apps.polling.tally import Tally
from craft_apps.polling.wakeup import WakeUps

logger = logging.getLogger(__name__)


@dataclass
class PollerParts:
    """What a poller process polls with, made from the settings."""

    config: PollConfig
    timing: LeaseTiming
    host: StateStore  # opened for writing
    github: Source
    shared: SharedStore | None  # None: polling alone
    # The apps that need GitHub's release list (``Poller.needs_history``); none by default.
    needs_history: Callable[[], frozenset[str]] = lambda: frozenset()


def build_poller_parts(
    clock: Clock,
    *,
    make_source: Callable[[Clock], Source],
    lease_timing: LeaseTiming | None = None,
    hostname: str | None = None,
    shared: SharedStore | None = None,
    needs_history: Callable[[], frozenset[str]] | None = None,
) -> PollerParts:
    """The settings' parts, the source made by ``make_source`` (``GitHubClient.from_settings``
    in production) once the state file is open, and ``shared`` used instead of the settings'
    when given. Raises ``StateUnavailable`` when the state file can't be opened for writing."""
    config = PollConfig(
        apps=app_settings.APPS,
        interval_ms=app_settings.POLL_INTERVAL_SECS * 1000,
        max_backoff_ms=app_settings.MAX_BACKOFF_SECS * 1000,
        web_url=app_settings.GITHUB_WEB_URL,
        history_for_every_app=True,
    )
    timing = lease_timing or app_settings.LEASE_TIMING
    host = StateStore(app_settings.STATE_DIR, busy_timeout_s=timing.lock_wait_s)
    host.open_for_writing()
    parts = PollerParts(config, timing, host, make_source(clock), shared or _shared_store(hostname))
    if needs_history is not None:
        parts.needs_history = needs_history
    return parts


def _shared_store(hostname: str | None) -> SharedStore | None:
    if not app_settings.COORDINATION_ENABLED:
        return None
    client = poller_redis_client(app_settings.REDIS_ALIAS)
    if client is None:
        return None
    return SharedStore(
        client,
        hostname=hostname or socket.gethostname(),
        key_prefix=app_settings.REDIS_KEY_PREFIX,
    )


class PollingLoop:
    """Polls while ``lease`` is held: returns when asked to stop, after one round with ``once``,
    or when the lease is lost or another poller's fenced write refused ours (logged). Each tick
    takes the refreshes asked for first and is tallied after."""

    def __init__(
        self,
        poller: Poller,
        wakeups: WakeUps,
        *,
        lease: Lease,
        tally: Tally,
        clock: Clock,
        stop: threading.Event | None = None,
        once: bool = False,
        startup_delay: bool = True,
        before_tick: Callable[[], None] | None = None,
        on_tick: Callable[[TickReport], None] | None = None,
    ) -> None:
        self.poller = poller
        self.wakeups = wakeups
        self.lease = lease
        self.tally = tally
        self.clock = clock
        self.stop = stop or threading.Event()
        self.once = once
        self.startup_delay = startup_delay and not once  # a single round has nothing to spread
        self.before_tick = before_tick  # at the top of every turn, before the lease renewal
        self.on_tick = on_tick  # right after each scheduled tick, before it is tallied
        self.last_report: TickReport | None = None

    def run(self) -> None:
        poller, lease, clock = self.poller, self.lease, self.clock
        poller.load_host_state()
        lease.keep_file_with(poller.held_state)  # a deleted file is made anew from it
        try:
            if poller.warm_start():
                logger.info("Craft app releases: took the fleet's releases from Redis at start-up.")
            if self.startup_delay and not clock.sleep(startup_delay_ms(clock.random()) / 1000):
                return
            while not self.stop.is_set():
                if self.before_tick is not None:
                    self.before_tick()
                if not lease.renew_if_due():
                    logger.error("Craft app releases: lost the lease; standing by.")
                    return
                self.wakeups.look(at_tick=True)
                report = self.last_report = poller.tick()
                if self.on_tick is not None:
                    self.on_tick(report)
                self.tally.after_tick(report, poller, poller.github)
                if poller.fence_lost:
                    logger.error("Craft app releases: stepping down; another poller holds the lease.")
                    return
                if not lease.is_held():  # lost during the round: don't wait a tick to say so
                    logger.error("Craft app releases: lost the lease; standing by.")
                    return
                if self.once or not self.wakeups.wait(tick_delay_ms(clock.random()) / 1000):
                    return
        finally:
            if lease.is_held() and not poller.fence_lost:
                self.wakeups.keep_pending()
            lease.keep_file_with(None)
