"""The endpoint's answer, kept per state version and channel and encoded once in every coding.

``AnswerCache`` (one per web process, held by ``api.runtime``) takes the state file's store and
what the notices feed's background read left (notices, release controls, the apps on each
channel); ``answer(channel)`` returns that channel's ``EncodedAnswer``, made anew only when one of
them changes, the last good one while the state file can't be read. ``AnswerKey``, ``answer`` and
``_encode`` say what an answer is kept for, how channels share bytes and how an answer's order is
made. See docs/endpoint.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from craft_apps.api.answer import RECHECK_S, build_release_info
from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.channels import STABLE, variant
from craft_apps.api.private_links import served_privately
from craft_apps.api.representation import EncodedAnswer, Refiner, SignatureSlot, answer_order, represent
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.content.items import NO_NOTICES, Notices
from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.controls import Control, percentages
from craft_apps.kernel.domain import (
    NO_CHANNEL_APPS,
    AppSpec,
    AppState,
    Channel,
    ChannelApps,
    HistoryFetch,
    ReleaseInfo,
)
from craft_apps.kernel.serving import HostReleases, next_policy_change_ms, policy_steps_reached_ms, serve
from craft_apps.kernel.signing import SigningConfig

# The endpoint's own logger name, which a site's LOGGING may route: these lines were logged
# from ``views`` before the cache had a module of its own.
logger = logging.getLogger("craft_apps.api.views")


def encode_answer(
    release_info: ReleaseInfo, notices: Notices = NO_NOTICES, channel: str = STABLE, order_ms: int = 0
) -> EncodedAnswer:
    # A private app's links point at this server's asset view (``private_links``).
    release_info = served_privately(release_info, app_settings.APPS)
    response: dict[str, Any] = {"success": True, "release_info": release_info, **notices.contract()}
    data = GetCraftAppsReleaseInfoResponseSerializer(response).data
    cache_control = CACHEABLE if release_info.last_fetched is not None else NOT_CACHEABLE
    answer = replace(represent(data, cache_control, release_info), order_ms=order_ms)
    return answer if channel == STABLE else replace(answer, variant=variant(channel))


def as_channel(answer: EncodedAnswer, channel: str) -> EncodedAnswer:
    """``answer``'s bytes as ``channel``'s answer (its own variant and signature)."""
    if channel == STABLE:
        return answer
    return replace(answer, variant=variant(channel), signature=SignatureSlot())


_NO_SNAPSHOT = StateSnapshot(0)


@dataclass(frozen=True)
class ControlsNow:
    """The controls an answer is made with, each one's percentage then, and when the site's
    controls and notices were last written (None: not known), which its order reflects."""

    controls: tuple[Control, ...]
    percentages: tuple[int, ...]
    changed_ms: int | None


@dataclass(frozen=True)
class AnswerKey:
    """What a stable answer is made of: the same key, the same answer.

    The release controls (read from the database with the notices, in the background) are part of
    it, with each rollout's percentage now, so an edit or a schedule's step makes the next answer
    anew (once per channel), and an edit made while the state file can't be read is applied to the
    last good snapshot: a yank never waits for the file. A release policy's schedule moves with the
    releases' publish times, which the key doesn't hold: the answer made with one stands until its
    next step (``serving.next_policy_change_ms``). When the site's controls and notices were last
    written (``ControlsNow.changed_ms``) is part of it too, so an edit that changes no byte still
    moves the answer's order on.
    """

    path: Path  # the state file
    marker: tuple[tuple[int, ...] | None, int]  # its version marker
    apps: tuple[AppSpec, ...]
    notices: Notices
    controls: ControlsNow


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
        channel_apps: Callable[[], ChannelApps] = lambda: NO_CHANNEL_APPS,
        controls: Callable[[], tuple[Control, ...]] = tuple,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        controls_changed_ms: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.recheck_s = recheck_s
        self._store = store  # the process's one store of a state directory
        self._notices = notices  # what the feed's background look left; never waits, never raises
        self._channel_apps = channel_apps  # as the notices: what the same look left
        self._controls = controls  # as the notices: what the same look left
        self._now_ms = now_ms  # the wall clock a rollout's schedule is read on
        self._controls_changed_ms = controls_changed_ms  # as the notices: what the same look left
        self._monotonic = monotonic
        self._refiner = refiner or Refiner()
        self._lock = threading.Lock()
        self._key: AnswerKey | None = None
        # When a release policy's schedule moves a release on next: the answer is made anew then.
        self._until_ms: int | None = None
        self._answer: EncodedAnswer | None = None  # the last good one
        self._snapshot = _NO_SNAPSHOT  # what the last good one was made from
        self._uncontrolled: ReleaseInfo | None = None  # its release info before the controls
        # Per channel but the stable one: (what it was made from, the answer).
        self._channels: dict[str, tuple[object, EncodedAnswer]] = {}
        # Per channel, the stable answer, the apps on the channels and the key it was last checked with.
        self._checked: dict[str, tuple[EncodedAnswer, ChannelApps, object]] = {}
        self.encoded = 0  # answers encoded (JSON, gzip, brotli), all channels
        self._failure: str | None = None
        # What was served last, and until when it stands without a look.
        self._served: tuple[EncodedAnswer, float] | None = None
        self.signing: SigningConfig | None = None  # the keys that sign what was served

    def answer(self, channel: str = STABLE) -> EncodedAnswer:
        """The answer of ``channel`` (one of ``channels.CHANNELS``).

        What each channel lists is ``serving.serve``'s: this class only keeps and encodes it. The
        stable answer is made as before channels; another channel's is made from the same snapshot
        of the state file, once per stable answer and set of apps on the channels, and when it lists
        the same releases it takes the stable answer's bytes (and brotli and gzip forms) as they
        are: nothing is encoded twice.
        """
        stable = self._stable()
        if channel == STABLE:
            return stable
        channel_apps = self._channel_apps()
        # The same objects as at the last request: what was made from them stands (no compare).
        checked = self._checked.get(channel)
        if (
            checked is not None
            and checked[0] is stable
            and checked[1] is channel_apps
            and checked[2] is self._key
        ):
            kept = self._channels.get(channel)
            if kept is not None:
                return kept[1]
        with self._lock:
            key, snapshot, current, uncontrolled = self._key, self._snapshot, self._answer, self._uncontrolled
            until_ms = self._until_ms
        if current is None or current.body is not stable.body or uncontrolled is None:
            # A fallback answer: nothing fetched to add to.
            key, snapshot, uncontrolled = None, _NO_SNAPSHOT, stable.release_info
        # The apps on this channel only: another channel's setting changes nothing here.
        made_from = (stable.body, stable.cache_control, key, channel_apps.apps_on(Channel(channel)), until_ms)
        kept = self._channels.get(channel)
        if kept is not None and kept[0] == made_from:
            self._checked[channel] = (stable, channel_apps, key)
            return kept[1]
        answer = self._channel_answer(Channel(channel), stable, key, snapshot, uncontrolled, channel_apps)
        with self._lock:
            self._channels[channel] = (made_from, answer)
            self._checked[channel] = (stable, channel_apps, key)  # after the answer it names
        self._refiner.offer(answer, self._refined)
        return answer

    def snapshot(self) -> StateSnapshot:
        """The state file as the stable answer was last made from it (the endpoint's own look,
        at most every ``recheck_s``): what the admin offers and checks tags against, with no
        read of its own. Empty (version 0) while the file was never read."""
        self._stable()
        with self._lock:
            return self._snapshot

    def _channel_answer(
        self,
        channel: Channel,
        stable: EncodedAnswer,
        key: AnswerKey | None,
        snapshot: StateSnapshot,
        uncontrolled: ReleaseInfo,
        channel_apps: ChannelApps,
    ) -> EncodedAnswer:
        """``channel``'s answer, made from what the stable one was made of (``key`` None: a
        fallback, with nothing fetched and no controls); the stable bytes when it lists the same."""
        apps = key.apps if key is not None else app_settings.APPS
        history = snapshot.history, snapshot.history_fetches
        releases = HostReleases(apps, uncontrolled, app_settings.GITHUB_WEB_URL, *history)
        if key is None:
            info = serve(channel, releases, channel_apps, (), 0)
        else:
            info = serve(channel, releases, channel_apps, key.controls.controls, self._now_ms())
        if info is stable.release_info or info == stable.release_info:
            return as_channel(stable, channel)
        notices = key.notices if key is not None else NO_NOTICES
        controls = key.controls if key is not None else None
        return self._encode(info, notices, channel, controls, snapshot.history_fetches.values(), releases)

    def _encode(
        self,
        info: ReleaseInfo,
        notices: Notices,
        channel: str,
        controls: ControlsNow | None,
        history: Iterable[HistoryFetch] = (),
        releases: HostReleases | None = None,
    ) -> EncodedAnswer:
        """Encodes ``info`` with its order: what it is made of, and the steps a release policy
        took by now on ``releases`` (the ones it was served from).

        The order (``representation.answer_order``), which the signature carries, comes from the
        snapshot's fetches, the controls and their steps reached, and when the site's controls and
        notices were last written (``controls_changed_ms``: None while the feed hands none over),
        so any process holding the same state signs the same order. ``encoded`` counts the answers
        encoded (the benchmark prints it per state version).
        """
        self.encoded += 1
        made_with, changed_ms = (
            (controls.controls, controls.changed_ms) if controls is not None else ((), None)
        )
        now_ms = self._now_ms()
        order = answer_order(info, made_with, now_ms, changed_ms, history)
        if releases is not None and made_with:
            order = max(order, policy_steps_reached_ms(releases, made_with, now_ms))
        return encode_answer(info, notices, channel, order)

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

    def _controls_now(self) -> ControlsNow:
        controls = self._controls()
        shares = percentages(controls, self._now_ms()) if controls else ()
        # Only a signature carries the order: unsigned, an edit that changes no byte encodes nothing.
        changed_ms = self._controls_changed_ms() if app_settings.SIGNING is not None else None
        return ControlsNow(controls, shares, changed_ms)

    def _look(self, state_dir: Path, apps: tuple[AppSpec, ...]) -> EncodedAnswer:
        store = self._store(state_dir)
        notices = self._notices()
        controls: ControlsNow | None = None
        try:
            marker = store.version_marker()
            controls = self._controls_now()
            if (
                self._key == AnswerKey(store.path, marker, apps, notices, controls)
                and self._answer is not None
                and (self._until_ms is None or self._now_ms() < self._until_ms)
            ):
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
        controls: ControlsNow,
        snapshot: StateSnapshot,
    ) -> EncodedAnswer:
        """Encodes and keeps the stable answer ``snapshot`` makes with ``notices`` and ``controls``."""
        web_url = app_settings.GITHUB_WEB_URL
        uncontrolled = build_release_info(apps, snapshot.apps, web_url)
        releases = HostReleases(apps, uncontrolled, web_url, snapshot.history, snapshot.history_fetches)
        now_ms = self._now_ms()
        info = serve(Channel.STABLE, releases, NO_CHANNEL_APPS, controls.controls, now_ms)
        answer = self._encode(info, notices, STABLE, controls, snapshot.history_fetches.values(), releases)
        until_ms = next_policy_change_ms(releases, controls.controls, now_ms) if controls.controls else None
        with self._lock:
            self._key, self._answer = AnswerKey(path, marker, apps, notices, controls), answer
            self._until_ms = until_ms
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
        self, apps: tuple[AppSpec, ...], reason: str, notices: Notices, controls: ControlsNow
    ) -> EncodedAnswer:
        with self._lock:
            if self._failure != reason:
                self._failure = reason
                logger.warning(
                    "Craft apps release info: serving the %s answer; the state file can't be read: %s",
                    "last good" if self._answer else "not-fetched-yet",
                    reason,
                )
            key, answer, snapshot, until_ms = self._key, self._answer, self._snapshot, self._until_ms
        if answer is not None and key is not None:
            stepped = until_ms is not None and self._now_ms() >= until_ms  # a policy's step
            if key.controls != controls or stepped:  # applies to what the file said last, as an edit
                return self._make(key.path, key.marker, key.apps, key.notices, controls, snapshot)
            return answer
        nothing = build_release_info(apps, dict[str, AppState](), app_settings.GITHUB_WEB_URL)
        return self._encode(nothing, notices, STABLE, controls)

    def clear(self) -> None:
        """Forgets every answer: the next request looks at the settings and the state file."""
        with self._lock:
            self._key, self._answer, self._failure, self._served = None, None, None, None
            self._snapshot, self._channels, self._uncontrolled = _NO_SNAPSHOT, {}, None
            self._checked = {}
