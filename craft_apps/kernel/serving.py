"""What each channel serves each app: the one serving rule, pure (no Django, cache or I/O).

``serve`` takes the host's releases and history, the apps on each channel, the release controls (release
policies included) and the clock, and says what a channel lists for each app: its latest
release, a rollout, or nothing. The endpoint, the pages, the admin, the status and the metrics
all call it. See docs/channels.md and docs/controls.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from craft_apps.controls.policies import Wait, schedules, waiting
from craft_apps.controls.policies import serve as serve_controls
from craft_apps.controls.rules import Control, by_app
from craft_apps.kernel.domain import (
    AppSpec,
    Channel,
    ChannelApps,
    HistoryFetch,
    Release,
    ReleaseInfo,
    release_page_is_of,
    same_repo,
)
from craft_apps.kernel.versions import newest


@dataclass(frozen=True)
class HostReleases:
    """What the host knows of the configured apps, as the rule reads it."""

    apps: tuple[AppSpec, ...]
    listed: ReleaseInfo  # each app with GitHub's latest release (``api.answer.build_release_info``)
    web_url: str
    history: Mapping[str, tuple[Release, ...]] = field(default_factory=dict)
    fetches: Mapping[str, HistoryFetch] = field(default_factory=dict)


def serve(
    channel: Channel,
    releases: HostReleases,
    channel_apps: ChannelApps,
    controls: tuple[Control, ...],
    now_ms: int,
) -> ReleaseInfo:
    """What ``channel`` serves each app: its listing (with the history's newest on a channel
    that serves it, for the apps it is on for in ``channel_apps``) under ``controls`` at
    ``now_ms``. ``releases.listed`` itself when nothing changes it."""
    info = releases.listed
    if channel.serves_history:
        info = newest_of_history(info, releases, channel_apps.apps_on(channel))
    return controlled_release_info(
        info,
        channel,
        releases.apps,
        controls,
        releases.history,
        releases.fetches,
        releases.web_url,
        now_ms,
    )


def history_of(
    app: AppSpec,
    history: Mapping[str, tuple[Release, ...]],
    fetches: Mapping[str, HistoryFetch],
    web_url: str,
) -> tuple[Release, ...]:
    """The app's history that counts: of its repository (as a fetch is), release by release."""
    fetch = fetches.get(app.key)
    if fetch is not None and fetch.repo is not None and not same_repo(fetch.repo, app.repo):
        return ()  # the history of a repository the app no longer names
    return tuple(r for r in history.get(app.key, ()) if release_page_is_of(r, app.repo, web_url))


def newest_of_history(info: ReleaseInfo, releases: HostReleases, app_keys: frozenset[str]) -> ReleaseInfo:
    """``info`` with each fetched app of ``app_keys`` listing the newest of its latest release
    and its history; ``info`` itself when that changes nothing."""
    changed = dict(info.apps)
    for app in releases.apps:
        listed = changed.get(app.key)
        if app.key not in app_keys or listed is None or listed.app_last_fetched is None:
            continue
        pool = history_of(app, releases.history, releases.fetches, releases.web_url)
        chosen = newest(listed.latest_release, pool)
        if chosen is not listed.latest_release:
            changed[app.key] = replace(listed, latest_release=chosen)
    if all(changed[key] is info.apps[key] for key in info.apps):
        return info
    return replace(info, apps=changed)


def controlled_release_info(
    info: ReleaseInfo,
    channel: str,
    apps: tuple[AppSpec, ...],
    controls: tuple[Control, ...],
    history: Mapping[str, tuple[Release, ...]],
    fetches: Mapping[str, HistoryFetch],
    web_url: str,
    now_ms: int,
) -> ReleaseInfo:
    """``info`` (``channel``'s listing before controls) with ``controls`` applied to each
    fetched app (``controls.serve``, among its history: prereleases only on a channel that
    takes them); ``info`` itself when they change nothing."""
    if not controls:
        return info
    grouped = by_app(controls)
    changed = dict(info.apps)
    for app in apps:
        mine = grouped.get(app.key)
        listed = changed.get(app.key)
        if not mine or listed is None or listed.app_last_fetched is None:
            continue
        pool = history_of(app, history, fetches, web_url)
        if not Channel(channel).prereleases:
            pool = tuple(r for r in pool if not r.prerelease)
        served = serve_controls(listed.latest_release, pool, mine, channel, now_ms)
        if served.latest_release is listed.latest_release and served.rollout == listed.rollout:
            continue
        changed[app.key] = replace(listed, latest_release=served.latest_release, rollout=served.rollout)
    if all(changed[key] is info.apps[key] for key in info.apps):
        return info
    return replace(info, apps=changed)


@dataclass(frozen=True)
class WaitingRelease:
    """A release one app's policy keeps back on one channel (``policies.Wait``)."""

    app_key: str
    channel: Channel
    wait: Wait


def waiting_releases(
    releases: HostReleases, channel_apps: ChannelApps, controls: tuple[Control, ...], now_ms: int
) -> list[WaitingRelease]:
    """Every release a policy keeps back at ``now_ms``, per app and channel, among the releases
    each channel chooses from (as ``serve``): what operators see waiting."""
    grouped = by_app(controls)
    found: list[WaitingRelease] = []
    for channel in Channel:
        info = (
            newest_of_history(releases.listed, releases, channel_apps.apps_on(channel))
            if channel.serves_history
            else releases.listed
        )
        for app in releases.apps:
            mine, listed = grouped.get(app.key), info.apps.get(app.key)
            if not mine or listed is None or listed.app_last_fetched is None:
                continue
            pool = history_of(app, releases.history, releases.fetches, releases.web_url)
            known = [r for r in (listed.latest_release, *pool) if r is not None]
            if not channel.prereleases:
                known = [r for r in known if not r.prerelease]
            waits = waiting(known, mine, channel, now_ms)
            found.extend(WaitingRelease(app.key, channel, wait) for wait in waits.values())
    return found


def policy_rollouts(releases: HostReleases, controls: tuple[Control, ...]) -> list[Control]:
    """Every rollout a staged policy gives a release the host knows, on any channel
    (``policies.schedules``): what moves an answer on its own."""
    grouped = by_app(controls)
    found: list[Control] = []
    for app in releases.apps:
        mine = grouped.get(app.key)
        listed = releases.listed.apps.get(app.key)
        if not mine or listed is None:
            continue
        known = [*history_of(app, releases.history, releases.fetches, releases.web_url)]
        if listed.latest_release is not None:
            known.append(listed.latest_release)
        for channel in Channel:
            found.extend(schedules(known, mine, channel))
    return found


def next_policy_change_ms(releases: HostReleases, controls: tuple[Control, ...], now_ms: int) -> int | None:
    """The first instant after ``now_ms`` at which a policy's schedule moves a release on, on
    any channel: an answer made now stands until then."""
    instants = (c.next_change_ms(now_ms) for c in policy_rollouts(releases, controls))
    return min((at for at in instants if at is not None), default=None)


def policy_steps_reached_ms(releases: HostReleases, controls: tuple[Control, ...], now_ms: int) -> int:
    """The last instant by ``now_ms`` at which a policy's schedule moved a release on (0 for
    none): what a signed answer's order reflects, as a hand-made rollout's steps."""
    rollouts = policy_rollouts(releases, controls)
    return max((s.at_ms for c in rollouts for s in c.steps if s.at_ms <= now_ms), default=0)
