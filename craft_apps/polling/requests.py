"""What one poller knows of the refreshes asked for ahead of schedule, app by app.

``RefreshRequests.take(app, requested_ms, now_ms)`` notes a refresh request (from Redis or the
host's state file) and returns whether it is new; ``due(app, ...)`` returns whether a pending
refresh makes the app due now; ``started(app, now_ms)`` and ``claimed_elsewhere(app, now_ms)``
record a request made by this host or claimed by another. ``awaiting(now_ms)`` says whether a
recent refresh still waits for its answer.
"""

from __future__ import annotations

from craft_apps.kernel.domain import Backoff
from craft_apps.polling.schedule import REFRESH_GAP_MS, requested_due

# How long a pending refresh keeps the poller ticking every second; after that it is looked at
# by the ordinary ticks (the claim window: longer than any request can take).
PATIENCE_MS = 60_000


class RefreshRequests:
    """The refreshes one poller has taken, pending until their answer is here.

    A mark no newer than one already taken is old news. A refresh is pending until this host
    started a request about the app at or after it was asked for, or another host's answer to
    such a request is here (a fetch, a 304 or a failure no older than that host's claim): the
    claim alone isn't enough, so a host that lost the claim checks every second and serves the
    winner's answer once it lands. While another host's claim awaits its answer (for
    ``REFRESH_GAP_MS``), this one doesn't ask. Another host's times ahead of this clock count as
    now, so a host whose clock runs ahead can't keep a refresh pending.
    """

    def __init__(self) -> None:
        self._taken: dict[str, int] = {}  # app -> the newest mark taken, as written
        self._pending: dict[str, int] = {}  # app -> when the refresh was asked for (our clock at most)
        self._since: dict[str, int] = {}  # app -> when the pending refresh was taken
        self._asked: dict[str, int] = {}  # app -> when this host last started a request
        self._held_until: dict[str, int] = {}  # app -> another host claimed it: awaiting its answer

    def take(self, app: str, requested_ms: int, now_ms: int) -> bool:
        """Notes a mark; True when it is news."""
        if requested_ms <= self._taken.get(app, 0):
            return False
        self._taken[app] = requested_ms
        self._pending[app] = max(self._pending.get(app, 0), min(requested_ms, now_ms))
        self._since[app] = now_ms
        return True

    def due(
        self,
        app: str,
        last_claim_ms: int | None,
        backoff: Backoff,
        now_ms: int,
        last_answer_ms: int | None = None,
    ) -> bool:
        """Whether a pending refresh makes ``app`` due now (``last_claim_ms``: the newest claim
        of it the fleet's store knows of, None alone; ``last_answer_ms``: the app's last fetch or
        failure, by any host, as this host holds it); forgets one that was answered."""
        requested = self._pending.get(app)
        if requested is None:
            return False
        asked = self._asked.get(app)
        if asked is not None and asked >= requested:
            self._answered(app)  # this host's own request: its answer is taken as it comes
            return False
        last_asked = asked
        if last_claim_ms is not None and last_claim_ms >= requested:
            if last_answer_ms is not None and last_answer_ms >= last_claim_ms:
                self._answered(app)  # another host asked, and its answer is here
                return False
            self.claimed_elsewhere(app, now_ms, renew=False)
        elif last_claim_ms is not None:
            last_asked = last_claim_ms if asked is None else max(asked, last_claim_ms)
        if self._held_until.get(app, 0) > now_ms:
            return False
        return requested_due(requested, last_asked, backoff, now_ms, last_answer_ms)

    def started(self, app: str, now_ms: int) -> None:
        """This host is asking GitHub about ``app`` now."""
        self._asked[app] = now_ms
        if self._pending.get(app, now_ms + 1) <= now_ms:
            self._answered(app)

    def claimed_elsewhere(self, app: str, now_ms: int, *, renew: bool = True) -> None:
        """Another host holds the claim: wait for its answer, and ask only if none comes within
        ``REFRESH_GAP_MS`` (from now; ``renew=False`` keeps a wait already under way)."""
        if renew or app not in self._held_until:
            self._held_until[app] = now_ms + REFRESH_GAP_MS

    def awaiting(self, now_ms: int) -> bool:
        """Whether a refresh taken less than ``PATIENCE_MS`` ago is still unanswered."""
        return any(0 <= now_ms - self._since[app] < PATIENCE_MS for app in self._pending)

    def pending(self) -> dict[str, int]:
        return dict(self._pending)

    def _answered(self, app: str) -> None:
        self._pending.pop(app, None)
        self._since.pop(app, None)
        self._held_until.pop(app, None)
