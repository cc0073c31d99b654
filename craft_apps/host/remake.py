"""Making a deleted state file anew for the lease holder, whole, from what its poller holds.

``recreate(store, name, fence, ...)`` builds the file with the given apps, backoff, histories
and the holder's lease row, and returns True; False, with nothing written, when a file is there
(another process made it: its lease decides). ``Remaker`` holds what to make the file from;
``remake_if_deleted(fence, expires_ms)`` returns None while the file is there or can't be read.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence

from craft_apps.host import app_rows, history_rows, lease_rows, schema
from craft_apps.host.database import StateUnavailable
from craft_apps.host.lease_rows import Fence
from craft_apps.host.lease_table import OutageLog
from craft_apps.host.store import StateSnapshot, StateStore
from craft_apps.kernel.domain import AppState, Backoff, HistoryFetch, Release

logger = logging.getLogger("craft_apps.host.lease")  # the logger these messages always had


def recreate(
    store: StateStore,
    name: str,
    fence: Fence,
    *,
    expires_ms: int,
    apps: Mapping[str, AppState],
    backoff: Backoff,
    history: Mapping[str, tuple[Sequence[Release], HistoryFetch]] | None = None,
) -> bool:
    """Makes a deleted file anew, whole: ``apps``, ``backoff``, each app's ``history``
    (releases and fetch) and the lease row of ``fence`` (expiring at ``expires_ms``), so its
    holder's fence stays valid and what it knew is kept.

    False, with nothing written, when a file is there: another process made it, its lease
    decides, and ``fence`` will be refused there. Raises StateUnavailable.
    """

    def left_out(key: str, err: ValueError) -> None:  # never stored before either
        logger.warning("craft_apps state file %s: left out app %r: %s", store.path, key, err)

    def fill(db: sqlite3.Connection) -> None:
        app_rows.fill(db, apps, backoff, left_out)
        for key, (releases, fetch) in sorted((history or {}).items()):
            try:
                history_rows.put_history(db, key, releases, fetch)
            except ValueError as err:
                left_out(key, err)
        lease_rows.insert(db, name, fence, expires_ms=expires_ms)
        schema.bump_version(db)

    schema.prepare_directory(store.state_dir)
    return store.file.identity() is None and schema.create_whole(store.file, fill)


class Remaker:
    """What the holder of lease ``name`` makes the state file anew from if it is deleted."""

    def __init__(self, store: StateStore, name: str, outage: OutageLog) -> None:
        self.store = store
        self.name = name
        self.outage = outage  # where a file that can't be read or made is logged
        self.contents: Callable[[], StateSnapshot] | None = None  # None: nothing to make it from

    def remake_if_deleted(self, fence: Fence, *, expires_ms: int) -> bool | None:
        """None when the file is there, there is nothing to make it from, or it can't be read or
        made (then logged); else whether it was made anew here (False: another made one first)."""
        if self.contents is None:
            return None
        try:
            if self.store.file_identity() is not None:
                return None
            contents = self.contents()
            made = recreate(
                self.store,
                self.name,
                fence,
                expires_ms=expires_ms,
                apps=contents.apps,
                backoff=contents.backoff,
                history={
                    key: (releases, contents.history_fetches.get(key, HistoryFetch()))
                    for key, releases in contents.history.items()
                },
            )
        except StateUnavailable as err:
            self.outage.note(fence.holder, "could not make the deleted state file anew", err)
            return None  # the renewal meets the same trouble; the deadline decides
        if made:
            logger.warning(
                "Craft app releases: the state file %s was deleted; made it anew from memory "
                "(%d apps, their ETags and fetch times, the backoff and this lease, fence %s).",
                self.store.path,
                len(contents.apps),
                fence,
            )
        return made
