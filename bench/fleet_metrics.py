"""What a simulated fleet served, as its hosts' state files show it.

``ServedLog`` is told of every release published on the GitHub stand-in and of every committed
write to a host's state file (the moment that host's endpoint starts serving it). From those it
derives how long each release took to reach every host, and the oldest fetch any host served.

Invariant: a release counts as shown by a host from the first write of that release or a later
one of the same app, so a release overtaken before it spread still gets a (bounded) delay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.stats import percentile
from craft_apps.host.store import Fence, StateStore
from craft_apps.kernel.domain import AppState


@dataclass(frozen=True)
class Propagation:
    published: int  # releases published during the run (the initial ones not counted)
    everywhere: int  # of those, shown by every live host by the end
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    cold_start_s: float | None  # until every live host served every app
    max_staleness_s: float | None  # the oldest fetch any live host served, at any moment


@dataclass
class _Release:
    app: str
    tag: str
    seq: int
    published_ms: int
    shown_ms: dict[str, int] = field(default_factory=dict)


class ServedLog:
    def __init__(self, apps: Iterable[str], start_ms: int) -> None:
        self._start_ms = start_ms
        self._releases: dict[tuple[str, str], _Release] = {}
        self._by_seq: dict[tuple[str, int], _Release] = {}
        self._next_seq = dict.fromkeys(apps, 0)
        self._shown_seq: dict[tuple[str, str], int] = {}  # (host, app) -> newest seq shown
        self._fetched_ms: dict[tuple[str, str], int] = {}  # (host, app) -> fetch time served
        self._first_complete_ms: dict[str, int] = {}  # host -> when it first served every app
        self._max_staleness_ms: dict[str, int] = {}  # host -> the oldest fetch it served

    def published(self, app: str, tag: str, at_ms: int) -> None:
        seq = self._next_seq[app]
        self._next_seq[app] = seq + 1
        release = _Release(app, tag, seq, at_ms)
        self._releases[(app, tag)] = release
        self._by_seq[(app, seq)] = release

    def written(self, host: str, app: str, state: AppState, at_ms: int) -> None:
        """A write to ``host``'s state file committed at ``at_ms``."""
        key = (host, app)
        previous = self._fetched_ms.get(key)
        if previous is not None:
            self._note_staleness(host, at_ms - previous)
        if state.fetched_ms is not None:
            self._fetched_ms[key] = state.fetched_ms
        tag = state.latest_release.tag if state.latest_release is not None else None
        release = self._releases.get((app, tag)) if tag is not None else None
        if release is not None:
            shown = self._shown_seq.get(key, -1)
            for seq in range(shown + 1, release.seq + 1):
                self._by_seq[(app, seq)].shown_ms.setdefault(host, at_ms)
            self._shown_seq[key] = max(shown, release.seq)
        if host not in self._first_complete_ms and all(
            (host, other) in self._shown_seq for other in self._next_seq
        ):
            self._first_complete_ms[host] = at_ms

    def shown_tag(self, host: str, app: str) -> str | None:
        seq = self._shown_seq.get((host, app))
        return None if seq is None else self._by_seq[(app, seq)].tag

    def latest_tag(self, app: str) -> str:
        return self._by_seq[(app, self._next_seq[app] - 1)].tag

    def figures(self, live_hosts: list[str], end_ms: int) -> Propagation:
        for host in live_hosts:
            for app in self._next_seq:
                fetched = self._fetched_ms.get((host, app))
                if fetched is not None:
                    self._note_staleness(host, end_ms - fetched)
        new = [r for r in self._by_seq.values() if r.seq > 0]
        delays = [
            max(r.shown_ms[h] for h in live_hosts) - r.published_ms
            for r in new
            if all(h in r.shown_ms for h in live_hosts)
        ]
        complete = [self._first_complete_ms.get(h) for h in live_hosts]
        staleness = [self._max_staleness_ms[h] for h in live_hosts if h in self._max_staleness_ms]
        p50, p95 = percentile(delays, 0.5), percentile(delays, 0.95)
        return Propagation(
            published=len(new),
            everywhere=len(delays),
            p50_s=None if p50 is None else p50 / 1000,
            p95_s=None if p95 is None else p95 / 1000,
            max_s=max(delays) / 1000 if delays else None,
            cold_start_s=None
            if not complete or None in complete
            else (max(t for t in complete if t is not None) - self._start_ms) / 1000,
            max_staleness_s=max(staleness) / 1000 if staleness else None,
        )

    def _note_staleness(self, host: str, age_ms: int) -> None:
        if age_ms > self._max_staleness_ms.get(host, -1):
            self._max_staleness_ms[host] = age_ms


class RecordingStateStore(StateStore):
    """The real state file, reporting each committed app write to a ``ServedLog``."""

    def __init__(self, state_dir: Path, *, host: str, log: ServedLog, now_ms: Callable[[], int]) -> None:
        super().__init__(state_dir)
        self._host = host
        self._log = log
        self._now_ms = now_ms

    def put_app(self, key: str, state: AppState, *, fence: Fence) -> bool:
        written = super().put_app(key, state, fence=fence)
        if written:
            self._log.written(self._host, key, state, self._now_ms())
        return written
