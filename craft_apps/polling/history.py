"""Each app's release history as the poller keeps it: newest first, at most ``depth`` releases.

``with_latest(history, latest)`` returns the history after GitHub's ``/releases/latest`` answered
``latest``; ``from_list(listed, latest)`` returns the history GitHub's release list gives, which
replaces the old one whole. ``ListsOwed`` says which apps need their release list asked. Pure
functions and bookkeeping: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import HistoryFetch, Release, newest_first

DEFAULT_DEPTH = 20  # GitHub's release list is asked with per_page=20: the last 20 releases
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def with_latest(
    history: Sequence[Release], latest: Release, depth: int = DEFAULT_DEPTH
) -> tuple[Release, ...]:
    """``history`` having seen ``latest`` as GitHub's latest release: ``latest`` added (replacing
    an older copy of its tag), and a stable release published after it removed, since
    ``/releases/latest`` is the newest published stable release (that one was deleted, made a
    draft or made a prerelease)."""
    latest_at = latest.published_at or _EPOCH
    kept = [
        release
        for release in history
        if release.tag != latest.tag and (release.prerelease or (release.published_at or _EPOCH) <= latest_at)
    ]
    return newest_first([latest, *kept])[:depth]


def from_list(
    listed: Sequence[Release], latest: Release | None, depth: int = DEFAULT_DEPTH
) -> tuple[Release, ...]:
    """The history GitHub's release list gives (a deleted release leaves it), with the latest
    release taken in."""
    history = newest_first(listed)[:depth]
    return history if latest is None else with_latest(history, latest, depth)


def never_listed(fetch: HistoryFetch | None, repo: str) -> bool:
    """Whether an app's history never came from the release list of ``repo``."""
    return fetch is None or fetch.fetched_ms is None or fetch.repo != repo


class ListsOwed:
    """Which apps owe GitHub's release list a request, so a host knows each app's recent
    releases before a release control needs them (a yank of the latest falls back to the one
    before).

    An app with a latest release owes one when its history never came from the list (a host
    started recently, a state file of an older version), or when this host took in a latest
    release its history didn't hold (a new release, from GitHub or from the fleet) since the
    list it holds. The poller asks the list right after the app's next latest: one request per
    new release, not per interval; a host that doesn't ask takes the list the fleet shares.
    """

    def __init__(self) -> None:
        self._new_since: dict[str, int] = {}  # app -> when its newest unlisted latest was fetched
        self._started_ms: int | None = None

    def started_ms(self, now_ms: int) -> int:
        """The instant of this poller's first tick (``now_ms`` at the first call)."""
        if self._started_ms is None:
            self._started_ms = now_ms
        return self._started_ms

    def saw_new(self, key: str, fetched_ms: int | None) -> None:
        """The app's latest release, fetched at ``fetched_ms``, is not in its history."""
        self._new_since[key] = max(self._new_since.get(key, 0), fetched_ms or 0)

    def listed(self, key: str, fetched_ms: int | None = None) -> None:
        """A release list came in: this host's own (no time), or the fleet's fetched at
        ``fetched_ms``, which settles a new release fetched no later (on the same host's clock)."""
        since = self._new_since.get(key)
        if since is not None and (fetched_ms is None or fetched_ms >= since):
            del self._new_since[key]

    def owes(self, key: str, latest: Release | None, fetch: HistoryFetch | None, repo: str) -> bool:
        """Whether the app's release list is to be asked with its next latest."""
        if latest is None:
            return False  # no release, nothing to fall back to
        return key in self._new_since or never_listed(fetch, repo)
