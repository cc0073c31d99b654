"""The release policy's rule (craft_apps.controls.policies): which new releases wait, the percentage a
staged one is served at (depending only on its publish time and the clock), approval, and the
operator's hand-made controls winning, on plain releases."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from craft_apps.controls.policies import (
    DEFAULT_SCHEDULE,
    Offset,
    PolicyScheduleRefused,
    format_offsets,
    parse_offsets,
    policy_control,
    rollout_of,
    serve,
    waiting,
)
from craft_apps.controls.rules import APPROVAL, APPROVED, HOLD, ROLLOUT, STAGED, YANK, Control, Step
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Rollout
from craft_apps.kernel.instants import datetime_to_ms
from tests.support import release

HOUR = timedelta(hours=1)
SINCE = datetime(2026, 10, 1, tzinfo=UTC)
OLD = replace(release("0.5.0"), tag="v0.5.0", published_at=SINCE - 48 * HOUR)
NEW = replace(release("0.6.0"), tag="v0.6.0", published_at=SINCE + 10 * HOUR)
NEWER = replace(release("0.6.1"), tag="v0.6.1", published_at=SINCE + 20 * HOUR)


def ms(at: datetime) -> int:
    return datetime_to_ms(at)


def staged(channel: str = "stable", schedule: str = DEFAULT_SCHEDULE) -> Control:
    made = policy_control("photocraft", channel, STAGED, parse_offsets(schedule), ms(SINCE))
    assert made is not None
    return made


def approval(channel: str = "stable") -> Control:
    made = policy_control("photocraft", channel, APPROVAL, (), ms(SINCE))
    assert made is not None
    return made


def test_the_schedule_reads_commas_or_lines_in_minutes_hours_or_days_and_writes_back() -> None:
    assert parse_offsets("+0h 5, +24h 25, +72h 100") == (
        Offset(0, 5),
        Offset(24 * 3_600_000, 25),
        Offset(72 * 3_600_000, 100),
    )
    assert parse_offsets("+30m 1\n+2d 50%") == (Offset(1_800_000, 1), Offset(2 * 86_400_000, 50))
    assert format_offsets(parse_offsets("+0h 5, +24h 25, +3d 100")) == "+0h 5, +1d 25, +3d 100"
    assert format_offsets(parse_offsets("+90m 5")) == "+90m 5"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "at least one step"),
        ("5", "delay after publication"),
        ("+1w 5", "delay after publication"),
        ("+0h 101", "0-100"),
        ("+24h 25, +0h 50", "later than the one before"),
        ("+0h 50, +24h 25", "no lower"),
        ("+400d 100", "365 days"),
    ],
)
def test_a_schedule_that_cant_be_read_or_goes_back_is_refused_saying_what(text: str, said: str) -> None:
    with pytest.raises(PolicyScheduleRefused, match=said):
        parse_offsets(text)


def test_immediate_is_no_control_at_all_so_nothing_changes() -> None:
    assert policy_control("photocraft", "stable", "immediate", (), ms(SINCE)) is None
    served = serve(NEW, (OLD,), (), "stable", ms(NEW.published_at or SINCE))
    assert served.latest_release is NEW and served.rollout is None


def test_a_staged_release_starts_at_the_first_step_and_follows_the_schedule_from_its_publication() -> None:
    published = NEW.published_at or SINCE
    expected = [(0, 5), (23, 5), (24, 25), (71, 25)]
    for hours, share in expected:
        served = serve(NEW, (OLD,), (staged(),), "stable", ms(published + hours * HOUR))
        assert served.latest_release is OLD, hours
        assert served.rollout == Rollout(NEW, share), hours
    done = serve(NEW, (OLD,), (staged(),), "stable", ms(published + 72 * HOUR))
    assert done.latest_release is NEW and done.rollout is None


def test_the_percentage_depends_only_on_publication_and_clock_not_on_when_the_host_looked() -> None:
    at = ms((NEW.published_at or SINCE) + 30 * HOUR)
    first = serve(NEW, (OLD,), (staged(),), "stable", at)
    # Another host, which saw the release only now and never saw it at 5 %, agrees.
    again = serve(NEW, (OLD, NEW), (staged(),), "stable", at)
    assert first == again and first.rollout == Rollout(NEW, 25)


def test_a_release_published_before_the_policy_took_effect_is_never_pulled_back() -> None:
    served = serve(OLD, (), (staged(),), "stable", ms(SINCE))
    assert served.latest_release is OLD and served.rollout is None
    assert waiting([OLD], (approval(),), "stable", ms(SINCE)) == {}


def test_approval_holds_a_new_release_until_it_is_approved() -> None:
    now = ms(SINCE + 30 * HOUR)
    held = serve(NEW, (OLD,), (approval(),), "stable", now)
    assert held.latest_release is OLD and held.rollout is None
    approved = Control("photocraft", APPROVED, "v0.6.0", "stable")
    served = serve(NEW, (OLD,), (approval(), approved), "stable", now)
    assert served.latest_release is NEW and served.rollout is None


def test_a_second_new_release_waits_too_and_the_first_is_not_served_meanwhile() -> None:
    now = ms(SINCE + 30 * HOUR)
    served = serve(NEWER, (NEW, OLD), (staged(),), "stable", now)
    assert served.latest_release is OLD
    assert served.rollout == Rollout(NEWER, 5)
    held = serve(NEWER, (NEW, OLD), (approval(),), "stable", now)
    assert held.latest_release is OLD and held.rollout is None


def test_a_policy_applies_on_its_own_channel_only() -> None:
    now = ms(SINCE + 30 * HOUR)
    assert serve(NEW, (OLD,), (approval("beta"),), "stable", now).latest_release is NEW
    assert serve(NEW, (OLD,), (approval("beta"),), "beta", now).latest_release is OLD


@pytest.mark.parametrize(
    "control",
    [
        Control("photocraft", ROLLOUT, "v0.6.0", "", 50),
        Control("photocraft", ROLLOUT, "v0.6.0", "", 100),
        Control("photocraft", HOLD, "v0.6.0"),
    ],
)
def test_a_hand_made_control_of_the_tag_wins_over_the_policy(control: Control) -> None:
    now = ms(SINCE + 30 * HOUR)
    served = serve(NEW, (OLD,), (approval(), control), "stable", now)
    if control.action == ROLLOUT and control.percentage < 100:
        assert served.latest_release is OLD and served.rollout == Rollout(NEW, 50)
    else:
        assert served.latest_release is NEW and served.rollout is None


def test_a_yank_is_never_delayed_by_a_policy() -> None:
    now = ms(SINCE + 30 * HOUR)
    yanks = (staged(), Control("photocraft", YANK, "v0.6.0"), Control("photocraft", YANK, "v0.5.0"))
    served = serve(NEW, (OLD,), yanks, "stable", now)
    assert served.latest_release is None and served.rollout is None


def test_taking_over_a_staged_rollout_serves_the_same_and_then_pauses_where_it_stands() -> None:
    published = NEW.published_at or SINCE
    now = ms(published + 30 * HOUR)
    policy = staged()
    taken = rollout_of(policy, "v0.6.0", ms(published))
    assert serve(NEW, (OLD,), (policy, taken), "stable", now) == serve(NEW, (OLD,), (policy,), "stable", now)
    paused = replace(taken, paused_at_ms=now)
    later = serve(NEW, (OLD,), (policy, paused), "stable", ms(published + 100 * HOUR))
    assert later.rollout == Rollout(NEW, 25)


def test_waiting_says_the_next_step_and_when() -> None:
    published = NEW.published_at or SINCE
    waits = waiting([NEW, OLD], (staged(),), "stable", ms(published + HOUR))
    assert list(waits) == ["v0.6.0"]
    wait = waits["v0.6.0"]
    assert (wait.kind, wait.percentage, wait.next_percentage) == (STAGED, 5, 25)
    assert wait.next_ms == ms(published + 24 * HOUR)
    held = waiting([NEW, OLD], (approval(),), "stable", ms(published + HOUR))["v0.6.0"]
    assert (held.kind, held.percentage, held.next_ms) == (APPROVAL, None, None)


def test_a_release_without_a_publish_time_is_not_new() -> None:
    undated = replace(NEW, published_at=None)
    assert waiting([undated], (approval(),), "stable", ms(SINCE + 30 * HOUR)) == {}


def test_the_policy_steps_are_carried_from_its_since_instant() -> None:
    policy = staged(schedule="+1h 10")
    assert policy.steps == (Step(ms(SINCE + HOUR), 10),)
    before_first = serve(NEW, (OLD,), (policy,), "stable", ms((NEW.published_at or SINCE) + HOUR / 2))
    assert before_first.rollout == Rollout(NEW, 0)
