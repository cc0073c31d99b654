"""The ``slow`` mark means something: ``bash .ci/test --dev`` leaves its tests out, while the
matrix (noxfile.py, which CI runs through ``bash .ci/test``) selects nothing away."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_dev_run_leaves_out_the_slow_tests_and_the_matrix_runs_every_test(
    pytestconfig: pytest.Config,
) -> None:
    script = (ROOT / ".ci" / "test").read_text(encoding="utf-8")
    dev_branch = script.split('if [ "$dev" = yes ]; then', 1)[1].split("\nelse\n", 1)[0]
    [dev_pytest] = [line for line in dev_branch.splitlines() if ".venv/bin/pytest" in line]
    # The mark comes before the caller's arguments, so a later `-m ""` runs everything.
    assert re.search(r'-m "not slow" "\$\{args\[@\]\}"', dev_pytest), dev_pytest

    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    [matrix_pytest] = [line for line in noxfile.splitlines() if 'session.run("pytest"' in line]
    assert '"-m"' not in matrix_pytest and "slow" not in matrix_pytest
    assert "-m" not in str(pytestconfig.getini("addopts")).split()

    markers = [str(line) for line in pytestconfig.getini("markers")]
    assert any(line.startswith("slow:") and "--dev" in line for line in markers)
