"""The poller lease: one holder, fenced custody, blackouts counted as loss before a takeover."""

from __future__ import annotations

import logging
import multiprocessing
import queue
import sqlite3
import threading
from pathlib import Path

import pytest

from craft_apps.host.lease import Lease, LeaseKeeper, make_holder
from craft_apps.host.store import (
    FenceRejected,
    StateFileMissing,
    StateSnapshot,
    StateStore,
    StateUnavailable,
)
from craft_apps.kernel.domain import Backoff, LeaseTiming
from craft_apps.testing.clock import START_MS, FakeClock
from tests.host import _race
from tests.host.support import fetched

TTL, RETRY = 30_000, 2_000


def lease_on(store: StateStore, clock: FakeClock, holder: str) -> Lease:
    return Lease(store, holder=holder, clock=clock)


def number(lease: Lease) -> int | None:
    """The fence number the lease holds, None when it holds none."""
    return None if lease.fence is None else lease.fence.number


def lock_writes(store: StateStore) -> sqlite3.Connection:
    """Another connection holding the write lock: the state file is unreachable for writes."""
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    return blocker


class StoppingAfter(FakeClock):
    """A clock whose sleep reports a stop request (as SystemClock does) from its ``sleeps``-th on."""

    def __init__(self, sleeps: int = 1) -> None:
        super().__init__()
        self.left = sleeps

    def sleep(self, seconds: float) -> bool:
        super().sleep(seconds)
        self.left -= 1
        return self.left > 0


# ---- timing -------------------------------------------------------------------------------------


def test_default_timing() -> None:
    timing = LeaseTiming()
    assert (timing.ttl_ms, timing.retry_ms) == (TTL, RETRY)
    assert (timing.renew_every_ms, timing.renew_deadline_ms) == (10_000, 20_000)


