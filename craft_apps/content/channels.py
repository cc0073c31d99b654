"""Which channels each app is served on, and the release controls, read for the feed and the poller.

``read_channel_apps`` and ``read_controls`` are the feed's queries. ``HistoryApps`` tells the
poller which apps need their release history (on a channel that serves it, with a control or a
release policy); its read is bounded, and on trouble the poller goes on with the last set, logging a line.
See docs/channels.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from django.db import close_old_connections, router

from craft_apps.content.models import AppChannel, ReleaseControl
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.policies import IMMEDIATE
from craft_apps.controls.rules import Control
from craft_apps.kernel.clock import SystemClock
from craft_apps.kernel.domain import Channel, ChannelApps
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

READ_BOUND_S = 2.0  # what the poller waits for the database, at most, per read
FRESH_S = 1.0  # a set read this recently is answered without a read


def read_channel_apps(using: str | None = None) -> ChannelApps:
    """Which apps each channel chosen per app is on for. One query."""
    rows = _channel_rows(using)
    return ChannelApps(
        {c: frozenset(key for key, names, _ in rows if c.value in names) for c in Channel.chosen_per_app()}
    )


def _channel_rows(using: str | None) -> list[tuple[str, tuple[str, ...], datetime]]:
    """Each app's key, the channels it is served on beyond stable and when its row was written.
    The lists are read in Python: a JSON list can't be searched the same way on every database."""
    db = using or router.db_for_read(AppChannel)
    rows = AppChannel._default_manager.using(db).values_list("app_key", "channels", "updated_at")
    return [
        (key, tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else (), at)
        for key, names, at in rows
    ]


def read_controls(using: str | None = None) -> tuple[Control, ...]:
    """Every release control, then every release policy and its approvals as controls
    (``ReleasePolicy.to_controls``), in a stable order (so two hosts with the same rows agree).
    Two queries."""
    db = using or router.db_for_read(ReleaseControl)
    controls = tuple(row.to_control() for row in ReleaseControl._default_manager.using(db).order_by("id"))
    policies = ReleasePolicy._default_manager.using(db).order_by("id")
    return controls + tuple(control for row in policies for control in row.to_controls())


def read_history_apps(using: str | None = None) -> frozenset[str]:
    """The keys of the apps that need their release history: on a channel that serves it,
    with a control or with a release policy."""
    return frozenset(read_history_needs(using))


def read_history_needs(using: str | None = None) -> dict[str, int]:
    """Each app that needs its release history, with when its newest setting that needs it was
    written (Unix ms, the database's clock): on a channel that serves it, with a control, or
    with a release policy (whose previous release is the one served meanwhile). Three queries."""
    db = using or router.db_for_read(AppChannel)
    history = {c.value for c in Channel.chosen_per_app() if c.serves_history}
    rows = [
        *((key, at) for key, names, at in _channel_rows(db) if history.intersection(names)),
        *ReleaseControl._default_manager.using(db).values_list("app_key", "updated_at"),
        *ReleasePolicy._default_manager.using(db)
        .exclude(policy=IMMEDIATE)
        .values_list("app_key", "updated_at"),
    ]
    needs: dict[str, int] = {}
    for key, updated in rows:
        needs[key] = max(needs.get(key, 0), datetime_to_ms(updated))
    return needs


class HistoryApps:
    """The poller's view of which apps need history: ``apps_needing_history()`` never raises and
    waits at most ``bound_s``."""

    def __init__(
        self,
        bound_s: float = READ_BOUND_S,
        fresh_s: float = FRESH_S,
        monotonic: Callable[[], float] = time.monotonic,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.bound_s = bound_s
        self._now_ms = now_ms or SystemClock().now_ms
        self.fresh_s = fresh_s
        self._monotonic = monotonic
        self._read_at = float("-inf")
        self._lock = threading.Lock()
        self._known: frozenset[str] = frozenset()
        self._since: dict[str, int] = {}
        self._controls: tuple[Control, ...] | None = None  # None: never read
        self._controls_read_ms = 0  # when the last read that answered began (Unix ms)
        self._reading: threading.Thread | None = None
        self._failing = False

    def since(self) -> dict[str, int]:
        """When each app's need was last written, as the last read left it (no read of its
        own): the poller asks the first list of an app once per such instant, and any host's
        request about the app after it answers that for the whole fleet."""
        with self._lock:
            return dict(self._since)

    def controls(self) -> tuple[Control, ...] | None:
        """The release controls as the last read left them (no read of its own); None before
        the first read that answered: the poller then relays the fleet's (``controls.relay``)."""
        with self._lock:
            return self._controls

    def controls_read(self) -> tuple[tuple[Control, ...], int] | None:
        """The controls of the last read that answered and when it began (Unix ms), or None
        before the first: what the poller shares with the fleet."""
        with self._lock:
            return None if self._controls is None else (self._controls, self._controls_read_ms)

    def __call__(self) -> frozenset[str]:
        return self.apps_needing_history()

    def apps_needing_history(self) -> frozenset[str]:
        """The apps on a channel that serves history or with a control, as the last read left them."""
        with self._lock:
            if self._monotonic() - self._read_at < self.fresh_s:
                return self._known
            self._read_at = self._monotonic()  # an attempt, answered or not, waits its turn
            reading = self._reading
            if reading is None or not reading.is_alive():
                reading = self._reading = threading.Thread(
                    target=self._read, name="craft-apps-channels", daemon=True
                )
                reading.start()
        reading.join(self.bound_s)
        if reading.is_alive():
            self._trouble(f"no answer within {self.bound_s:g} s")
        with self._lock:
            return self._known

    def _read(self) -> None:
        began_ms = self._now_ms()
        try:
            since = read_history_needs()
            found = frozenset(since)
            controls = read_controls()
        except Exception as err:  # the poller polls on, with what it knew
            self._trouble(f"{type(err).__name__}: {err}")
            return
        finally:
            close_old_connections()
        with self._lock:
            self._known, self._since, recovered, self._failing = found, since, self._failing, False
            self._controls, self._controls_read_ms = controls, began_ms
        if recovered:
            logger.info("Craft apps channels: the database is readable again")

    def _trouble(self, reason: str) -> None:
        with self._lock:
            first, self._failing = not self._failing, True
            known = len(self._known)
        if first:
            logger.warning(
                "Craft apps channels: the beta settings and release controls can't be read (%s); "
                "polling on with the last %d apps that need history",
                one_line(reason, 300),
                known,
            )
