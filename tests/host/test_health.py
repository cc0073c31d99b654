"""The health rules, on real state files: what takes a host out, and what doesn't."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps.host.counters import CountersUpdate, record
from craft_apps.host.health import (
    RULES,
    STALE_MARGIN_MS,
    HealthPolicy,
    health_problems,
    parse_rules,
)
from craft_apps.host.lease import Lease
from craft_apps.host.lease_table import read_lease
from craft_apps.host.observe import observe
from craft_apps.host.store import Fence, StateStore
from craft_apps.kernel.domain import AppState
from craft_apps.testing.clock import START_MS, FakeClock
from tests.host.support import fetched
from tests.support import S

POLICY = HealthPolicy(
    apps=("photocraft", "vectorcraft"), interval_ms=1800 * S, takeover_ms=32 * S, polling_enabled=True
)
STALE_AFTER = 2 * 1800 * S + STALE_MARGIN_MS


def lines(store: StateStore, now_ms: int, policy: HealthPolicy = POLICY, rules=RULES) -> list[str]:
    return [problem.line() for problem in health_problems(observe(store), policy, now_ms, rules)]


@pytest.fixture
def healthy(store: StateStore, writer: Lease, fence: Fence) -> StateStore:
    for key in POLICY.apps:
        assert store.put_app(key, fetched(START_MS), fence=fence)
    return store


def test_a_fresh_host_with_an_active_poller_is_healthy(healthy: StateStore):
    assert lines(healthy, START_MS + 10 * S) == []


def test_an_app_is_stale_after_twice_the_interval_plus_the_margin(healthy: StateStore):
    assert lines(healthy, START_MS + STALE_AFTER, rules=["stale"]) == []
    late = lines(healthy, START_MS + STALE_AFTER + 1, rules=["stale"])
    assert len(late) == 2 and all(line.startswith("stale: ") for line in late)
    assert "photocraft was last fetched 1 h 2 min ago, over the 1 h 2 min allowed" in late[0]


def test_an_app_not_fetched_yet_is_stale_whatever_its_failures(
    store: StateStore, writer: Lease, fence: Fence
):
    store.put_app("photocraft", fetched(START_MS), fence=fence)
    store.put_app("vectorcraft", AppState(failed_ms=START_MS, failures=3), fence=fence)
    assert lines(store, START_MS) == ["stale: vectorcraft was not fetched yet"]


def test_a_killed_poller_counts_from_its_lease_expiry(
    healthy: StateStore, writer: Lease, fake_clock: FakeClock
):
    expires_ms = read_lease(healthy, "poller")[2]  # type: ignore[index]
    assert lines(healthy, expires_ms + 32 * S, rules=["poller"]) == []
    [problem] = lines(healthy, expires_ms + 32 * S + 1, rules=["poller"])
    assert problem.startswith("poller: no active poller for 32 s (since ")


def test_a_clean_stop_counts_from_the_recorded_stop(healthy: StateStore, writer: Lease):
    record(healthy, CountersUpdate(stopped_ms=START_MS + 100 * S))
    writer.release()  # expires in place: expires_ms 0
    assert lines(healthy, START_MS + 132 * S, rules=["poller"]) == []
    assert lines(healthy, START_MS + 133 * S, rules=["poller"])[0].startswith(
        "poller: no active poller for 33 s"
    )


def test_a_release_without_a_recorded_stop_is_a_problem_at_once(healthy: StateStore, writer: Lease):
    writer.release()
    [problem] = lines(healthy, START_MS, rules=["poller"])
    assert "released the lease at an unknown time" in problem


def test_no_file_no_lease_and_disabled_polling_are_poller_problems(state_dir: Path, settings):
    store = StateStore(state_dir)
    assert lines(store, START_MS, rules=["poller"]) == [
        f"poller: no state file at {store.path}: no poller has run on this host"
    ]
    store.open_for_writing()
    assert lines(store, START_MS, rules=["poller"]) == [
        f"poller: no poller has ever held the lease in {store.path}"
    ]
    disabled = HealthPolicy(POLICY.apps, POLICY.interval_ms, POLICY.takeover_ms, polling_enabled=False)
    [problem] = lines(store, START_MS, disabled, rules=["poller"])
    assert "polling is disabled by CRAFT_APPS['POLLING_ENABLED']" in problem


def test_an_unreadable_file_is_the_only_problem_whatever_the_rules(state_dir: Path):
    state_dir.mkdir()
    (state_dir / "craft_apps_state.sqlite3").write_bytes(b"garbage" * 1000)
    for rules in (RULES, ["stale"]):
        [problem] = lines(StateStore(state_dir), START_MS, rules=rules)
        assert problem.startswith("state_file: craft_apps state file ") and "is corrupt" in problem


def test_rules_are_parsed_by_name():
    assert parse_rules([]) == RULES
    assert parse_rules(["stale", " poller", ""]) == ("poller", "stale")
    with pytest.raises(ValueError, match="unknown health rule 'fresh'"):
        parse_rules(["fresh"])
