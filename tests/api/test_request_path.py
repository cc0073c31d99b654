"""How many calls the endpoint makes from the view to the bytes, cached and uncached.

``PathCounter`` watches one ``views.respond`` under ``sys.setprofile``. A call counts when a
function written in one of the endpoint's modules (``ENDPOINT``) is called directly by
``respond`` or by a counted call; comprehensions and the methods dataclasses generate belong to
their caller. Other modules (the store, the serving rule, settings, feed, channel and coding
parsing, DRF) are tools the path calls, and what they call back is theirs. ``calls``: distinct
functions counted; ``depth``: longest chain; ``modules``: theirs and ``views``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

import craft_apps
from craft_apps.api import views
from craft_apps.api.representation import Refiner
from craft_apps.api.runtime import Runtime
from craft_apps.content.feed import NoticesFeed
from tests.api.support import T0, warm
from tests.content.support import Monotonic

ENDPOINT = frozenset(
    f"craft_apps.api.{name}" for name in ("views", "runtime", "answer", "representation", "serializers")
)
SOURCE = str(Path(craft_apps.__file__).parent)
PARTS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


@dataclass
class PathCounter:
    """The tree of calls below ``respond`` (see the module's docstring)."""

    depths: dict[CodeType, int] = field(default_factory=dict)
    modules: set[str] = field(default_factory=lambda: {"craft_apps.api.views"})
    _live: dict[int, tuple[str, int]] = field(default_factory=dict)  # frame id: (module, depth)

    @property
    def calls(self) -> int:
        return len(self.depths)

    @property
    def depth(self) -> int:
        return max(self.depths.values(), default=0)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return":
            self._live.pop(id(frame), None)
        elif event == "call" and _counted(frame):
            if frame.f_code is views.respond.__code__:
                self._live[id(frame)] = ("craft_apps.api.views", 0)
                return
            module = frame.f_globals["__name__"]
            caller = _caller(frame)
            found = None if caller is None else self._live.get(id(caller))
            if found is None or module not in ENDPOINT:
                return
            depth = found[1] + 1
            self._live[id(frame)] = (module, depth)
            self.depths[frame.f_code] = max(depth, self.depths.get(frame.f_code, 0))
            self.modules.add(module)

    def names(self) -> list[str]:
        return sorted(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}" for code in self.depths)


def _counted(frame: FrameType) -> bool:
    code = frame.f_code
    return code.co_filename.startswith(SOURCE) and code.co_name not in PARTS


def _caller(frame: FrameType) -> FrameType | None:
    """The frame that called ``frame``, past comprehensions and generated methods; None when
    that is not a ``craft_apps`` function (a library calling back)."""
    caller = frame.f_back
    while caller is not None and (caller.f_code.co_name in PARTS or caller.f_code.co_filename == "<string>"):
        caller = caller.f_back
    return caller if caller is not None and _counted(caller) else None


def counted(request: Callable[[], object]) -> PathCounter:
    """The calls ``request`` makes below ``respond``."""
    counter = PathCounter()
    sys.setprofile(counter)
    try:
        request()
    finally:
        sys.setprofile(None)
    return counter


@pytest.fixture
def web(site: Path, install_runtime) -> Iterator[tuple[Runtime, Monotonic]]:
    clock = Monotonic()
    feed = NoticesFeed(runner=lambda look: look())
    refiner = Refiner(start=lambda job: None)  # refinement is off the request path
    yield install_runtime(monotonic=clock, refiner=refiner, feed=feed), clock


def get(channel: str = "") -> Callable[[], HttpResponse]:
    query = f"?channel={channel}" if channel else ""
    request = RequestFactory().get(f"/v1/craft_apps/release_info{query}", HTTP_ACCEPT_ENCODING="br")
    return lambda: views.respond(request)


@pytest.mark.django_db
@pytest.mark.parametrize("channel", ["", "beta"])
def test_a_cached_answer_is_three_calls_from_the_view(site: Path, web, channel: str):
    """``runtime``, ``AnswerCache.answer``, ``EncodedAnswer.content`` (depth 1). Before the
    cache was keyed by plain values (5b0492f, ``answer_cache`` counted too): 4, depth 2."""
    warm(site)
    _, clock = web
    assert get(channel)().status_code == 200  # made, and kept
    clock.advance(0.05)  # within the recheck
    path = counted(get(channel))
    assert path.calls <= 3, (path.depth, path.names())


@pytest.mark.django_db
@pytest.mark.parametrize("channel", ["", "beta"])
def test_an_uncached_answer_is_eight_calls_across_four_modules(site: Path, web, channel: str):
    """A new state version: 8 calls in ``views``, ``runtime``, ``answer`` and ``representation``
    (depth 3, beta 4). Before (5b0492f): 21 calls, beta 23, depth 8, across 5 modules."""
    warm(site)
    runtime, clock = web
    assert get(channel)().status_code == 200
    warm(site, version="0.6.0", fetched_ms=T0 + 1000)  # a new state version
    clock.advance(1.0)
    path = counted(get(channel))
    assert b"0.6.0" in runtime.answers.answer(channel or "stable").body
    assert path.calls <= 8, (path.depth, path.names())
    assert len(path.modules) <= 4, sorted(path.modules)
