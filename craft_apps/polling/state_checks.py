"""Checks a state read back from the host's state file or the fleet before it is served.

``StateChecks(state, config, rules, updater_files, drops)``: ``own`` returns a state as the
app's, dropping a fetch of another repository (logged once per repository); ``checked``
returns it with its release judged again by the source's rules of today and given the updater
files already read for it. A state that changed is marked to be written back.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from craft_apps.kernel.domain import AppState
from craft_apps.kernel.source import ReleaseRules
from craft_apps.polling.drops import DropLog
from craft_apps.polling.state import POLLER_LOG, PollConfig, PollState
from craft_apps.tauri.file_reads import UpdaterKeeper

logger = logging.getLogger(POLLER_LOG)


class StateChecks:
    """Checks a state read back (repository, today's rules, updater files) before it is served."""

    def __init__(
        self,
        state: PollState,
        config: PollConfig,
        rules: ReleaseRules,
        updater_files: UpdaterKeeper,
        drops: DropLog,
    ) -> None:
        self.state = state
        self.web_url = config.web_url
        self.rules = rules
        self.updater_files = updater_files
        self.drops = drops
        self._foreign_reported: dict[str, str | None] = {}  # app key -> the other repository logged

    def own(self, key: str, state: AppState, where: str) -> AppState:
        """``state`` as the app's (``AppState.as_state_of``): a fetch of another repository, or
        of an unrecorded one whose release doesn't show it is the app's, is dropped, so the app
        is asked about at once and without that fetch's ETag. Logged once per other repository."""
        repo = self.state.repos[key]
        own = state.as_state_of(repo, self.web_url)
        if own == AppState(repo=repo) and state.has_fetch():
            self.report_foreign(key, state.repo, where)
        return own

    def report_foreign(self, key: str, other: str | None, where: str) -> None:
        if key in self._foreign_reported and self._foreign_reported[key] == other:
            return
        self._foreign_reported[key] = other
        repo = self.state.repos[key]
        if other is None:  # written by 0.2 or a reference pod, and its release doesn't show whose
            logger.warning(
                "Craft app releases: %s holds a fetch for %s that records no repository and "
                "can't be shown to be of %s; not serving or sharing it as %s's, asking GitHub "
                "about %s.",
                where,
                key,
                repo,
                key,
                repo,
            )
            return
        logger.warning(
            "Craft app releases: %s holds a release of %s for %s, not of %s (APPS changed, or a "
            "host with other APPS shares this Redis); not serving or sharing it as %s's, "
            "asking GitHub about %s.",
            where,
            other,
            key,
            repo,
            key,
            repo,
        )

    def checked(self, key: str, state: AppState) -> AppState:
        """``state`` whose release passes today's rules (``ReleaseRules``); one they
        refuse whole is served as none and asked about again without an ETag. A state that
        changed is marked to be written back, so the endpoint serves it too."""
        release = state.latest_release
        if release is None:
            return state
        carried = self.updater_files.carried(release)
        if carried is not release:
            self.state.unwritten.add(key)
            state, release = replace(state, latest_release=carried), carried
        judged = self.rules.rejudge(release, self.drops.moved_to(key) or self.state.repos[key], self.web_url)
        if judged == release:
            return state
        logger.warning("Craft app releases: %s's stored release broke a rule and was mended.", key)
        self.state.unwritten.add(key)
        if judged is None:
            return replace(state, latest_release=None, etag=None)
        return replace(state, latest_release=judged)
