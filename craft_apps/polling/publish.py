"""Writes what the poller changed to the host's state file, which the endpoint serves.

``Publisher(host, fence, state)``: ``publish()`` writes the histories, the apps and the backoff
marked in ``PollState`` as changed, and unmarks what was written. What couldn't be written stays
marked and is written at the next call; a write refused because another poller took the lease
over sets ``state.fence_lost``.
"""

from __future__ import annotations

import logging

from craft_apps.host.store import Fence, FenceRejected, HistoryFetch, StateStore, StateUnavailable
from craft_apps.polling.state import POLLER_LOG, PollState

logger = logging.getLogger(POLLER_LOG)


class Publisher:
    def __init__(self, host: StateStore, fence: Fence, state: PollState) -> None:
        self.host = host
        self.fence = fence
        self.state = state
        self._write_trouble = False  # logged once until a write succeeds again

    def publish(self) -> None:
        """Writes what changed to the host's state file; what couldn't be written is retried on
        the next call. A refused fence means another poller took over: stop writing."""
        state = self.state
        if state.fence_lost:
            return
        try:
            # The histories before the apps: a reader between the two writes never sees an app
            # fetched without the releases its controls fall back to (a new host's first answer).
            for key in sorted(state.unwritten_histories):
                fetch = state.history_fetch.get(key, HistoryFetch())
                self.host.put_history(
                    key,
                    state.history.get(key, ()),
                    fence=self.fence,
                    etag=fetch.etag,
                    fetched_ms=fetch.fetched_ms,
                    repo=state.repos[key],
                )
                state.unwritten_histories.discard(key)
            for key in sorted(state.unwritten):
                self.host.put_app(key, state.memory[key], fence=self.fence)
                state.unwritten.discard(key)
            if state.backoff_unwritten:
                self.host.put_backoff(state.backoff, fence=self.fence)
                state.backoff_unwritten = False
        except FenceRejected as err:
            state.fence_lost = True
            logger.error("Craft app releases: another poller took over this state directory: %s", err)
        except StateUnavailable as err:
            if not self._write_trouble:
                self._write_trouble = True
                logger.warning(
                    "Craft app releases: couldn't write the host's state file (kept in memory, "
                    "written again at every change until it works): %s",
                    err,
                )
        else:
            if self._write_trouble:
                self._write_trouble = False
                logger.info("Craft app releases: the host's state file is written again: %s", self.host.path)
