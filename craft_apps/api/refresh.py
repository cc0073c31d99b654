"""Asking for a refresh ahead of schedule: apps marked due in Redis (so every poller of the fleet
hears of it within a second) and on this host's state file (so this host's poller does, even
when Redis can't be written), a webhook delivery taken once.

Shared by the webhook view and ``manage.py craft_apps_refresh``. Only marks are written here:
whether and when GitHub is asked is the pollers' rule (``polling.schedule.requested_due``).
Never raises: what couldn't be written is in the outcome, one line each, for the caller to log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from craft_apps.conf import app_settings
from craft_apps.fleet.connection import poller_redis_client
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.errors import RedisTrouble
from craft_apps.host.due import HostDueMarks
from craft_apps.host.store import StateUnavailable

# Webhook deliveries remembered as taken (for a day at most), on each host's state file and in
# the fleet's Redis (one sorted set): the bound on what a flood of deliveries can store. A
# delivery sent again after more than this many others is taken again, and can then cost at
# most one more request per app per ``polling.schedule.MIN_REQUEST_GAP_MS``, like any refresh.
DELIVERIES_KEPT = 1000


@dataclass
class RefreshOutcome:
    duplicate: bool = False  # the delivery was taken before: nothing more was done
    shared: bool = False  # Redis has the marks: the whole fleet hears of them
    on_host: bool = False  # this host's state file has them
    problems: list[str] = field(default_factory=list)  # what couldn't be written, one line each
    redis_failed: bool = False

    def note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def redis_trouble(self, err: RedisTrouble) -> None:
        self.redis_failed = True
        self.note(f"Redis: {err}")

    @property
    def marked(self) -> bool:
        return self.shared or self.on_host

    def where(self) -> str:
        places = [
            name for name, done in (("Redis", self.shared), ("this host's state file", self.on_host)) if done
        ]
        return " and ".join(places) or "nowhere"


def request_refresh(
    app_keys: Sequence[str],
    *,
    now_ms: int,
    host: HostDueMarks | None,
    fleet: SharedDueMarks | None,
    delivery: str | None = None,
) -> RefreshOutcome:
    """Marks ``app_keys`` due as of ``now_ms``; with ``delivery``, only the first time that
    delivery is seen (on this host, or by the fleet) within a day, among the last
    ``DELIVERIES_KEPT``."""
    outcome = RefreshOutcome()
    if delivery is not None:
        outcome.duplicate = _taken_before(delivery, now_ms, host, fleet, outcome)
        if outcome.duplicate:
            return outcome
    keys = list(app_keys)
    if fleet is not None and not outcome.redis_failed:  # a silent Redis would cost another timeout
        try:
            fleet.mark(keys, now_ms)
            outcome.shared = True
        except RedisTrouble as err:
            outcome.redis_trouble(err)
    if host is not None:
        try:
            host.mark(keys, now_ms, shared=outcome.shared)
            outcome.on_host = True
        except StateUnavailable as err:
            outcome.note(str(err))
    return outcome


def _taken_before(
    delivery: str,
    now_ms: int,
    host: HostDueMarks | None,
    fleet: SharedDueMarks | None,
    outcome: RefreshOutcome,
) -> bool:
    """Records the delivery; True when this host or the fleet took it less than a day ago."""
    if host is not None:
        try:
            if not host.take_delivery(delivery, now_ms, keep=DELIVERIES_KEPT):
                return True
        except StateUnavailable as err:
            outcome.note(str(err))
    if fleet is not None:
        try:
            return not fleet.take_delivery(delivery, now_ms, keep=DELIVERIES_KEPT)
        except RedisTrouble as err:
            outcome.redis_trouble(err)
    return False


def refresh_stores() -> tuple[HostDueMarks, SharedDueMarks | None]:
    """This host's state file and, with coordination and its cache alias, the fleet's Redis."""
    host = HostDueMarks(app_settings.STATE_DIR)
    if not app_settings.COORDINATION_ENABLED:
        return host, None
    client = poller_redis_client(app_settings.REDIS_ALIAS)
    if client is None:
        return host, None
    return host, SharedDueMarks(client, key_prefix=app_settings.REDIS_KEY_PREFIX)
