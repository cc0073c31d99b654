"""One virtual clock for a simulated fleet, with each host running in a thread of its own.

Contract: ``Simulation.run(until_ms)`` carries out everything scheduled up to ``until_ms`` in
virtual-time order. Exactly one thread runs at any moment (the scheduler, or the one host whose
turn it is), so every host and the GitHub stand-in read the same ``now``, and nothing moves
while a host works. A host's ``sleep(seconds)`` gives the turn back and resumes the host at
``now + seconds``, so the pauses inside a poller's round interleave with the other hosts' ticks
exactly as they would in real time. At the end every sleeping host wakes with ``sleep``
returning False, as the real clock does on a stop request.

Invariants: virtual time never goes back; events at the same instant run in the order they were
scheduled, so a run depends only on its seed; a host's uncaught error stops the run with that
error, and ``HostKilled`` ends only that host (it is how a simulation kills one).
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from craft_apps.kernel.domain import LeaseTiming

# The production loop renews its lease at each tick; between ticks a keeper thread does, which
# a virtual clock can't drive. A lease that outlives any wait between ticks stands in for it.
VIRTUAL_CLOCK_LEASE = LeaseTiming(ttl_ms=3_600_000)


class HostKilled(BaseException):
    """Raised inside a host to make it vanish at once, like a SIGKILL: nothing runs after it."""


@dataclass(eq=False)
class _Actor:
    name: str
    body: Callable[[HostClock], None]
    resume: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    finished: bool = False
    killed: bool = False
    error: BaseException | None = None


class HostClock:
    """A host's view of the simulation: the shared time, its own sleep and its own randomness."""

    def __init__(self, simulation: Simulation, actor: _Actor, rng: random.Random) -> None:
        self._simulation = simulation
        self._actor = actor
        self._rng = rng

    def now_ms(self) -> int:
        return self._simulation.now_ms

    def sleep(self, seconds: float) -> bool:
        return self._simulation._suspend(self._actor, round(max(0.0, seconds) * 1000))

    def random(self) -> float:
        return self._rng.random()


_Event = tuple[int, int, "_Actor | Callable[[], None]"]


class Simulation:
    def __init__(self, start_ms: int) -> None:
        self.now_ms = start_ms
        self._queue: list[_Event] = []
        self._order = itertools.count()
        self._turn = threading.Event()  # set by a host when it gives the turn back
        self._stopping = False
        self._actors: list[_Actor] = []

    def now_s(self) -> float:
        return self.now_ms / 1000

    def call_at(self, at_ms: int, action: Callable[[], None]) -> None:
        """Runs ``action`` in the scheduler's thread at ``at_ms`` (no later than the run's end)."""
        heapq.heappush(self._queue, (max(at_ms, self.now_ms), next(self._order), action))

    def spawn(self, name: str, body: Callable[[HostClock], None], rng: random.Random) -> HostClock:
        """Starts ``body(clock)`` as a host at the current virtual time, once ``run`` gets to it."""
        actor = _Actor(name, body)
        clock = HostClock(self, actor, rng)
        actor.thread = threading.Thread(target=self._host_thread, args=(actor, clock), name=name, daemon=True)
        self._actors.append(actor)
        actor.thread.start()
        heapq.heappush(self._queue, (self.now_ms, next(self._order), actor))
        return clock

    def run(self, until_ms: int) -> None:
        """Runs every event due by ``until_ms``, then stops every host."""
        try:
            while self._queue and self._queue[0][0] <= until_ms:
                at_ms, _, item = heapq.heappop(self._queue)
                self.now_ms = max(self.now_ms, at_ms)
                if isinstance(item, _Actor):
                    self._hand_over(item)
                else:
                    item()
            self.now_ms = max(self.now_ms, until_ms)
        finally:
            self._stop_everyone()
        failed = [actor for actor in self._actors if actor.error is not None]
        if failed:
            raise RuntimeError(f"host {failed[0].name} failed: {failed[0].error!r}") from failed[0].error

    def killed(self) -> list[str]:
        return [actor.name for actor in self._actors if actor.killed]

    # -- the hand-over -----------------------------------------------------------------------

    def _hand_over(self, actor: _Actor) -> None:
        if actor.finished:
            return
        actor.resume.set()
        self._turn.wait()
        self._turn.clear()
        if actor.error is not None:
            raise RuntimeError(f"host {actor.name} failed: {actor.error!r}") from actor.error

    def _suspend(self, actor: _Actor, delay_ms: int) -> bool:
        """Called by ``actor``'s own thread: waits for its next turn; False once stopping."""
        if self._stopping:
            return False
        heapq.heappush(self._queue, (self.now_ms + delay_ms, next(self._order), actor))
        self._turn.set()
        actor.resume.wait()
        actor.resume.clear()
        return not self._stopping

    def _host_thread(self, actor: _Actor, clock: HostClock) -> None:
        actor.resume.wait()
        actor.resume.clear()
        try:
            if not self._stopping:
                actor.body(clock)
        except HostKilled:
            actor.killed = True
        except BaseException as err:  # handed to the scheduler, which stops the run with it
            actor.error = err
        finally:
            actor.finished = True
            self._turn.set()

    def _stop_everyone(self) -> None:
        self._stopping = True
        for actor in self._actors:
            if not actor.finished:
                actor.resume.set()
                self._turn.wait()
                self._turn.clear()
        for actor in self._actors:
            if actor.thread is not None:
                actor.thread.join(timeout=30)
