"""The claims on each app's next GitHub request, so one host of the fleet asks at a time.

``Claims.claim(app, now_ms)`` takes an app key and the time and returns whether this host may
ask: a claim is the ``claimed_ms``/``by`` fields of the app's hash (``entry``), written by a
guarded write unless another host claimed less than a window ago. ``last_ms(app)`` returns the
newest claim this host knows of.
"""

from __future__ import annotations

from craft_apps.fleet import entry as shared_entry
from craft_apps.fleet.guarded_writes import GuardedWrite, GuardedWriter

CLAIM_WINDOW_MS = 60_000  # longer than one GitHub request can take (10 s connect + 30 s answer)


class Claims:
    """The newest claim of each app this host knows of, and its own claims."""

    def __init__(self, writes: GuardedWriter, *, hostname: str, key_prefix: str) -> None:
        self._writes = writes
        self._hostname = hostname
        self._prefix = key_prefix
        self._newest: dict[str, int] = {}  # hash key -> newest claim seen (Unix ms)

    def claim(self, app: str, now_ms: int, window_ms: int = CLAIM_WINDOW_MS) -> bool:
        """Claims the next request for the app; False when another host claimed it less than
        ``window_ms`` ago. Never released: it just lapses, so a crashed host blocks nobody. A
        refresh asked for ahead of schedule claims with a shorter window (``polling.schedule``)."""
        key = shared_entry.app_key(self._prefix, app)
        claimed = self._writes.apply(
            GuardedWrite(
                key=key,
                time_field=shared_entry.FIELD_CLAIMED_MS,
                time_ms=now_ms,
                fields=shared_entry.encode_claim(now_ms, self._hostname),
                min_gap_ms=window_ms,
            )
        )
        if claimed:
            self.saw(key, now_ms)
        return claimed

    def last_ms(self, app: str) -> int | None:
        """The newest claim of the app this host knows of: its own, or one read with the app's
        small fields (read again whenever a fetch or a failure moves them)."""
        return self._newest.get(shared_entry.app_key(self._prefix, app))

    def saw(self, key: str, claimed_ms: int | None) -> None:
        """Notes a claim read in hash ``key``, when it is the newest known."""
        if claimed_ms is not None and claimed_ms > self._newest.get(key, 0):
            self._newest[key] = claimed_ms
