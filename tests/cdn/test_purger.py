"""The purge thread's rules on a fake clock (``cdn.purger``): what changed is purged once, by
the lease holder, by one host of the fleet (a real Redis), after the web processes settle;
a failure is retried with a growing backoff within the deadline, then given up with one log
line and the counts in a real state file."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry as Retry_

from craft_apps.cdn.guard import OnceGuard
from craft_apps.cdn.plan import RELEASE_INFO, PurgeRequest
from craft_apps.cdn.purger import SETTLE_S, Purger, Retry
from craft_apps.conf import PurgeTarget
from craft_apps.host.counters import CountersUpdate, read_counters, record
from craft_apps.host.store import StateStore
from craft_apps.testing.clock import FakeClock
from tests.support import free_port

BETA = RELEASE_INFO + "?channel=beta"
TARGET = PurgeTarget(
    "http", "http://127.0.0.1:6081{path}", "PURGE", "https://updates.example.com", 1.0, token="tok"
)


class Edge:
    """The CDN: answers each request with the next scripted outcome (None: taken)."""

    def __init__(self, outcomes: list[str | None] | None = None) -> None:
        self.outcomes = list(outcomes or [])
        self.sent: list[PurgeRequest] = []

    def __call__(self, request: PurgeRequest) -> str | None:
        self.sent.append(request)
        return self.outcomes.pop(0) if self.outcomes else None


def recorder(state_dir: Path) -> tuple[StateStore, Callable[[CountersUpdate], None]]:
    store = StateStore(state_dir)
    store.open_for_writing()
    return store, lambda update: record(store, update)


def purger(
    answers: dict[str, str],
    edge: Edge,
    clock: FakeClock,
    note: Callable[[CountersUpdate], None] = lambda update: None,
    leader: Callable[[], bool] = lambda: True,
    guard: OnceGuard | None = None,
) -> Purger:
    return Purger(
        TARGET,
        answers=lambda: dict(answers),
        is_leader=leader,
        send=edge,
        record=note,
        clock=clock,
        guard=guard,
    )


def test_the_first_look_learns_and_a_change_is_purged_after_the_workers_settle(fake_clock: FakeClock):
    answers = {RELEASE_INFO: 'W/"1"', BETA: 'W/"b1"'}
    edge = Edge()
    running = purger(answers, edge, fake_clock)
    assert running.look() == () and edge.sent == []
    assert running.look() == ()  # nothing changed
    answers[RELEASE_INFO] = 'W/"2"'  # a yank, a release, a rollout step, a notice
    assert running.look() == (RELEASE_INFO,)
    assert running.finish(10)  # the purge runs beside the looks
    assert fake_clock.sleeps == [SETTLE_S]
    assert [(r.method, r.url) for r in edge.sent] == [("PURGE", "http://127.0.0.1:6081" + RELEASE_INFO)]
    assert running.look() == ()  # once per change


def test_only_the_lease_holder_purges_but_every_process_keeps_learning(fake_clock: FakeClock):
    answers, edge, held = {RELEASE_INFO: 'W/"1"'}, Edge(), [False]
    standby = purger(answers, edge, fake_clock, leader=lambda: held[0])
    standby.look()
    answers[RELEASE_INFO] = 'W/"2"'
    assert standby.look() == () and edge.sent == []  # the lease holder's to purge
    held[0] = True  # took over: knows what was served, purges the next change
    answers[RELEASE_INFO] = 'W/"3"'
    assert standby.look() == (RELEASE_INFO,)
    assert standby.finish(10) and len(edge.sent) == 1


def test_one_host_of_the_fleet_purges_a_change(fake_clock: FakeClock, redis_client: redis.Redis):
    answers = {RELEASE_INFO: 'W/"1"', BETA: 'W/"b1"'}
    edges = [Edge(), Edge()]
    hosts = [purger(answers, edge, fake_clock, guard=OnceGuard(redis_client, "test:")) for edge in edges]
    for host in hosts:
        host.look()
    answers.update({RELEASE_INFO: 'W/"2"', BETA: 'W/"b2"'})
    assert [host.look() for host in hosts] == [(RELEASE_INFO, BETA), ()]
    assert all(host.finish(10) for host in hosts)
    assert [len(edge.sent) for edge in edges] == [2, 0]
    assert redis_client.pttl(OnceGuard(redis_client, "test:").key(RELEASE_INFO, 'W/"2"')) > 0


def test_a_redis_that_cant_answer_purges_all_the_same_and_says_so_once(fake_clock: FakeClock, caplog):
    # Nothing listens there; no client-level retries, as the poller's pool has none.
    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.5, retry=Retry_(NoBackoff(), 0))
    answers, edge = {RELEASE_INFO: 'W/"1"'}, Edge()
    running = purger(answers, edge, fake_clock, guard=OnceGuard(dead, "test:"))
    running.look()
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        for etag in ('W/"2"', 'W/"3"'):
            answers[RELEASE_INFO] = etag
            assert running.look() == (RELEASE_INFO,)
    assert running.finish(10)
    assert len(edge.sent) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Redis can't guard a purge" in warnings[0]


def test_a_failure_is_retried_with_backoff_then_taken(fake_clock: FakeClock, state_dir: Path):
    store, note = recorder(state_dir)
    edge = Edge(["PURGE http://127.0.0.1:6081/x: HTTP 500", "PURGE http://127.0.0.1:6081/x: ReadTimeout"])
    running = purger({RELEASE_INFO: 'W/"1"'}, edge, fake_clock, note)
    assert running.purge((RELEASE_INFO,)) is True
    assert len(edge.sent) == 3
    assert fake_clock.sleeps == [0.5, 1.0]  # doubling; jitter of zero at random() = 0.5
    counters = read_counters(store)
    assert dict(counters.purges) == {"purged": 1, "retried": 2, "failed": 0, "unconfirmed": 0}
    assert counters.purge_ok_ms == fake_clock.now_ms() and counters.purge_failed_ms is None


def test_a_purge_never_taken_is_given_up_with_one_line_and_its_reason(
    fake_clock: FakeClock, state_dir: Path, caplog
):
    store, note = recorder(state_dir)
    edge = Edge(["PURGE http://127.0.0.1:6081/x: HTTP 500"] * 10)
    running = purger({RELEASE_INFO: 'W/"1"'}, edge, fake_clock, note)
    with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
        assert running.purge((RELEASE_INFO,)) is False
    assert len(edge.sent) == Retry().attempts
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("craft_apps.cdn")]
    assert len(lines) == 1 and "gave up on PURGE http://127.0.0.1:6081/x: HTTP 500, 4 tries" in lines[0]
    assert "tok" not in lines[0]
    counters = read_counters(store)
    assert dict(counters.purges) == {"purged": 0, "retried": 3, "failed": 1, "unconfirmed": 0}
    assert counters.purge_failed_ms == fake_clock.now_ms()
    assert counters.purge_failure == "PURGE http://127.0.0.1:6081/x: HTTP 500, 4 tries"


def test_retries_stop_at_the_deadline(fake_clock: FakeClock):
    edge = Edge(["HTTP 500"] * 10)
    running = Purger(
        TARGET,
        answers=dict,
        is_leader=lambda: True,
        send=edge,
        record=lambda update: None,
        clock=fake_clock,
        retry=Retry(attempts=10, first_delay_s=4, max_delay_s=16, deadline_s=20),
    )
    started = fake_clock.now_ms()
    assert running.purge((RELEASE_INFO,)) is False
    assert fake_clock.now_ms() - started <= 20_000
    assert fake_clock.sleeps == [4, 8]  # a third wait (16 s) would end past 20 s


def test_an_answer_that_cant_be_read_is_said_once_and_purges_nothing(fake_clock: FakeClock, caplog):
    def broken() -> dict[str, str]:
        raise OSError("disk on fire")

    edge = Edge()
    running = Purger(
        TARGET, answers=broken, is_leader=lambda: True, send=edge, record=lambda u: None, clock=fake_clock
    )
    with caplog.at_level(logging.WARNING, logger="craft_apps.cdn"):
        assert running.look() == () and running.look() == ()
    assert len(caplog.records) == 1 and "disk on fire" in caplog.records[0].getMessage()
    assert edge.sent == []


def test_a_failing_state_file_never_stops_a_purge(fake_clock: FakeClock):
    def broken(update: CountersUpdate) -> None:
        raise OSError("read-only")

    edge = Edge()
    running = purger({}, edge, fake_clock, broken)
    assert running.purge((RELEASE_INFO,)) is True and len(edge.sent) == 1


def test_a_newer_change_of_a_url_takes_over_the_older_ones_retries(fake_clock: FakeClock):
    first_sent, first_answer = threading.Event(), threading.Event()
    sent: list[PurgeRequest] = []

    def edge(request: PurgeRequest) -> str | None:
        sent.append(request)
        if len(sent) == 1:  # the older change's first try: no answer until the newer one is taken
            first_sent.set()
            first_answer.wait(10)
            return "HTTP 500"
        return None

    running = Purger(
        TARGET, answers=dict, is_leader=lambda: True, send=edge, record=lambda u: None, clock=fake_clock
    )
    older = running.start_purge((RELEASE_INFO,), fake_clock.now_ms())
    assert first_sent.wait(10)
    newer = running.start_purge((RELEASE_INFO,), fake_clock.now_ms())
    assert newer[0].result(timeout=10) is True and len(sent) == 2
    first_answer.set()
    assert older[0].result(timeout=10) is True  # no retry: the newer change's purge was taken
    assert len(sent) == 2 and running.finish(10)


def test_a_request_that_raises_is_logged_and_the_others_go_on(fake_clock: FakeClock, caplog):
    taken: list[str] = []

    def edge(request: PurgeRequest) -> str | None:
        if request.drops == RELEASE_INFO:
            raise RuntimeError("a bug")
        taken.append(request.drops)
        return None

    running = Purger(
        TARGET, answers=dict, is_leader=lambda: True, send=edge, record=lambda u: None, clock=fake_clock
    )
    with caplog.at_level(logging.ERROR, logger="craft_apps.cdn"):
        stable, beta = running.start_purge((RELEASE_INFO, BETA), fake_clock.now_ms())
        assert beta.result(timeout=10) is True
        assert isinstance(stable.exception(timeout=10), RuntimeError)
    assert [r.getMessage() for r in caplog.records] == ["Craft apps CDN purge: a purge job failed"]
    assert running.purge((BETA,)) is True and taken == [BETA, BETA]  # the threads still run
