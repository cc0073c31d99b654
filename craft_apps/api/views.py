"""``GET``/``HEAD /v1/craft_apps/release_info``: the latest release of every configured app.

``ReleaseInfoView`` (DRF only for the schema) hands each request to ``respond(request)``, which
returns 200 with the channel's answer, 304 to a matching ``If-None-Match`` or 400 for a refused
``?channel=``; another method gets 405. The answer comes from the process's answer cache
(``runtime().answers``); ``respond``'s docstring holds the rest. See docs/endpoint.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.views import APIView

from craft_apps.api.channels import ChannelRefused, each_chosen, requested_channel, schema_parameter
from craft_apps.api.downloads import CraftAppsDownloadErrorSerializer, refused
from craft_apps.api.health import report_unusable_key
from craft_apps.api.metrics import count_answer
from craft_apps.api.negotiation import IDENTITY, choose_encoding
from craft_apps.api.representation import signed_form
from craft_apps.api.runtime import runtime
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.api.validators import not_modified

VARY = "Accept-Encoding"


class ReleaseInfoView(APIView):
    """Served without DRF's per-request machinery (no authentication, content negotiation or
    throttling apply to a public, precomputed document); DRF is here for the schema."""

    authentication_classes = ()
    permission_classes = ()

    @extend_schema(
        tags=["Craft Apps"],
        operation_id="get_craft_apps_release_info",
        summary="The latest release of every Craft App",
        description="Every configured app with its latest release, assets, renames and notices. "
        "Never fails: apps not fetched yet are listed without `latest_release` and "
        "`app_last_fetched`, and the answer is `Cache-Control: no-store` until every app was fetched.",
        parameters=[
            schema_parameter(
                "The channel. `stable` (or no parameter): each app's latest stable release. "
                + each_chosen(
                    "`{channel}`: each app whose {channel} channel the operator turned on has as "
                    "`latest_release` the newest of its releases, prereleases included, by SemVer "
                    "precedence of the tag; every other app is listed as on `stable`. ",
                    separator="",
                )
                + "Each channel's answer has its own ETag."
            )
        ],
        responses={
            200: GetCraftAppsReleaseInfoResponseSerializer,
            400: OpenApiResponse(
                CraftAppsDownloadErrorSerializer,
                description="An unknown channel, an empty one, or `channel` given more than once.",
            ),
        },
    )
    def get(self, request: HttpRequest) -> HttpResponse:
        return respond(request)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            return count_answer(respond(request))
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return count_answer(response)


def respond(request: HttpRequest, now: Callable[[], float] = time.time) -> HttpResponse:
    """The answer to a GET or HEAD: 200 in the coding ``Accept-Encoding`` picks (``negotiation``),
    304 to a matching ``If-None-Match`` (``validators``), 400 ``{"success": false, "error": "<one
    line>"}`` for a refused ``?channel=`` (``channels``), as a download's 404 is.

    The body is made from the host's state file once per state version and channel and kept in
    every coding (``representation``), so a request that finds the same version re-reads,
    re-serializes and compresses nothing (one tiny version query). ``Cache-Control`` is
    ``CACHEABLE`` once every app was fetched, ``no-store`` before; 200, 304 and HEAD carry the same
    ``ETag``, ``Cache-Control`` and ``Vary``. When the state file can't be read or is missing (not
    created yet, or deleted and not yet made anew by the poller), the answer is the last good one
    this process served, else the not-fetched-yet answer (``no-store``), and one log line says why.
    Each channel keeps these rules with its own bytes and ETag; no ``channel`` or
    ``channel=stable`` is the stable answer, as before channels.
    """
    channel = requested_channel(request)
    if isinstance(channel, ChannelRefused):
        return refused(request, channel.reason, 400)
    report_unusable_key()  # one line per process when a configured key can't sign
    answers = runtime().answers
    answer = answers.answer(channel)
    config = answers.signing
    # Its ETag and signature; without a key, the answer's own ETag and no signature.
    signed = None if config is None else signed_form(answer, config, now())
    etag = answer.etag if signed is None else signed.etag
    response: HttpResponse
    if not_modified(request.META.get("HTTP_IF_NONE_MATCH"), etag):
        # No body, no Content-Type, no Content-Length: RFC 9110 allows the 200's length on a
        # 304, but clients with an older HTTP parser (wrk's, for one) then wait for that body.
        response = HttpResponseNotModified()
    else:
        coding = choose_encoding(request.META.get("HTTP_ACCEPT_ENCODING"))
        content = answer.content(coding)
        response = HttpResponse(b"" if request.method == "HEAD" else content, content_type="application/json")
        response["Content-Length"] = str(len(content))  # a HEAD's too: the GET's length
        if coding != IDENTITY:
            # Also keeps the site's GZipMiddleware, if any, from compressing it again.
            response["Content-Encoding"] = coding
        for name, value in () if signed is None else signed.headers:
            response[name] = value
    response["ETag"] = etag
    response["Cache-Control"] = answer.cache_control
    response["Vary"] = VARY
    return response
