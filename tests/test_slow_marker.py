"""The ``slow`` mark means something: ``bash .ci/test --dev`` leaves its tests out; the matrix
(noxfile.py, which CI runs through ``bash .ci/test``) runs half of them on the oldest pair, half
on the newest, and the tests not marked slow on every pair."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.slow_share import outside_share, parse_share

ROOT = Path(__file__).resolve().parents[1]


def test_the_dev_run_leaves_out_the_slow_tests_and_the_matrix_runs_them_on_two_pairs(
    pytestconfig: pytest.Config,
) -> None:
    script = (ROOT / ".ci" / "test").read_text(encoding="utf-8")
    dev_branch = script.split('if [ "$dev" = yes ]; then', 1)[1].split("\nelse\n", 1)[0]
    [dev_pytest] = [line for line in dev_branch.splitlines() if ".venv/bin/pytest" in line]
    # The mark comes before the caller's arguments, so a later `-m ""` runs everything.
    assert re.search(r'-m "not slow" "\$\{args\[@\]\}"', dev_pytest), dev_pytest

    # Read, not imported: a pair's environment has no nox.
    source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    [matrix_pytest] = [line for line in source.splitlines() if 'session.run("pytest"' in line]
    # The pair's selection comes before the caller's arguments, so a later -m wins.
    assert matrix_pytest.strip() == 'session.run("pytest", "-q", "-n", "2", *only, *session.posargs)'
    assert 'only = ["--slow-share", share] if share else ["-m", "not slow"]' in source
    # The oldest pair and the newest pair (PYTHONS and DJANGOS' ends).
    assert 'SLOW_SHARES = {"3.10-4.2": "1/2", "3.13-6.1": "2/2"}' in source
    assert 'PYTHONS = ("3.10", "3.11", "3.12", "3.13")' in source
    assert '"4.2": ("3.10", "3.11", "3.12"),' in source and '"6.1": ("3.12", "3.13"),' in source
    assert "-m" not in str(pytestconfig.getini("addopts")).split()

    markers = [str(line) for line in pytestconfig.getini("markers")]
    assert any(line.startswith("slow:") and "--dev" in line for line in markers)


def test_the_two_shares_hold_every_slow_test_once() -> None:
    ids = [f"tests/test_{name}.py::test_{n}" for name in "abc" for n in range(7)]
    first, second = (set(ids) - outside_share(reversed(ids), k, 2) for k in (1, 2))
    assert first and second and not first & second
    assert first | second == set(ids)
    assert abs(len(first) - len(second)) <= 1
    # Neighbours in a file go to different shares.
    assert ("tests/test_a.py::test_0" in first) != ("tests/test_a.py::test_1" in first)


@pytest.mark.parametrize("text", ["3/2", "0/2", "1", "a/b", "1/0"])
def test_a_bad_share_stops_the_run(text: str) -> None:
    with pytest.raises(pytest.UsageError, match="--slow-share takes K/N"):
        parse_share(text)
