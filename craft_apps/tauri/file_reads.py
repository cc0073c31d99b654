"""Each release's Tauri updater files, read once per release and kept with it.

``UpdaterKeeper.fill(app, release, now_ms)`` reads a release's ``latest.json`` or ``.sig`` files
through the source and returns the release with them, or None when nothing was read;
``carried(release)`` gives a release back the files already read for it. ``UpdaterTally``
counts the outcomes for the metrics and ``craft_apps_status``. See docs/tauri.md.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace

from craft_apps.kernel.domain import Release, ReleaseAsset, UpdaterFile
from craft_apps.kernel.source import UpdaterFailed, UpdaterOutcome, UpdaterSource
from craft_apps.kernel.text import one_line

# The name it had in polling/, which a site's LOGGING may route.
logger = logging.getLogger("craft_apps.polling.updater")

RELEASES_PER_ROUND = 4  # history releases read per app and round, at most: a first list is 20
READERS = 8  # apps whose updater files are read at once, each in a thread of its own
MAX_REMEMBERED = 1000  # releases whose updater files are kept in memory; the oldest go first
MAX_REFUSED_CHARS = 500  # of the one line that says what a release's files had refused

_Identity = tuple[str, tuple[ReleaseAsset, ...]]


def _identity(release: Release) -> _Identity:
    return release.tag, release.assets


@dataclass
class UpdaterTally:
    """What reading updater files did since the counters last took it."""

    fetched: int = 0  # releases read, nothing refused
    refused: int = 0  # releases read with a file or platform refused
    failed: int = 0  # reads that failed (a download), tried again later
    downloads: int = 0  # requests made to download small files
    last_failure: str | None = None  # "<app> <tag>: <reason>", one line
    last_failure_ms: int | None = None

    def is_empty(self) -> bool:
        return self == UpdaterTally()


@dataclass
class _Tries:
    failures: int
    not_before_ms: int


@dataclass
class UpdaterKeeper:
    """Reads and keeps releases' updater files for one poller.

    A release is the same while its tag and assets are (a file replaced on GitHub changes its
    size, digest or link, and is read again). The files travel with the release to the state
    file and Redis, so another or a restarted host doesn't read them again. A failed read is
    tried again no sooner than a backoff doubling from the interval up to the maximum; its
    first failure is one warning. Downloads run outside the lock: each app reads in a thread.
    """

    source: UpdaterSource | None
    interval_ms: int
    max_backoff_ms: int
    tally: UpdaterTally = field(default_factory=UpdaterTally)
    _known: dict[_Identity, tuple[UpdaterFile, ...]] = field(default_factory=dict)
    _tries: dict[_Identity, _Tries] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def carried(self, release: Release) -> Release:
        """``release`` with the updater files read for it, when it comes without them; one
        that comes with them teaches them (from the state file or the fleet)."""
        identity = _identity(release)
        with self._lock:
            if release.updater:
                self._keep(identity, release.updater)
                return release
            known = self._known.get(identity)
        return release if not known else replace(release, updater=known)

    def needs(self, release: Release) -> bool:
        """Whether ``release`` has updater files not read yet."""
        with self._lock:
            known = _identity(release) in self._known
        return (
            self.source is not None
            and not release.updater
            and not known
            and self.source.updater_downloads(release) > 0
        )

    def due(self, release: Release, now_ms: int) -> bool:
        """Whether ``release``'s updater files are to be read now: not read yet, and no failed
        read's backoff running."""
        with self._lock:
            tries = self._tries.get(_identity(release))
        return self.needs(release) and (tries is None or tries.not_before_ms <= now_ms)

    def fill(self, app: str, release: Release, now_ms: int) -> Release | None:
        """``release`` with its updater files when they were read now; None when nothing was
        (none needed, a failure's backoff not over, or the read failed)."""
        identity = _identity(release)
        with self._lock:
            tries = self._tries.get(identity)
        if self.source is None or not self.due(release, now_ms):
            return None
        outcome = self.source.fetch_updater(release)  # without the lock: other apps read meanwhile
        with self._lock:
            return self._took(app, release, identity, outcome, tries is not None, now_ms)

    def _took(
        self,
        app: str,
        release: Release,
        identity: _Identity,
        outcome: UpdaterOutcome,
        retried: bool,
        now_ms: int,
    ) -> Release | None:
        """Records a read's outcome: the release with its files, or None when it failed."""
        self.tally.downloads += outcome.downloads
        if isinstance(outcome, UpdaterFailed):
            self._failed(app, release, identity, outcome.reason, now_ms)
            return None
        self._tries.pop(identity, None)
        self._keep(identity, outcome.files)
        if outcome.refused:
            logger.warning(
                "Craft app releases: %s %s: %d of its updater files or platforms refused: %s",
                app,
                release.tag,
                len(outcome.refused),
                one_line("; ".join(outcome.refused), MAX_REFUSED_CHARS),
            )
            self.tally.refused += 1
        else:
            self.tally.fetched += 1
        if retried:
            logger.info("Craft app releases: the updater files of %s %s are read.", app, release.tag)
        return replace(release, updater=outcome.files)

    def take_tally(self) -> UpdaterTally:
        with self._lock:
            taken, self.tally = self.tally, UpdaterTally()
        return taken

    def _failed(self, app: str, release: Release, identity: _Identity, reason: str, now_ms: int) -> None:
        tries = self._tries.get(identity)
        failures = 1 if tries is None else tries.failures + 1
        wait_ms = min(self.interval_ms * 2 ** min(failures - 1, 32), self.max_backoff_ms)
        self._tries[identity] = _Tries(failures, now_ms + wait_ms)
        self.tally.failed += 1
        self.tally.last_failure = one_line(f"{app} {release.tag}: {reason}", 300)
        self.tally.last_failure_ms = now_ms
        level = logging.WARNING if failures == 1 else logging.DEBUG
        logger.log(
            level,
            "Craft app releases: couldn't read the updater files of %s %s (served without them, "
            "tried again later): %s",
            app,
            release.tag,
            reason,
        )
        while len(self._tries) > MAX_REMEMBERED:
            del self._tries[next(iter(self._tries))]

    def _keep(self, identity: _Identity, files: tuple[UpdaterFile, ...]) -> None:
        self._known.pop(identity, None)
        self._known[identity] = files  # the newest last
        while len(self._known) > MAX_REMEMBERED:
            del self._known[next(iter(self._known))]
