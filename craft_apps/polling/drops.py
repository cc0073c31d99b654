"""What the poller drops or is told about an app, logged once per app and release, not per tick.

``DropLog.observed(app, outcome, kept, now_ms)`` compares what an answer implies for the app
(assets dropped by reason, a renamed repository, a 404 for a repository that had a release, a
failure for want of credentials) with the app's rows in the host's state file
(``craft_apps.host.drops``): anything new is logged once as a warning and the rows are replaced.
``DropLog.load()`` reads the rows back at start, so a restarted poller doesn't repeat itself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from craft_apps.conf import describe
from craft_apps.host.drops import AUTH, GONE, MOVED, Drop, read_drops, replace_app
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.kernel.domain import AppSpec, Release
from craft_apps.kernel.source import MAX_ASSETS, Failed, Fetched, FetchOutcome, NotModified

logger = logging.getLogger(__name__)


class DropLog:
    """Each app's rows of what was dropped or told, as the host's state file keeps them.

    The rows are where ``craft_apps_status``, the metrics and the health rule ``gone`` read them;
    a row that can't be written is kept and written at the next answer.
    """

    def __init__(self, host: StateStore, web_url: str) -> None:
        self._host = host
        self._web_url = web_url
        self._rows: dict[str, tuple[Drop, ...]] = {}
        self._unwritten: set[str] = set()
        # What the release list (the history) dropped or refused, said once per release and
        # reason while the process lives (the latest's rows above outlive a restart).
        self._listed_said: set[tuple[str, str]] = set()

    def load(self) -> None:
        """Takes back what was said before a restart; an unreadable file means starting afresh."""
        try:
            rows = read_drops(self._host)
        except StateUnavailable:
            return
        by_app: dict[str, list[Drop]] = {}
        for row in rows:
            by_app.setdefault(row.app, []).append(row)
        self._rows = {app: tuple(found) for app, found in by_app.items()}

    def rows(self) -> Mapping[str, tuple[Drop, ...]]:
        return dict(self._rows)

    def moved_to(self, key: str) -> str | None:
        """The repository GitHub last redirected the app's repository to, if it did."""
        return next((row.detail for row in self._rows.get(key, ()) if row.kind == MOVED), None)

    def observed(self, app: AppSpec, outcome: FetchOutcome, kept: Release | None, now_ms: int) -> None:
        """Records what ``outcome`` says about ``app``, ``kept`` being the release now held."""
        previous = self._rows.get(app.key, ())
        rows = self._rows_after(app, outcome, kept, previous, now_ms)
        if rows is not None and rows != previous:
            for row in rows:  # an AUTH row's failure is logged by the poller and the client
                if row.kind != AUTH and not any(row.same_fact(old) for old in previous):
                    logger.warning("%s", self._warning(app, row, kept))
            for old in previous:
                if old.kind in (GONE, MOVED) and not any(old.kind == row.kind for row in rows):
                    logger.info("%s", _resolved(app, old))
            self._rows[app.key] = rows
            self._unwritten.add(app.key)
        self.flush()

    def observed_listed(
        self, app: AppSpec, release: Release, dropped: tuple[tuple[str, int], ...], now_ms: int
    ) -> None:
        """Says once what the release list's copy of ``release`` dropped, unless the latest's
        rows already say it."""
        for reason, count in dropped:
            row = Drop(app.key, reason, release.tag, count, "", now_ms)
            if any(row.same_fact(old) for old in self._rows.get(app.key, ())):
                continue
            said = (app.key, f"{release.tag}\0{reason}\0{count}")
            if said not in self._listed_said:
                self._listed_said.add(said)
                logger.warning("%s (in the release list)", self._warning(app, row, release))

    def refused_listed(self, app: AppSpec, line: str) -> None:
        """Says once that the release list held a release the rules refused whole."""
        said = (app.key, line)
        if said not in self._listed_said:
            self._listed_said.add(said)
            logger.warning(
                "Craft app releases: %s (%s): the release list's %s; left out of the history.",
                app.key,
                app.repo,
                line,
            )

    def flush(self) -> None:
        for key in sorted(self._unwritten):
            try:
                replace_app(self._host, key, self._rows.get(key, ()))
            except StateUnavailable:
                return  # the poller logs the state file's trouble; tried again at the next answer
            self._unwritten.discard(key)

    def _rows_after(
        self,
        app: AppSpec,
        outcome: FetchOutcome,
        kept: Release | None,
        previous: tuple[Drop, ...],
        now_ms: int,
    ) -> tuple[Drop, ...] | None:
        """The app's rows after ``outcome``; None when it says nothing new (a rate limit). A
        failure replaces only the AUTH row: there when it was for want of credentials."""
        if isinstance(outcome, NotModified):
            return tuple(row for row in previous if row.kind not in (GONE, AUTH))  # the release is there
        if isinstance(outcome, Failed):
            rows = [row for row in previous if row.kind != AUTH]
            if outcome.setting is not None:
                rows.append(Drop(app.key, AUTH, kept.tag if kept else "", 1, outcome.setting, now_ms))
        elif not isinstance(outcome, Fetched):
            return None
        elif outcome.release is None:
            if kept is None:
                return ()  # a repository without a release: nothing dropped
            # GitHub lost a repository that had a release: what was said about it still holds.
            rows = [row for row in previous if row.release == kept.tag and row.kind not in (GONE, AUTH)]
            rows.append(Drop(app.key, GONE, kept.tag, 1, "", now_ms))
        else:
            tag = outcome.release.tag
            rows = [Drop(app.key, reason, tag, count, "", now_ms) for reason, count in outcome.dropped]
            if outcome.moved_to is not None:
                rows.append(Drop(app.key, MOVED, tag, 1, outcome.moved_to, now_ms))
        # A fact already recorded keeps the time it was first seen.
        return tuple(
            next((old for old in previous if old.same_fact(row) or _same_gone(old, row)), row) for row in rows
        )

    def _warning(self, app: AppSpec, row: Drop, kept: Release | None) -> str:
        where = f"Craft app releases: {app.key} ({app.repo})"
        if row.kind == MOVED:
            return (
                f"{where}: GitHub redirects to {row.detail}, the repository's new name; following "
                f"it. Update {describe('APPS')} to {app.key}={app.name}={row.detail}."
            )
        if row.kind == GONE:
            return (
                f"{where}: GitHub answers 404 (no such repository, or no release) for a repository "
                f"that had release {row.release}; still serving {row.release}, and the health rule "
                "'gone' reports it until GitHub answers a release again or the app leaves "
                f"{describe('APPS')}."
            )
        plural = "asset" if row.count == 1 else "assets"
        return f"{where}: release {row.release}: {row.count} {plural} not served: {self._why(app, row)}."

    def _why(self, app: AppSpec, row: Drop) -> str:
        repo = self.moved_to(app.key) or app.repo
        reasons = {
            "link_host": (
                f"their links are on another host than {describe('GITHUB_WEB_URL')} ({self._web_url}); "
                f"if {describe('GITHUB_API_URL')} points at another GitHub, set "
                f"{describe('GITHUB_WEB_URL')} to its web address"
            ),
            "link_elsewhere": f"their links are not under {self._web_url}/{repo}/releases/download/",
            "bad_name": "their file names are empty, hidden, over 200 characters or hold characters "
            "a file system refuses",
            "bad_size": "GitHub's answer gives them no usable size",
            "not_an_asset": "entries of the answer's asset list are not assets",
            "over_limit": f"the answer lists more than {MAX_ASSETS} (GitHub's own limit); the first "
            f"{MAX_ASSETS} are served",
        }
        return reasons.get(row.kind, row.kind)


def _same_gone(old: Drop, new: Drop) -> bool:
    return old.kind == new.kind == GONE and old.release == new.release


def _resolved(app: AppSpec, old: Drop) -> str:
    if old.kind == GONE:
        return f"Craft app releases: {app.key} ({app.repo}): GitHub answers a release again."
    return f"Craft app releases: {app.key} ({app.repo}): GitHub no longer redirects to {old.detail}."
