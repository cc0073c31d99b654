"""The purge thread of the poller: read each answer's ETag, purge the URLs that changed.

``Purger.look()`` compares this host's answers with the last read and starts one job per purge
request (``jobs``), which waits until the web processes serve the change (``readiness``), sends
it (``sender``) and retries with backoff until taken, refused, or past its deadline. Only the
poller holding the host's lease purges, and with Redis only the first host to see a change
(``guard``). Neither the poller's round nor a web request waits for it. See docs/cdn.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial

from craft_apps.cdn.backends import requests_for
from craft_apps.cdn.guard import OnceGuard
from craft_apps.cdn.jobs import Jobs
from craft_apps.cdn.plan import PurgeRequest, Refused, changed_paths
from craft_apps.cdn.readiness import Gate, Readiness, Settle
from craft_apps.conf import PurgeTarget
from craft_apps.content.served_versions import ServedReport
from craft_apps.host.counters import CountersUpdate
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.text import one_line

logger = logging.getLogger(__name__)

LOOK_S = 0.25  # a change is seen within a quarter of a second of this thread's runtime serving it
# The longest wait between seeing a change and purging it, for web processes that don't say they
# serve it: each applies an edit within 2 s (their feeds look every second).
SETTLE_S = 2.0
STOP_WAIT_S = 1.5  # as the poller's own stop waits for its request in flight
# Requests sent at once: a change makes at most three (two channels' URLs, two BAN prefixes, or
# Cloudflare's calls), so each has a thread, and one more for a newer change's.
PURGE_THREADS = 4


@dataclass(frozen=True)
class Retry:
    attempts: int = 4
    first_delay_s: float = 0.5
    max_delay_s: float = 8.0
    deadline_s: float = 50.0  # from the change; less than the answer's max-age of 60 s
    settle_s: float = SETTLE_S


class Purger:
    """Purges the answers that change, while ``is_leader`` says this process holds the lease."""

    def __init__(
        self,
        target: PurgeTarget,
        *,
        answers: Callable[[], Mapping[str, str]],
        is_leader: Callable[[], bool],
        send: Callable[[PurgeRequest], str | None],
        record: Callable[[CountersUpdate], None],
        clock: Clock,
        guard: OnceGuard | None = None,
        retry: Retry = Retry(),
        on_close: Callable[[], None] = lambda: None,
        stop: threading.Event | None = None,  # the event ``clock.sleep`` wakes on, if any
        version: Callable[[], int | None] = lambda: None,
        served: Callable[[int], Sequence[ServedReport]] | None = None,
        beat: Callable[[int], None] = lambda now_ms: None,
    ) -> None:
        self.target = target
        self._answers = answers  # path -> ETag of each cacheable answer
        self._beat = beat  # told the time on each look: shares what this host serves
        self._version = version  # the notices version the answers were made with
        # What the host's web processes say they serve (None: no reports, a fixed settle).
        self._gate = None if served is None else Gate(served, clock, retry.settle_s, self._settled)
        self._unconfirmed = False  # the last change was purged without every process saying so
        self._is_leader = is_leader
        self._send = send
        self._record = record
        self._clock = clock
        self._guard = guard
        self._retry = retry
        self._on_close = on_close
        self._before: Mapping[str, str] | None = None
        self._look_failed = False
        self._thread: threading.Thread | None = None
        self._jobs = Jobs(PURGE_THREADS, "craft-apps-cdn-purge-url")
        self._newest: dict[PurgeRequest, int] = {}  # each request's newest job: older ones stop
        self._newest_lock = threading.Lock()
        self.stop_event = stop or threading.Event()

    def look(self) -> tuple[str, ...]:
        """One look; starts purging what changed since the last one (without waiting for it).
        Returns the paths it purges."""
        try:
            now = dict(self._answers())
            version = self._version()  # after the answers: at least the one they were made with
        except Exception as err:  # the look reads the state file and the database: never fatal
            if not self._look_failed:
                logger.warning("Craft apps CDN purge: can't read the answers: %s", one_line(err, 200))
            self._look_failed = True
            return ()
        self._look_failed = False
        before, self._before = self._before, now
        if before is None or set(before) != set(now):
            logger.info("Craft apps CDN purge: watching %s.", ", ".join(now) or "no cacheable answer yet")
        changed = changed_paths(before or {}, now)
        if not changed or not self._is_leader():
            return ()
        mine = tuple(path for path in changed if self._guard is None or self._guard.first(path, now[path]))
        if len(mine) < len(changed):
            others = ", ".join(path for path in changed if path not in mine)
            logger.debug("Craft apps CDN purge: another poller of the fleet purges %s.", others)
        if mine:
            self.start_purge(mine, self._clock.now_ms(), settle=True, version=version)
        return mine

    def purge(self, paths: tuple[str, ...], seen_ms: int | None = None) -> bool:
        """Sends the requests that drop ``paths``, changed at ``seen_ms`` (now if None), and
        waits for them; False when one was given up."""
        outcomes = self.start_purge(paths, self._clock.now_ms() if seen_ms is None else seen_ms)
        return all([outcome.result() for outcome in outcomes])

    def start_purge(
        self, paths: tuple[str, ...], seen_ms: int, settle: bool = False, version: int | None = None
    ) -> list[Future[bool]]:
        """One job per request that drops ``paths``; with ``settle``, each is sent once every web
        process serves notices ``version`` (at most ``settle_s`` after ``seen_ms``). Their
        outcomes (False: given up)."""
        wait: Settle | int | None = None
        if settle:
            due_ms = seen_ms + round(self._retry.settle_s * 1000)
            wait = due_ms if self._gate is None else Settle(self._gate, seen_ms, version)
        outcomes = []
        for request in requests_for(self.target, paths):
            with self._newest_lock:
                number = self._newest[request] = self._newest.get(request, 0) + 1
            outcomes.append(self._jobs.submit(partial(self._job, request, number, seen_ms, wait)))
        return outcomes

    def finish(self, timeout_s: float) -> bool:
        """Waits until every purge started is taken or given up; False if one still ran after
        ``timeout_s``."""
        return self._jobs.idle(timeout_s)

    def _job(self, request: PurgeRequest, number: int, seen_ms: int, wait: Settle | int | None) -> bool:
        if isinstance(wait, Settle):
            settled = wait.wait()
        else:  # until a fixed instant, if any
            wait_ms = 0 if wait is None else wait - self._clock.now_ms()
            settled = wait_ms <= 0 or self._clock.sleep(wait_ms / 1000)
        if not settled:
            return False  # stopping: the answer ages out
        return self._send_with_retries(request, number, seen_ms)

    def _settled(self, outcome: Readiness, lagging: int, live: int) -> None:
        """Counts a change purged without every web process saying it serves it; says so once."""
        if outcome is Readiness.READY:
            if self._unconfirmed:
                logger.info(
                    "Craft apps CDN purge: every web process and other host says it serves each change again."
                )
            self._unconfirmed = False
            return
        self._note(CountersUpdate(purges={"unconfirmed": 1}))
        if not self._unconfirmed:
            logger.warning(
                "Craft apps CDN purge: %s %g s after the change; purging all the same.",
                f"{lagging} of {live} web processes and other hosts didn't serve it yet"
                if live
                else "no web process of this host said which version it serves",
                self._retry.settle_s,
            )
        self._unconfirmed = True

    def _share(self) -> None:
        try:
            self._beat(self._clock.now_ms())
        except Exception as err:  # reads report files and asks Redis: never fatal
            logger.debug("Craft apps CDN purge: can't share what this host serves: %s", one_line(err, 200))

    def _taken_over(self, request: PurgeRequest, number: int) -> bool:
        """Whether a newer change's job sends ``request`` too: this one's retries aren't needed."""
        with self._newest_lock:
            return self._newest[request] != number

    def _send_with_retries(self, request: PurgeRequest, number: int, started_ms: int) -> bool:
        retry, clock = self._retry, self._clock
        delay_s = retry.first_delay_s
        for attempt in range(1, retry.attempts + 1):
            if attempt > 1 and self._taken_over(request, number):
                logger.debug("Craft apps CDN purge: a newer change purges %s.", request.drops)
                return True
            reason = self._send(request)
            if reason is None:
                logger.info("Craft apps CDN purge: dropped %s.", request.drops)
                self._note(CountersUpdate(purges={"purged": 1}, purge_ok_ms=clock.now_ms()))
                return True
            wait_s = delay_s * (0.5 + clock.random())  # jitter: half to one and a half times
            past_deadline = clock.now_ms() - started_ms + wait_s * 1000 > retry.deadline_s * 1000
            if attempt == retry.attempts or past_deadline or isinstance(reason, Refused):
                self._give_up(reason, attempt)
                return False
            self._note(CountersUpdate(purges={"retried": 1}))
            if not clock.sleep(wait_s):
                return False  # stopping: the answer ages out
            delay_s = min(delay_s * 2, retry.max_delay_s)
        return False

    def _give_up(self, reason: str, attempts: int) -> None:
        line = f"{reason}, {attempts} {'try' if attempts == 1 else 'tries'}"
        logger.warning(
            "Craft apps CDN purge: gave up on %s; the CDN serves its copy until it is due (max-age).", line
        )
        self._note(
            CountersUpdate(purges={"failed": 1}, purge_failed_ms=self._clock.now_ms(), purge_failure=line)
        )

    def _note(self, update: CountersUpdate) -> None:
        try:
            self._record(update)
        except Exception as err:  # the state file's trouble is the poller's to report
            logger.debug("Craft apps CDN purge: can't record %s: %s", update, one_line(err, 200))

    def start(self, look_s: float = LOOK_S) -> None:
        """Looks every ``look_s`` in a thread of its own until ``stop``."""

        def run() -> None:
            while not self.stop_event.is_set():
                self._share()
                self.look()
                if not self._clock.sleep(look_s):
                    return

        self._thread = threading.Thread(target=run, name="craft-apps-cdn-purge", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ends the threads and closes their parts. A wait ends at once; the requests in flight
        are waited for at most ``STOP_WAIT_S`` (the threads are daemons: none holds the exit)."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_WAIT_S)
        self._jobs.idle(STOP_WAIT_S)
        self._jobs.close()
        self._on_close()
