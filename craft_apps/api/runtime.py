"""What one web process keeps between requests, in one ``Runtime``: ``runtime()`` returns it.

A ``Runtime`` holds the clock, one state store per state directory, the endpoint's answer cache
(``answer``), the downloads pages (``page_cache``), other features' caches (``part``), the
notices feed with its reader thread (``content.feed``) and the guarded rollouts' watch. It is
built on the first call; each part reads the settings when used, never at import or build time.
``reset()`` and ``use(runtime)`` forget or replace what it keeps (settings changes, tests).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from django.core.signals import setting_changed
from django.dispatch import receiver

from craft_apps.api.answer import RECHECK_S, AnswerCache
from craft_apps.api.guard_watch import GuardWatch
from craft_apps.api.page_cache import PageCache
from craft_apps.api.representation import Refiner
from craft_apps.conf import app_settings
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.items import Notices
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import Clock, SystemClock


class Clearable(Protocol):
    def clear(self) -> None: ...


Part = TypeVar("Part", bound=Clearable)

# What a kept answer or page is made from, besides the state file and the notices.
RESET_BY = frozenset({"CRAFT_APPS", "BASE_DIR", "TEMPLATES", "USE_TZ", "TIME_ZONE"})


class Runtime:
    """One web process's clock, stores, caches, notices feed and metrics flag."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        recheck_s: float = RECHECK_S,
        refiner: Refiner | None = None,
        feed: NoticesFeed | None = None,
        watch_guard: bool = False,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.feed = feed or NoticesFeed(clock=self.clock)
        self.answers = AnswerCache(
            self.store,
            self.feed.current,
            recheck_s,
            monotonic,
            refiner,
            self.feed.channel_apps,
            self.feed.controls,
            self.clock.now_ms,
            self.feed.controls_changed_ms,
        )
        self.pages = PageCache()
        # The guarded policies' watch (api.guard_watch): started in each web process when it
        # starts (``start_background``, from ``api.startup``), else by the first call of
        # ``runtime()`` (an answer, a probe, the admin), then once a second whether or not
        # requests come; not by a runtime ``use`` puts in place.
        self.guard = GuardWatch(
            self.answers.snapshot, self.feed.channel_apps, self.feed.controls, self.clock.now_ms
        )
        self.watch_guard = watch_guard
        # The endpoint's answers couldn't be counted (an unusable PROMETHEUS_MULTIPROC_DIR):
        # said once, not at every request.
        self.counting_failed = False
        # The endpoint's answer counter for each (status, Content-Encoding), made once.
        self.answer_counters: dict[tuple[int, str | None], Any] = {}
        self.tauri_counters: dict[int, Any] = {}  # the Tauri endpoint's, per status
        self._stores: dict[Path, StateStore] = {}
        self._parts: dict[Callable[[], Any], Any] = {}
        self._lock = threading.Lock()

    def store(self, state_dir: Path) -> StateStore:
        """This process's one store of ``state_dir`` (opened on the first ask)."""
        store = self._stores.get(state_dir)
        if store is None:
            with self._lock:
                store = self._stores.setdefault(state_dir, StateStore(state_dir))
        return store

    def state_store(self) -> StateStore:
        """The store of the configured state directory (the endpoint, the health and metrics
        endpoints share it)."""
        return self.store(app_settings.STATE_DIR)

    def part(self, make: Callable[[], Part]) -> Part:
        """This process's one ``make()``: a feature's cache (the Tauri answers), made on the first ask."""
        found = self._parts.get(make)
        if found is None:
            with self._lock:
                found = self._parts.setdefault(make, make())
        return cast(Part, found)

    def notices(self) -> Notices:
        """What the feed's last look left (never waits on the database, never raises)."""
        return self.feed.current()

    def reset(self) -> None:
        """Forgets every kept answer, page and notice: the next request looks again."""
        self.answers.clear()
        self.pages.clear()
        for part in list(self._parts.values()):
            part.clear()
        self.feed.clear()
        self.counting_failed = False

    def close(self) -> None:
        """Ends the feed's looker thread and closes the stores (a runtime ``use`` put in place)."""
        self.feed.close()
        self.guard.close()
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()


class _Slot:
    """Where this process's runtime is: the one piece of process state at module level here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runtime: Runtime | None = None


_slot = _Slot()


def runtime() -> Runtime:
    """This process's runtime, built on the first call."""
    current = _slot.runtime
    if current is None:
        with _slot.lock:
            if _slot.runtime is None:
                _slot.runtime = Runtime(watch_guard=True)
            current = _slot.runtime
    if current.watch_guard:
        current.guard.start()  # a cheap check once started
    return current


def start_background() -> None:
    """Start this process's notices beat and guarded rollouts' watch now; wait for neither."""
    current = runtime()  # starts the watch
    if current.watch_guard and current.feed.pacer is not None:
        current.feed.pacer.start()


def reset() -> None:
    """Forgets what this process's runtime kept (tests, and a change of settings): every kept
    answer, page and notice; its stores and the feed's thread stay. Django's ``setting_changed``
    runs it for the settings the answers depend on (``RESET_BY``), so ``override_settings`` and
    pytest-django's ``settings`` take effect at once."""
    current = _slot.runtime
    if current is not None:
        current.reset()


def quiet() -> None:
    """Ends the feed's beat and looker threads and the guard's watch of this process's runtime
    and forgets what they left (tests: no look runs against a database torn down between them);
    the next request starts them again."""
    current = _slot.runtime
    if current is not None:
        current.feed.close()
        current.guard.stop()
        current.feed.clear()


@contextmanager
def use(replacement: Runtime) -> Iterator[Runtime]:
    """``replacement`` is this process's runtime for the block; then the one before is back and
    ``replacement`` is closed. Tests and benchmarks pass a runtime of other parts (a fake clock, no
    reuse window, a feed on fake time)."""
    with _slot.lock:
        before, _slot.runtime = _slot.runtime, replacement
    try:
        yield replacement
    finally:
        with _slot.lock:
            _slot.runtime = before
        replacement.close()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in RESET_BY:
        reset()
