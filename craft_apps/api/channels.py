"""The endpoint's channels: ``?channel=`` read from a request, and the beta channel's answer.

- **The parameter.** No ``channel`` or ``channel=stable`` is the stable channel, today's answer
  byte for byte; ``channel=beta`` the beta channel. Anything else (another name, an empty
  value, the parameter given twice) is refused with one line saying why (``ChannelRefused``),
  which the views answer as a 400.
- **The beta answer.** The same document as the stable one, in which each app whose beta
  channel is on (``notices.models.AppChannel``) and that was fetched has as ``latest_release``
  the newest of its stable latest and its release history (``versions.newest``). The history
  counts only when it is of the app's repository (as a fetch is: ``domain.same_repo``,
  ``domain.release_page_is_of``). Apps without beta, and apps not fetched yet, are listed as
  on the stable channel.
- **The variant.** Each channel's answer is signed with its variant (``signing``): "" for the
  stable channel (as before channels), the channel's name otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from django.http import HttpRequest
from drf_spectacular.utils import OpenApiParameter

from craft_apps.domain import AppSpec, Release, ReleaseInfo, release_page_is_of, same_repo
from craft_apps.host.store import HistoryFetch
from craft_apps.text import quoted
from craft_apps.versions import newest

STABLE = "stable"
BETA = "beta"
CHANNELS = (STABLE, BETA)
PARAMETER = "channel"


def schema_parameter(description: str) -> OpenApiParameter:
    """The ``channel`` query parameter as the OpenAPI schema documents it."""
    return OpenApiParameter(
        PARAMETER,
        str,
        OpenApiParameter.QUERY,
        required=False,
        enum=list(CHANNELS),
        default=STABLE,
        description=description,
    )


@dataclass(frozen=True)
class ChannelRefused:
    """Why the request's ``channel`` can't be served: one line."""

    reason: str


def requested_channel(request: HttpRequest) -> str | ChannelRefused:
    """The channel ``request`` asks for (``STABLE`` when it names none), or why it is refused."""
    query = request.META.get("QUERY_STRING")
    if not query:
        return STABLE  # what launchers send: no query to parse
    if query == f"{PARAMETER}={BETA}":
        return BETA  # what a beta launcher sends
    values = request.GET.getlist(PARAMETER)
    if not values:
        return STABLE
    names = " or ".join(CHANNELS)
    if len(values) > 1:
        return ChannelRefused(f"give {PARAMETER} once, not {len(values)} times: {names}")
    value = values[0]
    if value in CHANNELS:
        return value
    if value == "":
        return ChannelRefused(f"{PARAMETER} is empty; leave it out, or give {names}")
    return ChannelRefused(f"no channel {quoted(value)}; the channels are {names}")


def query(channel: str) -> str:
    """What a link adds to stay on ``channel``: nothing on the stable channel."""
    return "" if channel == STABLE else f"?{PARAMETER}={channel}"


def variant(channel: str) -> str:
    """What the signature names the channel's answer: "" for the stable channel."""
    return "" if channel == STABLE else channel


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


def beta_release_info(
    stable: ReleaseInfo,
    apps: tuple[AppSpec, ...],
    beta_apps: frozenset[str],
    history: Mapping[str, tuple[Release, ...]],
    fetches: Mapping[str, HistoryFetch],
    web_url: str,
) -> ReleaseInfo:
    """``stable`` with each fetched beta app's ``latest_release`` made the newest of its stable
    latest and its history; ``stable`` itself when that changes nothing."""
    changed = dict(stable.apps)
    for app in apps:
        listed = changed.get(app.key)
        if app.key not in beta_apps or listed is None or listed.app_last_fetched is None:
            continue
        chosen = newest(listed.latest_release, history_of(app, history, fetches, web_url))
        if chosen is not listed.latest_release:
            changed[app.key] = replace(listed, latest_release=chosen)
    if all(changed[key] is stable.apps[key] for key in stable.apps):
        return stable
    return replace(stable, apps=changed)
