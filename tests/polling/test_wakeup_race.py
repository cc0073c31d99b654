"""Two hosts take the same wake-up in the same instant: whichever wins the claim asks GitHub
once, and the other serves that answer at its next one-second look after it lands, wherever in
the other's tick the claim and the answer fall.

A real redis-server, the fake GitHub and one fake clock. Host A's tick runs in a thread held
inside its GitHub request, so its claim and its answer can be put before any Redis call of host
B's tick: B's first read of the fleet's entries, its read right before claiming, its claim, or
after its tick. Every hand-over waits for an event: nothing depends on how fast a thread runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from craft_apps.api.refresh import request_refresh
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.kernel.domain import Backoff
from craft_apps.kernel.source import FetchOutcome, ReleaseSource
from craft_apps.polling.requests import RefreshRequests
from craft_apps.polling.schedule import REFRESH_GAP_MS
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.server import RedisServer
from tests.polling.wakeup_hosts import PUBLISHED, Host, github_on
from tests.support import PHOTOCRAFT


@pytest.fixture
def github(fake_clock: FakeClock) -> Iterator[FakeGitHub]:
    with github_on(fake_clock) as server:
        yield server


# B's Redis calls in a tick that looks at a refresh, in order; "after": once its tick is done.
POINTS = ("tick read", "check read", "claim", "after")
ORDERS = [(claim, answer) for i, claim in enumerate(POINTS) for answer in POINTS[i:]]
HAND_OVER_S = 10  # a bound for a thread to reach its next step, not a timing


class HeldGitHub:
    """Host A's GitHub: its request starts (the claim is made) and waits to be let go."""

    def __init__(self, real: ReleaseSource, reached: threading.Event) -> None:
        self.real = real
        self.reached = reached
        self.go = threading.Event()

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
        self.reached.set()
        assert self.go.wait(HAND_OVER_S), "host A's request was never let go"
        return self.real.fetch_latest_release(repo, etag)


class HostA:
    """Host A's tick in a thread: claim at one point of B's tick, answer at a later one."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.paused = threading.Event()  # inside its request, or done without one
        self.done = threading.Event()
        self.github = HeldGitHub(host.poller.github, self.paused)
        host.poller.github = self.github
        self.thread: threading.Thread | None = None

    def claim(self) -> None:
        """Starts A's tick and waits until it claimed and asks (or lost the claim)."""
        self.thread = threading.Thread(target=self._tick)
        self.thread.start()
        assert self.paused.wait(HAND_OVER_S)

    def answer(self) -> None:
        """Lets A's request end and waits until its answer is shared."""
        self.github.go.set()
        assert self.done.wait(HAND_OVER_S)
        assert self.thread is not None
        self.thread.join(HAND_OVER_S)

    def claim_and_answer(self) -> None:
        """Both at the same point of B's tick."""
        self.claim()
        self.answer()

    def _tick(self) -> None:
        try:
            self.host.poller.tick()
        finally:
            self.paused.set()
            self.done.set()


