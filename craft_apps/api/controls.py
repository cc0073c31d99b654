"""The release controls applied to a channel's answer (``craft_apps.controls`` is the rule).

Each fetched app with a control in force on the channel is served what ``controls.serve``
chooses among GitHub's answer and the app's history (``channels.history_of``; its stable
releases only on the stable channel); an app without one is listed as it was, the same
object, so an answer the controls don't touch is the same bytes as without them. An app not
fetched yet is listed as not fetched: nothing of it is served, yanked or not.

``known_tags`` is what the admin's form and the import check a control's tag against: the tags
the host's state file holds of each app whose release list it fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from craft_apps.api.channels import STABLE, history_of
from craft_apps.controls import Control, by_app, serve
from craft_apps.domain import AppSpec, Release, ReleaseInfo
from craft_apps.host.store import HistoryFetch, StateSnapshot


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
    """``info`` (``channel``'s answer before controls) with ``controls`` applied; ``info``
    itself when they change nothing."""
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
        if channel == STABLE:
            pool = tuple(r for r in pool if not r.prerelease)
        served = serve(listed.latest_release, pool, mine, channel, now_ms)
        if served.latest_release is listed.latest_release and served.rollout == listed.rollout:
            continue
        changed[app.key] = replace(listed, latest_release=served.latest_release, rollout=served.rollout)
    if all(changed[key] is info.apps[key] for key in info.apps):
        return info
    return replace(info, apps=changed)


def known_tags(snapshot: StateSnapshot, *, listed_only: bool = True) -> dict[str, frozenset[str]]:
    """The tags this host knows of each app: its latest release's and its history's.

    With ``listed_only`` (what ``controls.problems`` checks a control's tag against, in the
    admin and the import), only the apps whose release list this host fetched: before its
    first control an app without beta has no history yet, and a hold at an older tag it has on
    GitHub must not be refused for that. Without it (whether a control waits for its release,
    in the status and the metrics), every app the host knows a release of."""
    found: dict[str, frozenset[str]] = {}
    for key, state in snapshot.apps.items():
        fetch = snapshot.history_fetches.get(key)
        listed = fetch is not None and fetch.fetched_ms is not None
        if listed_only and (state.fetched_ms is None or not listed):
            continue
        tags = {release.tag for release in snapshot.history.get(key, ())}
        if state.latest_release is not None:
            tags.add(state.latest_release.tag)
        found[key] = frozenset(tags)
    return found
