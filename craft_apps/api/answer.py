"""The endpoint's answer: what it lists, and the cache that keeps it encoded per key.

``build_release_info(apps, states, web_url)`` returns every configured app merged with what the
host knows. ``AnswerCache.answer(channel)`` (one cache per web process, held by ``api.runtime``)
returns a channel's ``EncodedAnswer``: the kept one while its ``AnswerKey`` (plain values: the
state file's version, the notices, the controls, the channel) holds, else one made anew, and
the last good one while the state file can't be read. See docs/endpoint.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path

from craft_apps.api.channels import STABLE, variant
from craft_apps.api.representation import EncodedAnswer, Refiner, SignatureSlot, answer_order, encode_answer
from craft_apps.conf import app_settings
from craft_apps.content.items import Notices
from craft_apps.controls.rules import Control, percentages
from craft_apps.host.store import StateSnapshot, StateStore, StateUnavailable
from craft_apps.kernel.domain import (
    NO_CHANNEL_APPS,
    AppReleaseInfo,
    AppSpec,
    AppState,
    Channel,
    ChannelApps,
    ReleaseInfo,
)
from craft_apps.kernel.instants import ms_to_datetime
from craft_apps.kernel.serving import HostReleases, next_policy_change_ms, policy_steps_reached_ms, serve
from craft_apps.kernel.signing import SigningConfig

RECHECK_S = 0.1  # the endpoint looks at the state file at most this often: a change shows within it

# The endpoint's own logger name, which a site's LOGGING may route.
logger = logging.getLogger("craft_apps.api.views")

Marker = tuple[tuple[int, ...] | None, int]  # the state file's (identity, version)


def build_release_info(apps: Iterable[AppSpec], states: Mapping[str, AppState], web_url: str) -> ReleaseInfo:
    """Every app of ``apps`` with its state in ``states``, in key order.

    An app never fetched has no ``latest_release`` and no ``app_last_fetched``; ``last_fetched``
    is the oldest ``app_last_fetched``, None until every app was fetched (a cold host's answer is
    never cached downstream). A stored fetch of another repository than the app's is listed as
    never fetched (``AppState.as_state_of``).
    """
    listed: dict[str, AppReleaseInfo] = {}
    fetched_times: list[int | None] = []
    for app in sorted(apps, key=attrgetter("key")):
        stored = states.get(app.key)
        state = None if stored is None else stored.as_state_of(app.repo, web_url)
        fetched_ms = state.fetched_ms if state else None
        fetched_times.append(fetched_ms)
        listed[app.key] = AppReleaseInfo(
            name=app.name,
            repo=app.repo,
            latest_release=state.latest_release if state and fetched_ms is not None else None,
            app_last_fetched=ms_to_datetime(fetched_ms) if fetched_ms is not None else None,
        )
    known = [t for t in fetched_times if t is not None]
    oldest = ms_to_datetime(min(known)) if known and len(known) == len(fetched_times) else None
    return ReleaseInfo(apps=listed, last_fetched=oldest)


@dataclass(frozen=True)
class AnswerKey:
    """What an answer is made of: the same key, the same answer.

    The controls with each rollout's percentage now make an edit or a schedule's step show in
    the next answer, also while the state file can't be read (applied to the last good snapshot).
    ``changed_ms`` (when the site's controls and notices were last written; None unsigned) moves a
    signed answer's order on. A release policy's schedule moves with the releases' publish times:
    the answer made with one stands until its next step (``Kept.until_ms``).
    """

    channel: str
    path: Path  # the state file
    marker: Marker
    apps: tuple[AppSpec, ...]
    notices: Notices
    controls: tuple[Control, ...]
    percentages: tuple[int, ...]
    changed_ms: int | None
    on_channel: frozenset[str] = frozenset()  # the apps on this channel (none for the stable one)


@dataclass(frozen=True)
class Kept:
    """A channel's answer, its key, until when a policy lets it stand and until when (monotonic
    seconds) it is served without looking at the state file."""

    key: AnswerKey
    answer: EncodedAnswer
    until_ms: int | None
    fresh_until: float


@dataclass(frozen=True)
class Good:
    """A snapshot of the state file and the host's releases read from it."""

    path: Path
    marker: Marker
    apps: tuple[AppSpec, ...]
    snapshot: StateSnapshot
    releases: HostReleases


@dataclass(frozen=True)
class Inputs:
    """What a request found: the snapshot to serve, the stable answer's key now, the apps on
    each channel and the time."""

    good: Good
    key: AnswerKey
    channel_apps: ChannelApps
    now_ms: int


_NO_SNAPSHOT = StateSnapshot(0)


