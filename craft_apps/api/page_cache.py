"""The downloads pages, rendered once per state version, channel and variant and kept while
what they show is unchanged (a revalidation only moves fetch times). Each channel's pages are
kept apart (by the answer's variant), so asking for one channel never drops the other's.

One ``PageCache`` per web process, held by the process's runtime (``api.runtime``); the pages
themselves are rendered by ``pages``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from craft_apps.api.representation import EncodedAnswer
from craft_apps.kernel.domain import ReleaseInfo


@dataclass(frozen=True)
class RenderedPage:
    body: bytes
    status: int
    cache_control: str
    etag: str


def page_inputs(info: ReleaseInfo) -> tuple[object, ...]:
    """What a page shows of ``info``: not the fetch times, which move at every revalidation."""
    apps = tuple(
        (key, app.name, app.repo, app.latest_release, app.app_last_fetched is not None)
        for key, app in info.apps.items()
    )
    return (info.last_fetched is not None, apps)


class PageCache:
    """Rendered pages of the state version last seen (the endpoint's answer tells the version),
    kept across versions that change nothing a page shows."""

    MAX_PAGES = 512  # apps x detected systems is far below it; a bound all the same

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, _Kept] = {}  # per answer variant (channel)

    def page(self, answer: EncodedAnswer, key: Hashable, render: Callable[[], RenderedPage]) -> RenderedPage:
        """The page ``key`` names for ``answer``: kept, else ``render``'s (kept when a 200)."""
        with self._lock:
            kept = self._kept.setdefault(answer.variant, _Kept())
            if answer is not kept.source:
                inputs = page_inputs(answer.release_info)
                if inputs != kept.inputs:
                    kept.pages = {}
                kept.source, kept.inputs = answer, inputs
            page = kept.pages.get(key)
        if page is not None:
            return page
        page = render()
        if page.status == 200:  # an unknown key is not kept: anyone can make up many
            with self._lock:
                if kept.source is answer and len(kept.pages) < self.MAX_PAGES:
                    kept.pages[key] = page
        return page

    def clear(self) -> None:
        with self._lock:
            self._kept = {}

    def __len__(self) -> int:
        """How many pages are kept, every channel's."""
        with self._lock:
            return sum(len(kept.pages) for kept in self._kept.values())


@dataclass
class _Kept:
    """One channel's pages and the answer they were rendered for."""

    source: EncodedAnswer | None = None
    inputs: tuple[object, ...] | None = None
    pages: dict[Hashable, RenderedPage] = field(default_factory=dict)
