"""The endpoint's channels on the HTTP side: the ``?channel=`` parameter, a link's query, a
signature's variant (the channels are ``domain.Channel``; what each serves, ``serving.serve``).

``requested_channel(request)`` returns the channel asked for (``STABLE`` with no parameter or
``channel=stable``), or a ``ChannelRefused`` with one line saying why (another name, an empty
value, the parameter given twice), which the views answer as a 400. ``variant(channel)`` is ""
for the stable channel (as before channels), the channel's name otherwise.
See docs/endpoint.md#channels and docs/channels.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest
from drf_spectacular.utils import OpenApiParameter

from craft_apps.kernel.domain import Channel
from craft_apps.kernel.text import quoted

STABLE = Channel.STABLE
CHANNELS = tuple(Channel)
PARAMETER = "channel"


def schema_parameter(description: str) -> OpenApiParameter:
    """The ``channel`` query parameter as the OpenAPI schema documents it."""
    return OpenApiParameter(
        PARAMETER,
        str,
        OpenApiParameter.QUERY,
        required=False,
        enum=[channel.value for channel in CHANNELS],
        default=STABLE.value,
        description=description,
    )


def each_chosen(template: str, separator: str = ", ") -> str:
    """``template`` said of each channel chosen per app (``{channel}``), joined: how the schema's
    descriptions name them, so a new channel is described with no edit here."""
    return separator.join(template.format(channel=c) for c in Channel.chosen_per_app())


@dataclass(frozen=True)
class ChannelRefused:
    """Why the request's ``channel`` can't be served: one line."""

    reason: str


def requested_channel(request: HttpRequest) -> Channel | ChannelRefused:
    """The channel ``request`` asks for (``STABLE`` when it names none), or why it is refused."""
    query = request.META.get("QUERY_STRING")
    if not query:
        return STABLE  # what launchers send: no query to parse
    if query == f"{PARAMETER}={Channel.BETA}":
        return Channel.BETA  # what a beta launcher sends
    values = request.GET.getlist(PARAMETER)
    if not values:
        return STABLE
    names = " or ".join(CHANNELS)
    if len(values) > 1:
        return ChannelRefused(f"give {PARAMETER} once, not {len(values)} times: {names}")
    value = values[0]
    if value in CHANNELS:
        return Channel(value)
    if value == "":
        return ChannelRefused(f"{PARAMETER} is empty; leave it out, or give {names}")
    return ChannelRefused(f"no channel {quoted(value)}; the channels are {names}")


def query(channel: str) -> str:
    """What a link adds to stay on ``channel``: nothing on the stable channel."""
    return "" if channel == STABLE else f"?{PARAMETER}={channel}"


def variant(channel: str) -> str:
    """What the signature names the channel's answer: "" for the stable channel."""
    return "" if channel == STABLE else str(channel)
