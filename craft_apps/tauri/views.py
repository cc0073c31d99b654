"""``GET``/``HEAD /v1/craft_apps/updates/tauri/<app_key>/<target>/<arch>/<current_version>``:
Tauri's dynamic update server protocol, so an app's own updater asks us.

``respond(request, app_key, target, arch, current_version)`` answers ``200`` with ``{"version",
"pub_date", "url", "signature", "notes"}`` when there is an update (``tauri.updates.offer``),
else ``204`` with no body; ``304`` to a matching ``If-None-Match``; ``404`` for an unknown app,
target or arch; ``400`` for a bad version, ``bucket`` or ``channel``. Its docstring holds the
rest. See docs/tauri.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import semver
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from craft_apps.api.channels import ChannelRefused, each_chosen, requested_channel, schema_parameter
from craft_apps.api.downloads import CraftAppsDownloadErrorSerializer, refused, shown
from craft_apps.api.health import report_unusable_key
from craft_apps.api.metrics import count_tauri_answer
from craft_apps.api.representation import EncodedAnswer, signed_form
from craft_apps.api.runtime import runtime
from craft_apps.api.validators import not_modified
from craft_apps.kernel.domain import AppReleaseInfo, Channel
from craft_apps.kernel.instants import format_rfc3339
from craft_apps.tauri.answers import TauriAnswers
from craft_apps.tauri.updates import (
    ARCHES,
    BUNDLE_TYPES,
    TARGETS,
    Platform,
    Update,
    offer,
    parse_version,
)

_NO_UPDATE = b""
MAX_VERSION_CHARS = 256  # a version is a few characters; the variant and the cache hold it
BUCKET_HEADER = "Craft-Apps-Bucket"  # the bucket from a client that can't add to the URL
BUCKET_META = "HTTP_CRAFT_APPS_BUCKET"


@dataclass(frozen=True)
class TauriRequest:
    """What a request asks, checked: the app, platform, version, channel and bucket."""

    app_key: str
    platform: Platform
    current_version: str  # as the path gives it
    current: semver.Version  # parsed
    channel: Channel
    bucket: int | None

    @property
    def variant(self) -> str:
        """What the signature names this answer (docs/signed-feed.md): every input of it."""
        bucket = "" if self.bucket is None else str(self.bucket)
        bundle = self.platform.bundle_type or ""
        return (
            f"tauri/{self.app_key}/{self.platform.target}/{self.platform.arch}/{self.current_version}"
            f";channel={self.channel};bucket={bucket};bundle_type={bundle}"
        )


@dataclass(frozen=True)
class Refusal:
    """Why a request can't be answered: one line and the status."""

    reason: str
    status: int


def one_value(request: HttpRequest, name: str) -> str | Refusal | None:
    """The query parameter ``name``'s one value, None when absent; a refusal when repeated."""
    values = request.GET.getlist(name)
    if len(values) > 1:
        return Refusal(f"give {name} once, not {len(values)} times", 400)
    return values[0] if values else None


def parse_bucket(request: HttpRequest) -> int | Refusal | None:
    """``bucket`` (the query's, else the ``Craft-Apps-Bucket`` header's, which is all the
    plugin's JavaScript ``check()`` can add): a whole number from 0 to 99, or absent."""
    value = one_value(request, "bucket")
    if value is None:
        value = request.META.get(BUCKET_META)
    if value is None or isinstance(value, Refusal):
        return value
    if not (value.isascii() and value.isdigit() and int(value) < 100 and len(value) <= 2):
        return Refusal(f"bucket {shown(value)} is not a whole number from 0 to 99", 400)
    return int(value)


def parse_bundle_type(request: HttpRequest) -> str | Refusal | None:
    """``bundle_type``: one the updater names, else None (``unknown``, or a kind it adds later:
    such a client gets the ``<target>-<arch>`` file, as the plugin would look it up)."""
    value = one_value(request, "bundle_type")
    if isinstance(value, Refusal):
        return value
    return value if value in BUNDLE_TYPES else None


