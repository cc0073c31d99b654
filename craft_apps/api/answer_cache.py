"""The endpoint's answer, kept per state version and channel: built from the host's state file
once per version and channel and kept in every coding, the last good one served when the file
can't be read.

One ``AnswerCache`` per web process, held by the process's runtime (``api.runtime``), which
gives it the state file's store, the notices to serve and the apps on beta (both from the
notices feed's background look). The stable answer is made as before channels; the beta
answer (``channels.beta_release_info``) is made from the same snapshot of the state file,
once per stable answer and set of apps on beta, and when it lists the same releases it takes
the stable answer's bytes (and brotli and gzip forms) as they are: nothing is encoded twice.
``encoded`` counts the answers encoded (the benchmark prints it per state version).

The release controls (``api.controls``; from the same background look as the notices) are
applied to each channel's answer: stable's from GitHub's answer, beta's after the beta
channel's choice. What they were made with is part of what an answer is kept for, with each
rollout's percentage now, so an edit or a schedule's step makes the next answer anew (once per
channel), and an edit made while the state file can't be read is applied to the last good
snapshot: a yank never waits for the file.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from craft_apps.api.answer import RECHECK_S, build_release_info
from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.channels import STABLE, beta_release_info, variant
from craft_apps.api.controls import controlled_release_info
from craft_apps.api.representation import EncodedAnswer, Refiner, SignatureSlot, represent
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.controls import Control, percentages
from craft_apps.domain import AppSpec, AppState, ReleaseInfo
from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable
from craft_apps.notices.items import NO_NOTICES, Notices
from craft_apps.signing import SigningConfig

# The endpoint's own logger name, which a site's LOGGING may route: these lines were logged
# from ``views`` before the cache had a module of its own.
logger = logging.getLogger("craft_apps.api.views")


def encode_answer(
    release_info: ReleaseInfo, notices: Notices = NO_NOTICES, channel: str = STABLE
) -> EncodedAnswer:
    response: dict[str, Any] = {"success": True, "release_info": release_info, **notices.contract()}
    data = GetCraftAppsReleaseInfoResponseSerializer(response).data
    cache_control = CACHEABLE if release_info.last_fetched is not None else NOT_CACHEABLE
    answer = represent(data, cache_control, release_info)
    return answer if channel == STABLE else replace(answer, variant=variant(channel))


def as_channel(answer: EncodedAnswer, channel: str) -> EncodedAnswer:
    """``answer``'s bytes as ``channel``'s answer (its own variant and signature)."""
    if channel == STABLE:
        return answer
    return replace(answer, variant=variant(channel), signature=SignatureSlot())


_NO_SNAPSHOT = StateSnapshot(0)

# The controls an answer was made with, and each one's percentage then.
ControlsKey = tuple[tuple[Control, ...], tuple[int, ...]]


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
        beta_apps: Callable[[], frozenset[str]] = frozenset,
        controls: Callable[[], tuple[Control, ...]] = tuple,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.recheck_s = recheck_s
        self._store = store  # the process's one store of a state directory
        self._notices = notices  # what the feed's background look left; never waits, never raises
        self._beta_apps = beta_apps  # as the notices: what the same look left
        self._controls = controls  # as the notices: what the same look left
        self._now_ms = now_ms  # the wall clock a rollout's schedule is read on
        self._monotonic = monotonic
        self._refiner = refiner or Refiner()
        self._lock = threading.Lock()
        self._key: (
            tuple[Path, tuple[tuple[int, ...] | None, int], tuple[AppSpec, ...], Notices, ControlsKey] | None
        ) = None
        self._answer: EncodedAnswer | None = None  # the last good one
        self._snapshot = _NO_SNAPSHOT  # what the last good one was made from
        self._uncontrolled: ReleaseInfo | None = None  # its release info before the controls
        # Per channel but the stable one: (what it was made from, the answer).
        self._channels: dict[str, tuple[object, EncodedAnswer]] = {}
        # Per channel, the stable answer, the apps on beta and the key it was last checked with.
        self._checked: dict[str, tuple[EncodedAnswer, frozenset[str], object]] = {}
        self.encoded = 0  # answers encoded (JSON, gzip, brotli), all channels
        self._failure: str | None = None
        # What was served last, and until when it stands without a look.
        self._served: tuple[EncodedAnswer, float] | None = None
        self.signing: SigningConfig | None = None  # the keys that sign what was served

    def answer(self, channel: str = STABLE) -> EncodedAnswer:
        """The answer of ``channel`` (one of ``channels.CHANNELS``)."""
        stable = self._stable()
        if channel == STABLE:
            return stable
        beta = self._beta_apps()
        # The same objects as at the last request: what was made from them stands (no compare).
        checked = self._checked.get(channel)
        if checked is not None and checked[0] is stable and checked[1] is beta and checked[2] is self._key:
            kept = self._channels.get(channel)
            if kept is not None:
                return kept[1]
        with self._lock:
            key, snapshot, current, uncontrolled = self._key, self._snapshot, self._answer, self._uncontrolled
        if current is None or current.body is not stable.body or uncontrolled is None:
            # A fallback answer: nothing fetched to add to.
            key, snapshot, uncontrolled = None, _NO_SNAPSHOT, stable.release_info
        made_from = (stable.body, stable.cache_control, key, beta)
        kept = self._channels.get(channel)
        if kept is not None and kept[0] == made_from:
            self._checked[channel] = (stable, beta, key)
            return kept[1]
        apps = key[2] if key is not None else app_settings.APPS
        web_url = app_settings.GITHUB_WEB_URL
        info = beta_release_info(
            uncontrolled, apps, beta, snapshot.history, snapshot.history_fetches, web_url
        )
        if key is not None:
            controls = key[4][0]
            info = controlled_release_info(
                info,
                channel,
                apps,
                controls,
                snapshot.history,
                snapshot.history_fetches,
                web_url,
                self._now_ms(),
            )
        if info is stable.release_info or info == stable.release_info:
            answer = as_channel(stable, channel)
        else:
            answer = self._encode(info, key[3] if key is not None else NO_NOTICES, channel)
        with self._lock:
            self._channels[channel] = (made_from, answer)
            self._checked[channel] = (stable, beta, key)  # after the answer it names
        self._refiner.offer(answer, self._refined)
        return answer

    def _encode(self, info: ReleaseInfo, notices: Notices, channel: str = STABLE) -> EncodedAnswer:
        self.encoded += 1
        return encode_answer(info, notices, channel)

    def _stable(self) -> EncodedAnswer:
        now = self._monotonic()
        served = self._served
        if served is not None and now < served[1]:
            return served[0]
        answer = self._look(app_settings.STATE_DIR, app_settings.APPS)
        self.signing = app_settings.SIGNING  # read with the others, at most every recheck_s
        # Counted from the end of the look: a slow look must not make the next request look too.
        self._served = (answer, self._monotonic() + self.recheck_s)
        return answer

    def _controls_now(self) -> ControlsKey:
        controls = self._controls()
        return controls, percentages(controls, self._now_ms()) if controls else ()

    def _look(self, state_dir: Path, apps: tuple[AppSpec, ...]) -> EncodedAnswer:
        store = self._store(state_dir)
        notices = self._notices()
        controls: ControlsKey | None = None
        try:
            marker = store.version_marker()
            controls = self._controls_now()
            if self._key == (store.path, marker, apps, notices, controls) and self._answer is not None:
                # The same file at the same version as before a look that failed (it was
                # locked, say): it is readable again all the same.
                self._readable_again(store)
                self._refiner.offer(self._answer, self._refined)
                return self._answer
            snapshot = store.read()
            if marker[0] is None or store.file_identity() is None:
                raise store.missing()
            # The controls again, after the snapshot: a poller writes the ones it keeps for a
            # process that can't read the database before it publishes the releases they apply
            # to, so an answer made of this snapshot has them.
            controls = self._controls_now()
        except Exception as err:  # the endpoint never fails, whatever the state file does
            reason = str(err) if isinstance(err, StateUnavailable) else f"{type(err).__name__}: {err}"
            controls = self._controls_now() if controls is None else controls
            return self._fallback(apps, reason, notices, controls)
        answer = self._make(store.path, (marker[0], snapshot.version), apps, notices, controls, snapshot)
        self._readable_again(store)
        return answer

    def _make(
        self,
        path: Path,
        marker: tuple[tuple[int, ...] | None, int],
        apps: tuple[AppSpec, ...],
        notices: Notices,
        controls: ControlsKey,
        snapshot: StateSnapshot,
    ) -> EncodedAnswer:
        """Encodes and keeps the stable answer ``snapshot`` makes with ``notices`` and ``controls``."""
        web_url = app_settings.GITHUB_WEB_URL
        uncontrolled = build_release_info(apps, snapshot.apps, web_url)
        info = controlled_release_info(
            uncontrolled,
            STABLE,
            apps,
            controls[0],
            snapshot.history,
            snapshot.history_fetches,
            web_url,
            self._now_ms(),
        )
        answer = self._encode(info, notices)
        with self._lock:
            self._key, self._answer = (path, marker, apps, notices, controls), answer
            self._snapshot, self._uncontrolled = snapshot, uncontrolled
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
            for channel, (made_from, kept) in list(self._channels.items()):
                if kept is answer:
                    self._channels[channel] = (made_from, better)
            served = self._served
            if served is not None and served[0] is answer:
                self._served = (better, served[1])

    def _fallback(
        self, apps: tuple[AppSpec, ...], reason: str, notices: Notices, controls: ControlsKey
    ) -> EncodedAnswer:
        with self._lock:
            if self._failure != reason:
                self._failure = reason
                logger.warning(
                    "Craft apps release info: serving the %s answer; the state file can't be read: %s",
                    "last good" if self._answer else "not-fetched-yet",
                    reason,
                )
            key, answer, snapshot = self._key, self._answer, self._snapshot
        if answer is not None and key is not None:
            if key[4] != controls:  # an edit of the controls applies to what the file said last
                return self._make(key[0], key[1], key[2], key[3], controls, snapshot)
            return answer
        nothing = build_release_info(apps, dict[str, AppState](), app_settings.GITHUB_WEB_URL)
        return self._encode(nothing, notices)

    def clear(self) -> None:
        """Forgets every answer: the next request looks at the settings and the state file."""
        with self._lock:
            self._key, self._answer, self._failure, self._served = None, None, None, None
            self._snapshot, self._channels, self._uncontrolled = _NO_SNAPSHOT, {}, None
            self._checked = {}
