"""The endpoint's answer, kept per state version: built from the host's state file once per
version and kept in every coding, the last good one served when the file can't be read.

One ``AnswerCache`` per web process, held by the process's runtime (``api.runtime``), which
gives it the state file's store and the notices to serve.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from craft_apps.api.answer import RECHECK_S, build_release_info
from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.representation import EncodedAnswer, Refiner, represent
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.domain import AppSpec, AppState, ReleaseInfo
from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.notices.items import NO_NOTICES, Notices
from craft_apps.signing import SigningConfig

# The endpoint's own logger name, which a site's LOGGING may route: these lines were logged
# from ``views`` before the cache had a module of its own.
logger = logging.getLogger("craft_apps.api.views")


def encode_answer(release_info: ReleaseInfo, notices: Notices = NO_NOTICES) -> EncodedAnswer:
    response: dict[str, Any] = {"success": True, "release_info": release_info, **notices.contract()}
    data = GetCraftAppsReleaseInfoResponseSerializer(response).data
    cache_control = CACHEABLE if release_info.last_fetched is not None else NOT_CACHEABLE
    return represent(data, cache_control, release_info)


class AnswerCache:
    """The encoded answer of the last state version this process saw, and the last good one.

    The state file's version (and the settings) are looked at no more than once per
    ``recheck_s`` (0.1 s), counted from the end of the look: that look costs as much as the
    rest of the request, and a change still shows within a tenth of a second.
    ``override_settings`` takes effect at once (the runtime clears the cache on Django's
    ``setting_changed``).
    """

    def __init__(
        self,
        store: Callable[[Path], StateStore],
        notices: Callable[[], Notices],
        recheck_s: float = RECHECK_S,
        monotonic: Callable[[], float] = time.monotonic,
        refiner: Refiner | None = None,
    ) -> None:
        self.recheck_s = recheck_s
        self._store = store  # the process's one store of a state directory
        self._notices = notices  # what the feed's background look left; never waits, never raises
        self._monotonic = monotonic
        self._refiner = refiner or Refiner()
        self._lock = threading.Lock()
        self._key: tuple[Path, tuple[tuple[int, ...] | None, int], tuple[AppSpec, ...], Notices] | None = None
        self._answer: EncodedAnswer | None = None  # the last good one
        self._failure: str | None = None
        # What was served last, and until when it stands without a look.
        self._served: tuple[EncodedAnswer, float] | None = None
        self.signing: SigningConfig | None = None  # the keys that sign what was served

    def answer(self) -> EncodedAnswer:
        now = self._monotonic()
        served = self._served
        if served is not None and now < served[1]:
            return served[0]
        answer = self._look(app_settings.STATE_DIR, app_settings.APPS)
        self.signing = app_settings.SIGNING  # read with the others, at most every recheck_s
        # Counted from the end of the look: a slow look must not make the next request look too.
        self._served = (answer, self._monotonic() + self.recheck_s)
        return answer

    def _look(self, state_dir: Path, apps: tuple[AppSpec, ...]) -> EncodedAnswer:
        store = self._store(state_dir)
        notices = self._notices()
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

    def clear(self) -> None:
        """Forgets every answer: the next request looks at the settings and the state file."""
        with self._lock:
            self._key, self._answer, self._failure, self._served = None, None, None, None
