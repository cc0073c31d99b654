"""Which apps have their beta channel on (``models.AppChannel``) and which release controls are in
place (``models.ReleaseControl``), for the web processes and the poller.

``read_beta_apps`` and ``read_controls`` are the queries (the feed runs them with the notices,
in its background look). ``HistoryApps`` is what the poller asks before each round: which apps
need their release history (those on beta, and those with a control, whose fallback and rollout
need the releases before the latest). The read runs in a thread of its own and the poller waits
for it at most ``READ_BOUND_S``; when the database fails or is slower than that, the poller
goes on with the last set it read (none before the first) and one line is logged when the
trouble starts and one when it ends. A read still running is never doubled: the next ask gets
the last set. The poller asks for each app it fetches; a set read less than ``FRESH_S`` ago is
answered as it is, so the database is read at most about once a second, as the web processes'
feed reads it. The same read takes the release controls (``HistoryApps.controls``), which the
poller shares with the fleet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections, router

from craft_apps.controls import Control
from craft_apps.instants import datetime_to_ms
from craft_apps.notices.models import AppChannel, ReleaseControl
from craft_apps.text import one_line

logger = logging.getLogger(__name__)

READ_BOUND_S = 2.0  # what the poller waits for the database, at most, per read
FRESH_S = 1.0  # a set read this recently is answered without a read


def read_beta_apps(using: str | None = None) -> frozenset[str]:
    """The keys of the apps whose beta channel is on. One query."""
    db = using or router.db_for_read(AppChannel)
    return frozenset(
        AppChannel._default_manager.using(db).filter(beta=True).values_list("app_key", flat=True)
    )


def read_controls(using: str | None = None) -> tuple[Control, ...]:
    """Every release control, in a stable order (so two hosts with the same rows agree). One query."""
    db = using or router.db_for_read(ReleaseControl)
    return tuple(row.to_control() for row in ReleaseControl._default_manager.using(db).order_by("id"))


def read_history_apps(using: str | None = None) -> frozenset[str]:
    """The keys of the apps that need their release history: on beta, or with a control. Two queries."""
    return frozenset(read_history_needs(using))


def read_history_needs(using: str | None = None) -> dict[str, int]:
    """Each app that needs its release history, with when its newest setting that needs it was
    written (Unix ms, the database's clock): on beta, or with a control. Two queries."""
    db = using or router.db_for_read(AppChannel)
    rows = [
        *AppChannel._default_manager.using(db).filter(beta=True).values_list("app_key", "updated_at"),
        *ReleaseControl._default_manager.using(db).values_list("app_key", "updated_at"),
    ]
    needs: dict[str, int] = {}
    for key, updated in rows:
        needs[key] = max(needs.get(key, 0), datetime_to_ms(updated))
    return needs


class HistoryApps:
    """The poller's view of which apps need history: ``beta_apps()`` never raises and waits at
    most ``bound_s``."""

    def __init__(
        self,
        bound_s: float = READ_BOUND_S,
        fresh_s: float = FRESH_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bound_s = bound_s
        self.fresh_s = fresh_s
        self._monotonic = monotonic
        self._read_at = float("-inf")
        self._lock = threading.Lock()
        self._known: frozenset[str] = frozenset()
        self._since: dict[str, int] = {}
        self._controls: tuple[Control, ...] | None = None  # None: never read
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
        the first read that answered: the poller then relays the fleet's (``polling.controls_relay``)."""
        with self._lock:
            return self._controls

    def __call__(self) -> frozenset[str]:
        return self.beta_apps()

    def beta_apps(self) -> frozenset[str]:
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
            self._controls = controls
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
