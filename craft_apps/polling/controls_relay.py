"""The release controls between the site's database, the fleet's Redis and the web processes of
a host that can't read the database.

Each web process applies the controls it reads from the site's database, and keeps them in the
state directory for the next one (``notices.kept_controls``). A host started while the database
can't be read has no such file. So every poller shares the controls its own reads of the
database found (``HistoryApps.controls``) in Redis, whenever they differ from what it shared
last (``fleet.controls``: the later read wins), and a poller that has never read them, on a host
without a kept file, writes the fleet's into that file before it publishes the releases they
apply to: the web processes take a file that changed at their next look at the state file,
which comes after it. ``relay`` does one step of that and never raises but ``RedisTrouble``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from craft_apps.controls import Control
from craft_apps.fleet.store import SharedStore
from craft_apps.instants import format_ms
from craft_apps.notices.kept_controls import KeptControls, decode, encode

logger = logging.getLogger(__name__)


class ControlsRelay:
    """One host's relay: ``relay`` before each publish of the fleet's releases."""

    def __init__(self, state_dir: Path) -> None:
        self.kept = KeptControls(state_dir)
        self._shared: tuple[Control, ...] | None = None  # what this process shared last

    def relay(
        self, read: Callable[[], tuple[Control, ...] | None], shared: SharedStore | None, now_ms: int
    ) -> None:
        """Shares ``read()`` (the controls this poller's last read of the database found; None:
        never read) when it changed, or else, with no kept file here, keeps the fleet's."""
        if shared is None:
            return
        controls = read()
        if controls is not None:
            if controls != self._shared:
                shared.write_controls(encode(controls), now_ms)  # False: a later read is there
                self._shared = controls
            return
        if self.kept.path.exists():
            return  # the web processes' own, read from the database: at least as good
        found = shared.read_controls(decode)  # a key that isn't controls: the store's one line
        if found is None:
            return
        fleets, read_ms = found
        self.kept.save(fleets)
        if self.kept.path.exists():
            logger.warning(
                "Craft apps release controls: the site's database hasn't been read yet; keeping "
                "the %d controls the fleet shared (read at %s) for this host's web processes",
                len(fleets),
                format_ms(read_ms),
            )
