"""A refresh asked for right after an answer, as real processes against the GitHub stand-in:
`poll_craft_releases --once` asks about every app, `craft_apps_refresh` asks for one app again
(as a webhook would), and a new `--once` process right away asks GitHub nothing about it. The
10 s between two requests about one app is counted from the state file's last answer, which a
restarted poller reads back, not from the memory of the process that asked."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import SystemClock
from craft_apps.polling.schedule import MIN_REQUEST_GAP_MS
from craft_apps.testing.fake_github import FakeGitHub
from tests.polling.processes import APPS, ROOT, Poller
from tests.support import ONE_AT_A_TIME

pytestmark = pytest.mark.slow

# The last answer is moved this far ahead (a clock running ahead counts as now), so the gap
# lasts AHEAD_S + 10 s from the move: the restarted run decides inside it however slowly it
# starts on a loaded machine. The bound is a hang guard, not a margin.
AHEAD_S = 50
DECIDED_WITHIN_S = AHEAD_S + MIN_REQUEST_GAP_MS // 1000


def answered_ahead(state_dir: Path, key: str) -> int:
    """Moves the app's last answer in the state file to ``AHEAD_S`` from now, whatever the first
    run's start-up cost; returns that instant."""
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="test-answered-now", clock=SystemClock())
    try:
        assert lease.try_acquire() and lease.fence is not None, "the --once run left the lease held"
        now_ms = SystemClock().now_ms() + AHEAD_S * 1000
        state = store.read().apps[key]
        assert state.fetched_ms is not None, "the first run fetched the app"
        assert store.put_app(key, replace(state, fetched_ms=now_ms), fence=lease.fence)
    finally:
        lease.release()
        store.close()
    return now_ms


@ONE_AT_A_TIME
def test_a_restarted_poller_keeps_10_s_between_two_requests_about_an_app(
    pollers: Callable[..., Poller], poller_env: dict[str, str], github: FakeGitHub, state_dir: Path
):
    app = APPS[0]
    first = pollers("--once")
    assert first.finish() == 0, first.output()
    first_asked = [r.path.split("?")[0].rsplit("/", 1)[-1] for r in github.requests_for(app.repo)]
    assert first_asked == ["latest", "releases"], "the first run asked its latest, then its list"
    github.reset_requests()

    started = time.monotonic()
    answered_ahead(state_dir, app.key)
    refresh = subprocess.run(
        [sys.executable, "manage.py", "craft_apps_refresh", app.key],
        cwd=ROOT, env=poller_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refresh.returncode == 0, refresh.stderr
    assert f"Marked {app.key} due in this host's state file" in refresh.stdout, refresh.stdout
    second = pollers("--once")
    status = second.finish(timeout=60)
    elapsed = time.monotonic() - started
    assert elapsed < DECIDED_WITHIN_S, (
        f"the refresh and the second --once took {elapsed:.1f} s: past the gap, so this test can't "
        "tell anything"
    )
    assert status == 0, second.output()
    assert f"a refresh of {app.key} was asked for on this host" in second.output(), second.output()
    assert github.requests_for(app.repo) == [], (
        "a restarted poller asked GitHub again about an app answered seconds ago: " + second.output()
    )
    assert github.requests == [], "nor about the other app, fresh too"
    # Held back, not dropped: one line says so, and the mark waits on the state file for the
    # next run, which asks once the gap is over.
    assert f"the refresh of {app.key} asked for at" in second.output(), second.output()
    assert [mark.app for mark in HostDueMarks(state_dir).marks()] == [app.key]