class AnswerCache:
    """Each channel's answer kept with its key, and the last good snapshot of the state file.

    A channel's answer is served without a look for ``recheck_s`` (0.1 s), counted from the end of
    the look: the look costs as much as the rest of the request, and a change still shows within a
    tenth of a second. ``override_settings`` takes effect at once (the runtime clears the cache on
    Django's ``setting_changed``).
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
        # What the notices feed's background read left: these never wait and never raise.
        self._notices, self._channel_apps, self._controls = notices, channel_apps, controls
        self._controls_changed_ms = controls_changed_ms
        self._now_ms = now_ms  # the wall clock a rollout's schedule is read on
        self._monotonic = monotonic
        self._refiner = refiner or Refiner()
        self._lock = threading.Lock()
        self._kept: dict[str, Kept] = {}  # per channel
        self._good: Good | None = None  # the last snapshot read
        self._open: tuple[Path, StateStore] | None = None  # the state directory and its store
        self._failure: str | None = None  # why the state file can't be read, if it can't
        self.encoded = 0  # answers encoded (JSON, gzip, brotli), all channels
        self.signing: SigningConfig | None = None  # the keys that sign what was served

    def answer(self, channel: str = STABLE) -> EncodedAnswer:
        """The answer of ``channel`` (one of ``channels.CHANNELS``): the kept one while it is fresh
        or its key holds, else one made anew from the state file, or from the last good snapshot
        (else none) while the file can't be read, with one log line per reason."""
        kept = self._kept.get(channel)
        if kept is not None and self._monotonic() < kept.fresh_until:
            return kept.answer
        state_dir, apps = app_settings.STATE_DIR, app_settings.APPS
        self.signing = app_settings.SIGNING  # read with the others, at most every recheck_s
        if self._open is None or self._open[0] != state_dir:
            self._open = (state_dir, self._store(state_dir))
        store, notices, good = self._open[1], self._notices(), self._good
        try:
            marker = store.version_marker()
            if good is None or (good.path, good.marker, good.apps) != (store.path, marker, apps):
                snapshot = store.read()
                if marker[0] is None or store.file_identity() is None:
                    raise store.missing()
                web_url = app_settings.GITHUB_WEB_URL
                listing = build_release_info(apps, snapshot.apps, web_url)
                releases = HostReleases(apps, listing, web_url, snapshot.history, snapshot.history_fetches)
                good = Good(store.path, (marker[0], snapshot.version), apps, snapshot, releases)
                self._good = good
            if self._failure is not None:
                self._readable_again(store.path)
        except Exception as err:  # the endpoint never fails, whatever the state file does
            good = self._unreadable(store.path, apps, err)
        # The controls after the snapshot: a poller writes the ones it keeps for a process that
        # can't read the database before it publishes the releases they apply to.
        controls, now_ms = self._controls(), self._now_ms()
        shares = percentages(controls, now_ms) if controls else ()
        # Only a signature carries the order: unsigned, an edit that changes no byte encodes nothing.
        changed_ms = self._controls_changed_ms() if self.signing is not None else None
        key = AnswerKey(
            STABLE, good.path, good.marker, good.apps, notices, controls, shares, changed_ms, frozenset()
        )
        inputs = Inputs(good, key, self._channel_apps(), now_ms)
        return self._made(channel, inputs)

    def _made(self, channel: str, now: Inputs) -> EncodedAnswer:
        """``channel``'s kept answer while its key holds, else one made anew (another channel's
        takes the stable answer's bytes when it lists the same releases); kept and offered to the
        refiner either way."""
        good, controls = now.good, now.key.controls
        channel_apps = NO_CHANNEL_APPS if channel == STABLE else now.channel_apps
        on = frozenset[str]() if channel == STABLE else channel_apps.apps_on(Channel(channel))
        key = replace(now.key, channel=channel, on_channel=on)
        kept = self._kept.get(channel)
        if kept is not None and kept.key == key and (kept.until_ms is None or now.now_ms < kept.until_ms):
            answer, until_ms = kept.answer, kept.until_ms
        else:
            info = serve(Channel(channel), good.releases, channel_apps, controls, now.now_ms)
            until_ms = next_policy_change_ms(good.releases, controls, now.now_ms) if controls else None
            stable = None if channel == STABLE else self._made(STABLE, now)
            if stable is not None and info == stable.release_info:
                answer = replace(stable, variant=variant(channel), signature=SignatureSlot())
            else:
                self.encoded += 1
                history = good.snapshot.history_fetches.values()
                order = answer_order(info, controls, now.now_ms, key.changed_ms, history)
                if controls:
                    order = max(order, policy_steps_reached_ms(good.releases, controls, now.now_ms))
                answer = encode_answer(info, key.notices, channel, order)
        with self._lock:
            self._kept[channel] = Kept(key, answer, until_ms, self._monotonic() + self.recheck_s)
        self._refiner.offer(answer, self._refined)
        return self._kept[channel].answer  # the refined one when the refiner ran at once

    def snapshot(self) -> StateSnapshot:
        """The state file as the stable answer was last made from it (the endpoint's own look,
        at most every ``recheck_s``): what the admin offers and checks tags against, with no
        read of its own. Empty (version 0) while the file was never read."""
        self.answer(STABLE)
        good = self._good
        return _NO_SNAPSHOT if good is None else good.snapshot

    def _readable_again(self, path: Path) -> None:
        with self._lock:
            if self._failure is not None:
                logger.info("Craft apps state file is readable again: %s", path)
                self._failure = None

    def _unreadable(self, path: Path, apps: tuple[AppSpec, ...], err: Exception) -> Good:
        """The last good snapshot (else an empty one) to serve while the file can't be read."""
        reason = str(err) if isinstance(err, StateUnavailable) else f"{type(err).__name__}: {err}"
        with self._lock:
            good = self._good
            if self._failure != reason:
                self._failure = reason
                logger.warning(
                    "Craft apps release info: serving the %s answer; the state file can't be read: %s",
                    "last good" if good else "not-fetched-yet",
                    reason,
                )
        if good is not None:
            return good
        web_url = app_settings.GITHUB_WEB_URL
        nothing = build_release_info(apps, dict[str, AppState](), web_url)
        return Good(path, (None, 0), apps, _NO_SNAPSHOT, HostReleases(apps, nothing, web_url))

    def _refined(self, answer: EncodedAnswer, better: EncodedAnswer) -> None:
        """Keeps ``better`` in place of ``answer`` wherever ``answer`` is still kept."""
        with self._lock:
            for channel, kept in list(self._kept.items()):
                if kept.answer is answer:
                    self._kept[channel] = replace(kept, answer=better)

    def clear(self) -> None:
        """Forgets every answer: the next request looks at the settings and the state file."""
        with self._lock:
            self._kept, self._good, self._open, self._failure = {}, None, None, None
