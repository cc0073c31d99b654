"""``GET``/``HEAD /v1/craft_apps/release_info``: the latest release of every configured app.

Contract: always 200, or 304 to a matching ``If-None-Match`` (``validators``). The body is built
from the host's state file once per state version and kept in every coding (``representation``),
so a request that finds the same version re-reads, re-serializes and compresses nothing (one
tiny version query); ``Accept-Encoding`` picks the coding (``negotiation``). ``Cache-Control`` is
``CACHEABLE`` once every app was fetched, ``no-store`` before; 200, 304 and HEAD carry the same
``ETag``, ``Cache-Control`` and ``Vary``. When the state file can't be read, or is missing (not
created yet, or deleted and not yet made anew by the poller), the answer is the last good one
this process served, else the not-fetched-yet answer (``no-store``), and one log line says why.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from craft_apps.api.answer import RECHECK_S, build_release_info
from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.metrics import count_answer
from craft_apps.api.negotiation import IDENTITY, choose_encoding
from craft_apps.api.representation import EncodedAnswer, Refiner, represent
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.api.validators import not_modified
from craft_apps.conf import app_settings
from craft_apps.domain import AppSpec, AppState, ReleaseInfo
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.notices import feed as notices_feed
from craft_apps.notices.items import NO_NOTICES, Notices

logger = logging.getLogger(__name__)

VARY = "Accept-Encoding"


def encode_answer(release_info: ReleaseInfo, notices: Notices = NO_NOTICES) -> EncodedAnswer:
    response: dict[str, Any] = {"success": True, "release_info": release_info, **notices.contract()}
    data = GetCraftAppsReleaseInfoResponseSerializer(response).data
    cache_control = CACHEABLE if release_info.last_fetched is not None else NOT_CACHEABLE
    return represent(data, cache_control, release_info)


class AnswerCache:
    """The encoded answer of the last state version this process saw, and the last good one.

    The state file's version (and the settings) are looked at no more than once per
    ``recheck_s`` (0.1 s): that look costs as much as the rest of the request, and a change still
    shows within a tenth of a second. ``override_settings`` takes effect at once (``forget``
    runs on Django's ``setting_changed``).
    """

    def __init__(
        self,
        recheck_s: float = RECHECK_S,
        monotonic: Callable[[], float] = time.monotonic,
        refiner: Refiner | None = None,
    ) -> None:
        self.recheck_s = recheck_s
        self._monotonic = monotonic
        self._refiner = refiner or Refiner()
        self._lock = threading.Lock()
        self._stores: dict[Path, StateStore] = {}
        self._key: tuple[Path, tuple[tuple[int, ...] | None, int], tuple[AppSpec, ...], Notices] | None = None
        self._answer: EncodedAnswer | None = None  # the last good one
        self._failure: str | None = None
        # What was served last, and until when it stands without a look.
        self._served: tuple[EncodedAnswer, float] | None = None

    def answer(self) -> EncodedAnswer:
        now = self._monotonic()
        served = self._served
        if served is not None and now < served[1]:
            return served[0]
        answer = self._look(app_settings.STATE_DIR, app_settings.APPS)
        # Counted from the end of the look: a slow look must not make the next request look too.
        self._served = (answer, self._monotonic() + self.recheck_s)
        return answer

    def forget(self) -> None:
        """The next request looks at the settings and the state file again."""
        self._served = None

    def _look(self, state_dir: Path, apps: tuple[AppSpec, ...]) -> EncodedAnswer:
        store = self._store(state_dir)
        notices = notices_feed.feed.current()  # what the background look left; never waits, never raises
        try:
            marker = store.version_marker()
            if self._key == (store.path, marker, apps, notices) and self._answer is not None:
                # The same file at the same version as before a look that failed (it was
                # locked, say): it is readable again all the same.
                self._readable_again(store)
                self._refiner.offer(self._answer, self._refined)
                return self._answer
            snapshot = store.read()
            if marker[0] is None or store.file_identity() is None:
                raise store.missing()
        except StateUnavailable as err:
            return self._fallback(apps, str(err), notices)
        except Exception as err:  # the endpoint never fails, whatever the state file does
            return self._fallback(apps, f"{type(err).__name__}: {err}", notices)
        answer = encode_answer(build_release_info(apps, snapshot.apps, app_settings.GITHUB_WEB_URL), notices)
        with self._lock:
            self._key, self._answer = (store.path, (marker[0], snapshot.version), apps, notices), answer
        self._readable_again(store)
        self._refiner.offer(answer, self._refined)
        return self._answer or answer  # the refined one when the refiner ran at once

    def _readable_again(self, store: StateStore) -> None:
        with self._lock:
            if self._failure is not None:
                logger.info("Craft apps state file is readable again: %s", store.path)
                self._failure = None

    def _refined(self, answer: EncodedAnswer, better: EncodedAnswer) -> None:
        """Keeps ``better`` in place of ``answer`` while ``answer`` is the current one."""
        with self._lock:
            if self._answer is answer:
                self._answer = better
            served = self._served
            if served is not None and served[0] is answer:
                self._served = (better, served[1])

    def _fallback(self, apps: tuple[AppSpec, ...], reason: str, notices: Notices) -> EncodedAnswer:
        with self._lock:
            if self._failure != reason:
                self._failure = reason
                logger.warning(
                    "Craft apps release info: serving the %s answer; the state file can't be read: %s",
                    "last good" if self._answer else "not-fetched-yet",
                    reason,
                )
            if self._answer is not None:
                return self._answer
        nothing = build_release_info(apps, dict[str, AppState](), app_settings.GITHUB_WEB_URL)
        return encode_answer(nothing, notices)

    def _store(self, state_dir: Path) -> StateStore:
        store = self._stores.get(state_dir)
        if store is None:
            with self._lock:
                store = self._stores.setdefault(state_dir, StateStore(state_dir))
        return store

    def clear(self) -> None:
        """Forgets everything (tests)."""
        with self._lock:
            self._key, self._answer, self._failure, self._served = None, None, None, None
        notices_feed.feed.clear()


answers = AnswerCache()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CRAFT_APPS", "BASE_DIR"):
        answers.forget()


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
        responses={200: GetCraftAppsReleaseInfoResponseSerializer},
    )
    def get(self, request: HttpRequest) -> HttpResponse:
        return respond(request)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            return count_answer(respond(request))
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return count_answer(response)


def respond(request: HttpRequest) -> HttpResponse:
    answer = answers.answer()
    response: HttpResponse
    if not_modified(request.META.get("HTTP_IF_NONE_MATCH"), answer.etag):
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
    response["ETag"] = answer.etag
    response["Cache-Control"] = answer.cache_control
    response["Vary"] = VARY
    return response
