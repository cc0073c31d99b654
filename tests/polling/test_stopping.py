"""SIGTERM and SIGINT through ``StopOnSignals``, in this process: real signals, a fake runner and a
recorded exit. (The command's own processes are in test_command.py.)"""

from __future__ import annotations

import os
import signal
import threading
from typing import cast

import pytest

from craft_apps.polling.process import PollerRunner
from craft_apps.polling.stopping import EXIT_INTERRUPTED, StopOnSignals


class FakeLease:
    def __init__(self) -> None:
        self.released = 0

    def release(self) -> None:
        self.released += 1


class FakeRunner:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.lease = FakeLease()
        self.stops_noted = 0

    def note_stop(self) -> None:
        self.stops_noted += 1


class Exits:
    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.called = threading.Event()

    def __call__(self, status: int) -> None:
        self.statuses.append(status)
        self.called.set()


def stopper(runner: FakeRunner, exits: Exits, grace_s: float = 60.0) -> StopOnSignals:
    return StopOnSignals(cast(PollerRunner, runner), grace_s=grace_s, exit_now=exits)


@pytest.mark.parametrize("signals", [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGINT)])
def test_a_second_signal_releases_the_lease_and_exits_130(signals, caplog):
    runner, exits = FakeRunner(), Exits()
    with stopper(runner, exits):
        os.kill(os.getpid(), signals[0])
        assert runner.stop.wait(10), "the first signal stops the runner"
        os.kill(os.getpid(), signals[1])
        assert exits.called.wait(10)
    assert exits.statuses == [EXIT_INTERRUPTED]
    assert (runner.lease.released, runner.stops_noted) == (1, 1)
    assert f"{signals[0].name}: stopping after the request in flight" in caplog.text
    assert f"Second {signals[1].name}: exiting now." in caplog.text


def test_two_signals_sent_together_are_both_taken():
    runner, exits = FakeRunner(), Exits()
    with stopper(runner, exits):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert exits.called.wait(10)
    assert exits.statuses == [EXIT_INTERRUPTED]


def test_past_the_grace_it_releases_the_lease_and_exits_0():
    runner, exits = FakeRunner(), Exits()
    with stopper(runner, exits, grace_s=0.0):
        os.kill(os.getpid(), signal.SIGTERM)
        assert exits.called.wait(10)
    assert exits.statuses == [0]
    assert runner.stop.is_set() and runner.lease.released == 1


def test_a_run_that_ends_within_the_grace_exits_as_it_would_and_the_handlers_come_back():
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    runner, exits = FakeRunner(), Exits()
    with stopper(runner, exits) as stopping:
        os.kill(os.getpid(), signal.SIGTERM)
        assert runner.stop.wait(10)
    assert not stopping._watcher.is_alive()
    assert exits.statuses == [] and runner.lease.released == 0
    assert {signum: signal.getsignal(signum) for signum in before} == before
    assert signal.set_wakeup_fd(-1) == -1, "the wakeup fd given back"


def test_leaving_without_a_signal_ends_the_watching_thread():
    runner, exits = FakeRunner(), Exits()
    with stopper(runner, exits) as stopping:
        pass
    assert not stopping._watcher.is_alive()
    assert not runner.stop.is_set() and exits.statuses == []