@pytest.mark.parametrize(
    ("ttl_ms", "retry_ms", "message"),
    [
        (3_000, 2_000, "TTL 3000 ms, renew deadline 2000 ms, retry 2000 ms"),
        (1, 1, "TTL 1 ms, renew deadline 0 ms, retry 1 ms"),
        (0, 2_000, "ttl_ms must be a positive"),
        (30_000, -1, "retry_ms must be a positive"),
        (30_000, True, "retry_ms must be a positive"),
    ],
)
def test_timing_is_validated(ttl_ms: int, retry_ms: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaseTiming(ttl_ms=ttl_ms, retry_ms=retry_ms)


def test_the_smallest_valid_timing_is_accepted() -> None:
    assert LeaseTiming(ttl_ms=3_700, retry_ms=2_000).renew_deadline_ms == 2_466


def test_holder_names_are_host_pid_random() -> None:
    host, pid, token = make_holder().split(":")
    assert host and int(pid) > 0 and len(token) == 8
    assert make_holder() != make_holder()


# ---- acquire, renew, expire ---------------------------------------------------------------------


def test_a_cold_lease_has_one_holder(store: StateStore, fake_clock: FakeClock) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.current() is None
    assert a.try_acquire()
    assert number(a) == 1 and a.is_held()
    assert a.current() == ("a", 1, START_MS + TTL)
    assert not b.try_acquire()
    assert b.fence is None and not b.is_held()
    assert a.try_acquire() and number(a) == 1  # already held: no new custody


def test_renewal_happens_every_third_of_the_ttl(store: StateStore, fake_clock: FakeClock) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire()
    fake_clock.advance(9.999)
    assert a.renew_if_due()
    assert a.current() == ("a", 1, START_MS + TTL)  # not due yet
    fake_clock.advance(0.001)
    assert a.renew_if_due()
    assert a.current() == ("a", 1, START_MS + 10_000 + TTL)
    for _ in range(30):  # five minutes of renewals keep the standby out
        fake_clock.advance(10)
        assert a.renew_if_due()
        assert not b.try_acquire()
    assert number(a) == 1 and a.is_held()


def test_an_expired_lease_changes_hands_with_a_new_fence(store: StateStore, fake_clock: FakeClock) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire()
    fake_clock.advance(29.999)
    assert not b.try_acquire()
    fake_clock.advance(0.001)
    assert b.try_acquire()
    assert number(b) == 2
    assert a.current() == ("b", 2, START_MS + 2 * TTL)
    assert not a.is_held()
    assert not a.renew_if_due() and a.fence is None


def test_the_same_holder_reacquiring_after_expiry_is_a_new_custody(
    store: StateStore, fake_clock: FakeClock
) -> None:
    a = lease_on(store, fake_clock, "a")
    assert a.try_acquire()
    fake_clock.advance(30)
    assert not a.is_held()
    assert a.try_acquire()
    assert number(a) == 2
    assert a.current() == ("a", 2, START_MS + 30_000 + TTL)


def test_a_stalled_holder_learns_of_the_takeover_and_its_writes_are_refused(state_dir: Path) -> None:
    # The holder's process was stopped for a while: its own clock reading is stale, the
    # standby's is 30 s on. (Two clocks on one file, as two processes would have.)
    store_a, store_b = StateStore(state_dir), StateStore(state_dir)
    store_a.open_for_writing()
    clock_a, clock_b = FakeClock(), FakeClock()
    a, b = lease_on(store_a, clock_a, "a"), lease_on(store_b, clock_b, "b")
    assert a.try_acquire() and a.fence is not None
    stale = a.fence
    assert store_a.put_app("photocraft", fetched(START_MS), fence=stale)
    clock_b.advance(30)
    assert b.try_acquire() and number(b) == 2

    clock_a.advance(15)  # due for renewal, within its deadline
    assert a.is_held()  # it cannot know yet...
    with pytest.raises(FenceRejected):  # ...but its writes are already refused
        store_a.put_app("photocraft", fetched(START_MS + 15_000, tag="v0.0.1"), fence=stale)
    assert not a.renew_if_due()  # and the next renewal tells it
    assert a.fence is None and not a.is_held()
    assert b.fence is not None
    assert store_b.put_app("photocraft", fetched(START_MS + 30_000, tag="v2.0.0"), fence=b.fence)
    release = store_b.read().apps["photocraft"].latest_release
    assert release is not None and release.tag == "v2.0.0"


# ---- blackouts ----------------------------------------------------------------------------------


def test_a_renewal_blackout_is_a_loss_before_anyone_may_take_over(
    store: StateStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire()
    blocker = lock_writes(store)
    caplog.set_level(logging.WARNING, logger="craft_apps.host.lease")
    for _ in range(19):
        fake_clock.advance(1)
        assert a.renew_if_due()  # from 10 s on it fails, but a blackout is not a loss yet
    blackout_lines = [r for r in caplog.records if "could not renew" in r.getMessage()]
    assert len(blackout_lines) == 1  # logged once per blackout, not once per attempt
    assert blackout_lines[0].levelno == logging.WARNING and "is locked" in blackout_lines[0].getMessage()
    fake_clock.advance(0.999)
    assert a.is_held() and a.renew_if_due()
    fake_clock.advance(0.001)  # 20 s: the renew deadline
    assert not a.is_held()
    assert not a.renew_if_due() and a.fence is None
    blocker.execute("ROLLBACK")
    blocker.close()

    assert not b.try_acquire()  # the lease itself has 10 s left: a gave up first
    fake_clock.advance(9.999)
    assert not b.try_acquire()
    fake_clock.advance(0.001)
    assert b.try_acquire() and number(b) == 2


def test_a_short_blackout_is_survived(
    store: StateStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a = lease_on(store, fake_clock, "a")
    assert a.try_acquire()
    blocker = lock_writes(store)
    fake_clock.advance(10)
    assert a.renew_if_due()
    assert a.current() == ("a", 1, START_MS + TTL)  # the renewal did not get through
    blocker.execute("ROLLBACK")
    blocker.close()
    caplog.set_level(logging.INFO, logger="craft_apps.host.lease")
    fake_clock.advance(9)
    assert a.renew_if_due()
    assert a.current() == ("a", 1, START_MS + 19_000 + TTL)
    assert "reachable again" in caplog.text
    fake_clock.advance(19.999)
    assert a.is_held()


# ---- a deleted state file ----------------------------------------------------------------------


def delete_files(store: StateStore) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)


def test_a_holder_makes_its_deleted_file_anew_from_what_it_knows_and_keeps_its_fence(
    store: StateStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a = lease_on(store, fake_clock, "a")
    assert a.try_acquire() and a.fence is not None
    known = {"photocraft": fetched(START_MS, etag='"e1"'), "filmcraft": fetched(START_MS + 1, tag="v2.0.0")}
    for key, state in known.items():
        assert store.put_app(key, state, fence=a.fence)
    backoff = Backoff(until_ms=START_MS + 60_000, trouble=1)
    store.put_backoff(backoff, fence=a.fence)
    a.keep_file_with(lambda: StateSnapshot(0, known, backoff))
    reader = StateStore(store.state_dir)
    assert reader.read().apps == known

    delete_files(store)
    fake_clock.advance(1)  # not due for renewal: the file is looked at on every check
    with caplog.at_level(logging.WARNING, logger="craft_apps.host.lease"):
        assert a.renew_if_due()
    snapshot = reader.read()
    assert (snapshot.apps, snapshot.backoff) == (known, backoff)
    assert a.current() == ("a", 1, START_MS + 1_000 + TTL)
    assert store.put_app("photocraft", fetched(START_MS + 5, etag='"e2"'), fence=a.fence)
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert f"the state file {store.path} was deleted; made it anew from memory (2 apps" in line


def test_a_holder_whose_file_another_made_anew_loses_it_though_both_have_fence_1(state_dir: Path) -> None:
    store_a, store_b = StateStore(state_dir), StateStore(state_dir)
    store_a.open_for_writing()
    clock = FakeClock()
    a, b = lease_on(store_a, clock, "a"), lease_on(store_b, clock, "b")
    assert a.try_acquire() and a.fence is not None and a.fence.number == 1
    a.keep_file_with(lambda: StateSnapshot(0, {"photocraft": fetched()}, Backoff()))
    delete_files(store_a)
    store_b.open_for_writing()  # another poller starting now makes a new, empty file...
    assert b.try_acquire() and b.fence is not None and b.fence.number == 1  # ...and takes fence 1

    with pytest.raises(FenceRejected, match="is held by b with fence 1"):
        store_a.put_app("photocraft", fetched(START_MS + 1), fence=a.fence)
    assert not a.renew_if_due()  # the replaced file is noticed at once, not when renewal is due
    assert a.fence is None
    assert store_b.read().apps == {}
    assert a.current() == ("b", 1, START_MS + TTL)


def test_a_standby_leaves_the_holder_a_ttl_before_making_a_missing_file(
    store: StateStore, fake_clock: FakeClock
) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire()
    delete_files(store)  # and a is gone too, say
    assert not b.try_acquire()
    assert isinstance(b.unreachable, StateFileMissing)
    fake_clock.advance(29.999)
    assert not b.try_acquire()
    assert not store.path.exists(), "a standby never makes an empty file while a holder may still"
    fake_clock.advance(0.001)
    assert b.try_acquire() and number(b) == 1
    assert b.unreachable is None and store.read().apps == {}


def test_a_lease_that_cannot_be_written_says_why_and_waiting_logs_it_once(
    store: StateStore, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = lock_writes(store)
    clock = StoppingAfter(3)
    b = lease_on(store, clock, "b")
    with caplog.at_level(logging.WARNING, logger="craft_apps.host.lease"):
        assert not b.try_acquire()
        assert isinstance(b.unreachable, StateUnavailable) and "is locked" in str(b.unreachable)
        assert caplog.records == []  # one attempt reports through `unreachable`; the caller decides
        assert not b.wait_until_acquired()
    blocker.execute("ROLLBACK")
    blocker.close()
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["lease 'poller'"]
    assert "could not try to acquire" in caplog.text


# ---- release and standby ------------------------------------------------------------------------


def test_a_clean_release_lets_a_standby_in_at_once_and_the_fence_survives(
    store: StateStore, fake_clock: FakeClock
) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire() and a.fence is not None
    released = a.fence
    a.release()
    assert a.fence is None and not a.is_held() and a.released
    assert a.current() == ("a", 1, 0)  # expired in place
    a.release()  # idempotent
    assert b.try_acquire()
    assert number(b) == 2
    with pytest.raises(FenceRejected):
        store.put_app("photocraft", fetched(), fence=released)


def test_release_never_raises(
    store: StateStore, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a = lease_on(store, fake_clock, "a")
    assert a.try_acquire()
    blocker = lock_writes(store)
    a.release()  # the file is locked: the lease will expire by itself
    assert a.fence is None
    assert "could not release" in caplog.text
    blocker.execute("ROLLBACK")
    blocker.close()
    assert a.current() == ("a", 1, START_MS + TTL)


def test_a_standby_takes_over_within_ttl_plus_retry_of_a_kill(
    store: StateStore, fake_clock: FakeClock
) -> None:
    a, b = lease_on(store, fake_clock, "a"), lease_on(store, fake_clock, "b")
    assert a.try_acquire()
    fake_clock.advance(10)
    assert a.renew_if_due()
    killed_at = fake_clock.now_ms()  # a dies right after renewing: the worst case

    assert b.wait_until_acquired()
    waited = fake_clock.now_ms() - killed_at
    assert TTL <= waited <= TTL + RETRY
    assert number(b) == 2
    assert set(fake_clock.sleeps) == {RETRY / 1000}


def test_waiting_ends_when_a_stop_is_requested(store: StateStore) -> None:
    clock = StoppingAfter()
    assert lease_on(store, clock, "a").try_acquire()
    b = lease_on(store, clock, "b")
    assert not b.wait_until_acquired()
    assert b.fence is None
    assert clock.sleeps == [RETRY / 1000]


def test_a_free_lease_is_acquired_without_waiting(store: StateStore, fake_clock: FakeClock) -> None:
    assert lease_on(store, fake_clock, "a").wait_until_acquired()
    assert fake_clock.sleeps == []


# ---- the keeper thread --------------------------------------------------------------------------


class ReportingLease(Lease):
    """Tells the test about every renewal the keeper makes, so nothing waits on a timer."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.renewals: queue.Queue[bool] = queue.Queue()

    def renew_if_due(self) -> bool:
        held = super().renew_if_due()
        self.renewals.put(held)
        return held


def test_the_keeper_renews_and_stops_without_calling_on_lost(
    store: StateStore, fake_clock: FakeClock
) -> None:
    lease = ReportingLease(store, holder="a", clock=fake_clock)
    assert lease.try_acquire()
    fake_clock.advance(10)
    lost = threading.Event()
    keeper = LeaseKeeper(lease, on_lost=lost.set, poll_s=0.01)
    keeper.start()
    assert lease.renewals.get(timeout=5) is True
    keeper.stop()
    assert lease.current() == ("a", 1, START_MS + 10_000 + TTL)
    assert keeper._thread is not None and not keeper._thread.is_alive()
    assert not lost.is_set()


def test_the_keeper_reports_a_takeover(state_dir: Path) -> None:
    clock_a, clock_b = FakeClock(), FakeClock()
    a = lease_on(StateStore(state_dir), clock_a, "a")
    b = lease_on(StateStore(state_dir), clock_b, "b")
    a.store.open_for_writing()
    assert a.try_acquire()
    clock_b.advance(30)
    assert b.try_acquire()
    clock_a.advance(15)
    lost = threading.Event()
    keeper = LeaseKeeper(a, on_lost=lost.set, poll_s=0.01)
    keeper.start()
    assert lost.wait(timeout=5)
    keeper.stop()
    assert a.fence is None


def test_the_keeper_ends_quietly_after_a_release(store: StateStore, fake_clock: FakeClock) -> None:
    lease = ReportingLease(store, holder="a", clock=fake_clock)
    assert lease.try_acquire()
    lost = threading.Event()
    keeper = LeaseKeeper(lease, on_lost=lost.set, poll_s=0.01)
    keeper.start()
    assert lease.renewals.get(timeout=5) is True
    lease.release()
    assert keeper._thread is not None
    keeper._thread.join(timeout=5)
    assert not keeper._thread.is_alive()
    assert not lost.is_set()


# ---- two processes ------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_processes_racing_for_the_lease_have_exactly_one_winner_each_time(tmp_path: Path) -> None:
    rounds = 25
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2, timeout=60)
    results = context.Queue()
    processes = [
        context.Process(target=_race.contend, args=(barrier, results, str(tmp_path), rounds, holder))
        for holder in ("proc-a", "proc-b")
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in range(4 * rounds)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0

    for phase in ("cold", "warm"):
        for number in range(rounds):
            tries = [o for o in outcomes if o[0] == phase and o[1] == number]
            assert sorted(o[2] for o in tries) == ["proc-a", "proc-b"]
            winners = [o for o in tries if o[3]]
            assert len(winners) == 1, (phase, number, tries)
            # cold: a fresh file starts at fence 1; warm: exactly one change of custody per round
            assert winners[0][4] == (1 if phase == "cold" else number + 1)