def parse_request(
    request: HttpRequest, app_key: str, target: str, arch: str, current_version: str
) -> TauriRequest | Refusal:
    """The request checked: the path's target, arch and version, then the query (the app is
    looked up in the channel's answer)."""
    if target not in TARGETS:
        return Refusal(f"target {shown(target)} is unknown; one of: {', '.join(TARGETS)}", 404)
    if arch not in ARCHES:
        return Refusal(f"arch {shown(arch)} is unknown; one of: {', '.join(ARCHES)}", 404)
    current = parse_version(current_version) if current_version.isascii() else None
    if current is None or len(current_version) > MAX_VERSION_CHARS:
        return Refusal(f"current version {shown(current_version)} is not a SemVer version", 400)
    channel = requested_channel(request)
    if isinstance(channel, ChannelRefused):
        return Refusal(channel.reason, 400)
    bucket = parse_bucket(request)
    bundle = parse_bundle_type(request)
    for checked in (bucket, bundle):
        if isinstance(checked, Refusal):
            return checked
    assert not isinstance(bucket, Refusal) and not isinstance(bundle, Refusal)
    return TauriRequest(app_key, Platform(target, arch, bundle), current_version, current, channel, bucket)


def update_body(update: Update, absolute: Callable[[str], str] = str) -> bytes:
    """The 200's body: what the plugin's dynamic format reads. A private app's ``url`` is this
    server's (``private_links``), a path made absolute with ``absolute``: the updater needs a URL."""
    published = update.release.published_at
    url = update.file.url
    data: dict[str, Any] = {
        "version": update.version,
        "pub_date": None if published is None else format_rfc3339(published),
        "url": absolute(url) if url.startswith("/") else url,
        "signature": update.file.signature,
        "notes": update.release.notes_markdown,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def answer_body(app: AppReleaseInfo, asked: TauriRequest, absolute: Callable[[str], str] = str) -> bytes:
    """The body for ``asked`` about ``app``: an update's JSON, or ``b""`` (a 204)."""
    if app.app_last_fetched is None:
        return _NO_UPDATE
    update = offer(app, asked.platform, asked.current, asked.bucket)
    return _NO_UPDATE if update is None else update_body(update, absolute)


def respond(
    request: HttpRequest,
    app_key: str,
    target: str,
    arch: str,
    current_version: str,
    now: Callable[[], float] = time.time,
) -> HttpResponse:
    """The update for the app on the client's platform, as the channel serves it. Never a 500.

    The query may add ``channel`` (``channels``), ``bucket`` (0-99, the client's own number for
    staged rollouts; or the ``Craft-Apps-Bucket`` header, hence ``Vary`` on it) and ``bundle_type``
    (the plugin's ``{{bundle_type}}``); other parameters are ignored. A refusal is ``{"success":
    false, "error": "<one line>"}``, as a download's 404 is. It reads what ``release_info`` reads,
    the channel's answer of this process (``runtime().answers``), so it waits on nothing slow and
    every control applies as there; the release's updater files came with it. ``Cache-Control`` is
    the answer's (``no-store`` before the first fetch), so an app not fetched yet gets a ``204``
    that no cache keeps. The body is compact JSON, not compressed (a few hundred bytes); the ETag
    is weak, a hash of the body (``validators``). With a signing key the answer carries
    ``Craft-Apps-Signature`` with the variant ``TauriRequest.variant`` names (docs/signed-feed.md),
    made once per answer, period and keys (``tauri.answers``).
    """
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    asked = parse_request(request, app_key, target, arch, current_version)
    if isinstance(asked, Refusal):
        return _refused(request, asked)
    report_unusable_key()  # one line per process when a configured key can't sign
    web = runtime()
    listed = web.answers.answer(asked.channel)
    app = listed.release_info.apps.get(app_key)
    if app is None:
        return _refused(request, Refusal(f"no app {shown(app_key)} is configured", 404))
    answer = web.part(TauriAnswers).get(
        asked.variant, answer_body(app, asked, request.build_absolute_uri), listed
    )
    return _send(request, answer, now())


def _refused(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    response = refused(request, refusal.reason, refusal.status)
    response["Vary"] = BUCKET_HEADER  # a bad bucket header's 400 is not every client's
    return response


def _send(request: HttpRequest, answer: EncodedAnswer, now_s: float) -> HttpResponse:
    config = runtime().answers.signing
    signed = None if config is None else signed_form(answer, config, now_s)
    etag = answer.etag if signed is None else signed.etag
    response: HttpResponse
    if not_modified(request.META.get("HTTP_IF_NONE_MATCH"), etag):
        response = HttpResponseNotModified()
    elif not answer.body:
        response = HttpResponse(status=204)
        del response["Content-Type"]  # no content, so no type
    else:
        content = b"" if request.method == "HEAD" else answer.body
        response = HttpResponse(content, content_type="application/json")
        response["Content-Length"] = str(len(answer.body))
    if signed is not None and response.status_code != 304:
        for name, value in signed.headers:
            response[name] = value
    response["ETag"] = etag
    response["Cache-Control"] = answer.cache_control
    response["Vary"] = BUCKET_HEADER
    return response


class CraftAppsTauriUpdateSerializer(serializers.Serializer):  # type: ignore[type-arg]
    version = serializers.CharField(help_text="The release's version (its tag's SemVer part).")
    pub_date = serializers.CharField(
        allow_null=True, help_text="When the release was published (RFC 3339), or null."
    )
    url = serializers.URLField(help_text="The updater bundle for this platform, on GitHub.")
    signature = serializers.CharField(
        help_text="The bundle's `.sig` file, byte for byte: the app's own minisign signature."
    )
    notes = serializers.CharField(help_text="The release's notes (GitHub's Markdown).")


def _path(name: str, description: str, enum: tuple[str, ...] | None = None) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.PATH, enum=enum, description=description)


def _query(
    name: str, description: str, enum: tuple[str, ...] | None = None, kind: type = str
) -> OpenApiParameter:
    return OpenApiParameter(
        name, kind, OpenApiParameter.QUERY, required=False, enum=enum, description=description
    )


_PARAMETERS = [
    _path("app_key", "The app's key, as in `release_info.apps`."),
    _path("target", "The updater's `{{target}}`: its operating system.", TARGETS),
    _path("arch", "The updater's `{{arch}}`: its CPU.", ARCHES),
    _path("current_version", "The updater's `{{current_version}}`: the SemVer version it runs."),
    schema_parameter(
        "The channel: `stable` (or no parameter), "
        + each_chosen(
            "or `{channel}` (the release `release_info?channel={channel}` lists, with its controls)"
        )
        + "."
    ),
    _query(
        "bucket",
        "The app's own number from 0 to 99, drawn once and kept. Below a staged rollout's "
        "percentage it is offered the rolled-out release; otherwise, or without it, the release before. "
        "A client that can't add it to the URL may send the `Craft-Apps-Bucket` header instead "
        "(the query wins); every answer has `Vary: Craft-Apps-Bucket`.",
        kind=int,
    ),
    _query(
        "bundle_type",
        "The updater's `{{bundle_type}}` (plugin 2.10 and later): the `<target>-<arch>-<bundle_type>` "
        "file is offered before the `<target>-<arch>` one. Any other value (`unknown`) is ignored.",
        BUNDLE_TYPES,
    ),
]
_RESPONSES: dict[int, Any] = {
    200: OpenApiResponse(CraftAppsTauriUpdateSerializer, description="An update: Tauri's dynamic format."),
    204: OpenApiResponse(
        description="No update: the release served is not newer, has no updater file for the "
        "platform, or the app was not fetched yet (then `Cache-Control: no-store`)."
    ),
    400: OpenApiResponse(
        CraftAppsDownloadErrorSerializer,
        description="A version that isn't SemVer, a bad `bucket`, an unknown `channel`, or a "
        "parameter given twice.",
    ),
    404: OpenApiResponse(CraftAppsDownloadErrorSerializer, description="An unknown app, target or arch."),
}


class TauriUpdateView(APIView):
    """DRF only for the schema: requests go straight to ``respond``."""

    authentication_classes = ()
    permission_classes = ()

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return count_tauri_answer(respond(request, **kwargs))

    @extend_schema(
        tags=["Craft Apps"],
        operation_id="check_tauri_update",
        summary="Tauri's updater: is there an update for this app on this platform",
        description="Tauri's dynamic update server protocol: point an app's "
        "`plugins.updater.endpoints` here with `{{target}}`, `{{arch}}` and `{{current_version}}`. "
        "The release is the one the channel serves the app, every release control applied; "
        "`url` and `signature` are its updater file's. Cacheable as `release_info`, weak ETag, "
        "signed as `release_info` when a signing key is set.",
        parameters=_PARAMETERS,
        responses=_RESPONSES,
    )
    def get(
        self, request: HttpRequest, app_key: str, target: str, arch: str, current_version: str
    ) -> HttpResponse:
        return respond(request, app_key, target, arch, current_version)
