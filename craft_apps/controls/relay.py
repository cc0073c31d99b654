"""The release controls between the site's database, the fleet's Redis and a host that can't read
the database. Every poller shares its own reads of the database in Redis (``fleet.controls``: the
later read wins) when they change, once a day (``RENEW_MS``, well inside the key's 7-day TTL) and
whenever the key is missing. A poller that has never read the database, on a host without a kept
file, writes the fleet's into that file before it publishes the releases they apply to.
See docs/fleet.md ("Release controls").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from craft_apps.controls.kept import KeptControls, decode, encode
from craft_apps.controls.rules import Control
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.instants import format_ms

logger = logging.getLogger("craft_apps.polling.controls_relay")  # the name operators filter on


RENEW_MS = 24 * 3600 * 1000  # a day: six renewals may fail before the 7-day TTL ends

Read = Callable[[], tuple[tuple[Control, ...], int] | None]
"""The controls a poller's last read of the database found and when it began; None: never read."""


class ControlsRelay:
    """One host's relay: ``relay`` before each publish of the fleet's releases. Never raises
    but ``RedisTrouble``."""

    def __init__(self, state_dir: Path) -> None:
        self.kept = KeptControls(state_dir)
        self._shared: tuple[Control, ...] | None = None  # what this process shared last
        self._shared_at_ms = 0  # when, on the poller's clock

    def relay(self, read: Read, shared: SharedStore | None, now_ms: int) -> None:
        """Shares what ``read()`` found when it is due, or else, when this poller never read the
        database and there is no kept file here, keeps the fleet's."""
        if shared is None:
            return
        found = read()
        if found is not None:
            self._share(*found, shared, now_ms)
            return
        if self.kept.path.exists():
            return  # the web processes' own, read from the database: at least as good
        fleets = shared.controls.read(decode)  # a key that isn't controls: the store's one line
        if fleets is not None:
            self._keep(*fleets)

    def _share(self, controls: tuple[Control, ...], read_ms: int, shared: SharedStore, now_ms: int) -> None:
        due = controls != self._shared or now_ms - self._shared_at_ms >= RENEW_MS
        if not due and shared.controls.present():
            return
        shared.controls.write(encode(controls), read_ms)  # False: a later read is there
        self._shared, self._shared_at_ms = controls, now_ms

    def _keep(self, controls: tuple[Control, ...], read_ms: int) -> None:
        self.kept.save(controls)
        if self.kept.path.exists():
            logger.warning(
                "Craft apps release controls: the site's database hasn't been read yet; keeping "
                "the %d controls the fleet shared (read at %s) for this host's web processes",
                len(controls),
                format_ms(read_ms),
            )