def hook_host_b(host: Host, at: dict[str, Callable[[], None]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs ``at[point]`` right before that Redis call of B's tick, and counts the reads."""
    store = host.poller.shared
    assert store is not None
    reads = 0
    real_read, real_claim = store.entries.read, store.claims.claim

    def run(point: str) -> None:
        action = at.pop(point, None)
        if action is not None:
            action()

    def read(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        run(POINTS[0] if reads == 1 else POINTS[1])
        return real_read(*args, **kwargs)

    def claim(*args: Any, **kwargs: Any) -> Any:
        run(POINTS[2])
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(store.entries, "read", read)
    monkeypatch.setattr(store.claims, "claim", claim)


class TwoHosts:
    """Host A and host B on one Redis, their first rounds done, ten minutes later."""

    def __init__(self, root: Path, clock: FakeClock, github: FakeGitHub, server: RedisServer) -> None:
        self.clock, self.github, self.admin = clock, github, server.client()
        self.hosts = [Host(name, root, clock, github, server.client()) for name in ("host-a", "host-b")]
        self.step(0)
        for host in self.hosts:  # the first rounds: one host asks, the other takes its answers
            host.wakeups.look(at_tick=True)
            host.poller.tick()
        self.step(600)

    def deliver(self) -> None:
        """What the webhook view does on host A."""
        request_refresh(
            [PHOTOCRAFT.key],
            now_ms=self.clock.now_ms(),
            host=self.hosts[0].marks,
            fleet=SharedDueMarks(self.admin),
            delivery=None,
        )

    def step(self, seconds: float = 1.0) -> None:
        """One check of each host, as its wait makes one every second."""
        self.clock.advance(seconds)
        for host in self.hosts:
            if host.wakeups.look():
                host.poller.tick()

    def asked(self) -> int:
        """Requests for the app's latest release since the first rounds."""
        return sum(r.path.endswith("/releases/latest") for r in self.github.requests_for(PHOTOCRAFT.repo))


@pytest.mark.parametrize("entry_lapsed", [False, True], ids=["entry kept", "entry lapsed"])
@pytest.mark.parametrize(("claim_at", "answer_at"), ORDERS, ids=[f"{c}-{a}" for c, a in ORDERS])
def test_both_hosts_serve_the_one_answer_a_second_after_it_lands(
    tmp_path: Path,
    fake_clock: FakeClock,
    github: FakeGitHub,
    redis_server: RedisServer,
    redis_client,
    monkeypatch: pytest.MonkeyPatch,
    claim_at: str,
    answer_at: str,
    entry_lapsed: bool,
):
    fleet = TwoHosts(tmp_path, fake_clock, github, redis_server)
    host_a, host_b = HostA(fleet.hosts[0]), fleet.hosts[1]
    if entry_lapsed:  # the claim is then the first write of the app's entry, and B reads it
        redis_client.delete(f"craftApps:releases:app:{PHOTOCRAFT.key}")
        fleet.step(0)
    asked_before = fleet.asked()
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED))
    fleet.deliver()
    fake_clock.advance(1)
    assert host_a.host.wakeups.look() and host_b.wakeups.look(), "both took the wake-up"

    at = {claim_at: host_a.claim}
    at[answer_at] = host_a.claim_and_answer if answer_at == claim_at else host_a.answer
    hook_host_b(host_b, at, monkeypatch)
    host_b.poller.tick()
    for point in POINTS:  # what B's tick didn't reach (it skipped the app), in order
        action = at.pop(point, None)
        if action is not None:
            action()
    monkeypatch.undo()

    fleet.step()
    assert [host.shows("0.6.0") for host in fleet.hosts] == [True, True], "at the next look"
    for _ in range(30):
        fleet.step()
    assert fleet.asked() - asked_before == 1, "one host asked GitHub"


@pytest.mark.parametrize("answered", [True, False], ids=["answer lands", "no answer"])
def test_another_hosts_claim_keeps_the_refresh_pending_until_its_answer(answered: bool):
    requests = RefreshRequests()
    assert requests.take("photocraft", 1_000, 1_000)
    claim_ms, before_ms = 1_500, 500  # the other host's claim; the last answer before it
    assert not requests.due("photocraft", claim_ms, Backoff(), 2_000, before_ms)
    assert requests.awaiting(2_000), "still checked every second"
    if answered:
        assert not requests.due("photocraft", claim_ms, Backoff(), 3_000, claim_ms + 300)
        assert requests.pending() == {} and not requests.awaiting(3_000)
        return
    assert not requests.due("photocraft", claim_ms, Backoff(), 2_000 + REFRESH_GAP_MS - 1, before_ms)
    assert requests.due("photocraft", claim_ms, Backoff(), 2_000 + REFRESH_GAP_MS, before_ms), "asks itself"
