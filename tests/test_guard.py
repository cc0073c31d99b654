"""A guarded policy's rule (``controls.guard``): a step waits for its time, the minimum of installs
and a healthy share; over the threshold it pauses, and stays paused until resumed."""

from __future__ import annotations

from craft_apps.controls.guard import GuardRule, Health, Mark, decide, format_marks, parse_marks, resume
from craft_apps.controls.rules import ROLLOUT, Control, Step

HOUR = 3_600_000
ROLL = Control(
    "photocraft", ROLLOUT, "v1.3.0", "stable", 0, (Step(0, 5), Step(HOUR, 25), Step(2 * HOUR, 100))
)
RULE = GuardRule(200, 2.0)


def test_the_first_step_is_taken_on_time_alone():
    decision = decide(ROLL, None, RULE, Health(0, 0), 10)
    assert (decision.percentage, decision.paused, decision.mark) == (5, False, None)


def test_a_step_whose_time_has_not_come_waits_however_healthy():
    decision = decide(ROLL, None, RULE, Health(1000, 0), HOUR - 1)
    assert (decision.percentage, decision.mark) == (5, None)


def test_too_few_installs_hold_the_step():
    decision = decide(ROLL, None, RULE, Health(199, 0), HOUR)
    assert (decision.percentage, decision.paused, decision.mark) == (5, False, None)
    assert "199 of the 200 installs" in decision.why


def test_under_the_threshold_the_step_is_taken_and_kept():
    decision = decide(ROLL, None, RULE, Health(250, 5), HOUR)  # 2 %: at most the threshold
    assert decision.mark == Mark("v1.3.0", 25, False, HOUR, Health(250, 5))
    assert decision.percentage == 25


def test_over_the_threshold_it_pauses_where_it_stands_and_stays_paused():
    decision = decide(ROLL, None, RULE, Health(250, 12), HOUR)
    assert (decision.percentage, decision.paused) == (5, True)
    assert decision.mark is not None and decision.mark.paused and decision.mark.seen == Health(250, 12)
    assert "12 of 250 installs failing (4.8 %)" in decision.why
    later = decide(ROLL, decision.mark, RULE, Health(10_000, 0), 3 * HOUR)
    assert (later.percentage, later.paused, later.mark) == (5, True, None), "never moves on its own"


def test_a_resume_judges_the_reports_after_it():
    paused = Mark("v1.3.0", 25, True, HOUR, Health(250, 12))
    resumed = resume(paused, Health(260, 12), 2 * HOUR)
    assert not resumed.paused and resumed.base == Health(260, 12)
    waiting = decide(ROLL, resumed, RULE, Health(400, 13), 2 * HOUR)
    assert (waiting.percentage, waiting.mark) == (25, None), "140 installs since the resume: too few"
    moved = decide(ROLL, resumed, RULE, Health(460, 14), 2 * HOUR)
    assert moved.mark is not None and moved.percentage == 100 and moved.mark.base == Health(260, 12)


def test_counts_that_cant_be_read_move_nothing():
    decision = decide(ROLL, None, RULE, None, 3 * HOUR)
    assert (decision.percentage, decision.paused, decision.mark) == (5, False, None)


def test_marks_read_back_as_written_and_other_lines_are_skipped():
    marks = {"v1.3.0": Mark("v1.3.0", 25, True, HOUR, Health(250, 12), Health(3, 1))}
    assert parse_marks(format_marks(marks) + "\nv9 nonsense\nv2 101 open 1 1 1 1 1") == marks
