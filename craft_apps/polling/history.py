"""Each app's release history as the poller keeps it: what a new answer does to it.

Two things feed an app's history. Every release the host sees through ``/releases/latest`` is
added (by tag, replacing an older copy), so a host knows recent releases even when no app asks
for the list; and because ``/releases/latest`` is the newest published stable release, a
stable release in the history published after it is no longer published as stable (deleted,
made a draft, or made a prerelease) and is removed. GitHub's release list, asked only for the
apps that need history, replaces the history whole (a deleted release leaves it) and then takes
the latest in too. The history is kept newest first, at most ``depth`` releases. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release, newest_first

DEFAULT_DEPTH = 20  # GitHub's release list is asked with per_page=20: the last 20 releases
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def with_latest(
    history: Sequence[Release], latest: Release, depth: int = DEFAULT_DEPTH
) -> tuple[Release, ...]:
    """``history`` having seen ``latest`` as GitHub's latest release (see the module)."""
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
    """The history GitHub's release list gives, with the latest release taken in."""
    history = newest_first(listed)[:depth]
    return history if latest is None else with_latest(history, latest, depth)
