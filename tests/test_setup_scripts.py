"""The set-up scripts people run by hand: ``source .ci/setup`` leaves their shell as it was (it
left ``set -euo pipefail`` behind, so the next failing command closed the terminal), and
``bash .ci/docs`` builds the documentation site with only what it needs (no apt-get)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.source import copy_of_the_source

ROOT = Path(__file__).resolve().parents[1]


def test_sourcing_the_setup_leaves_the_shells_options_and_directory_as_they_were(tmp_path: Path):
    # An unknown profile: the set-up fails at once, as any failure inside it would.
    script = f"""
        set +euo pipefail
        before="$- $(set -o | grep pipefail)"
        source {ROOT}/.ci/setup no-such-profile 2>/dev/null
        echo "status $?"
        echo "options ${{before}} -> $- $(set -o | grep pipefail)"
        echo "directory $PWD"
        false
        echo "the shell goes on after a failing command"
    """
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert lines[0] == "status 2", done.stdout + done.stderr
    before, after = lines[1].removeprefix("options ").split(" -> ")
    assert before == after
    assert lines[2:] == [f"directory {tmp_path}", "the shell goes on after a failing command"]


@pytest.mark.slow  # a virtual environment and a Sphinx build
def test_the_docs_command_builds_the_site_and_installs_no_system_package(tmp_path: Path):
    source = copy_of_the_source(tmp_path / "clone")
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "system-package-calls"
    for tool in ("apt-get", "apt", "sudo"):
        (fake / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 1\n')
        (fake / tool).chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{fake}:{env['PATH']}"
    built = subprocess.run(
        ["bash", ".ci/docs"], cwd=source, env=env, capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert not calls.exists(), calls.read_text()
    assert (source / "docs" / "_build" / "html" / "settings.html").is_file()
    assert built.stdout.splitlines()[-1].endswith("docs/_build/html/index.html")
    installed = subprocess.run(
        [str(source / ".venv-docs" / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
    ).stdout.lower()
    assert "sphinx==" in installed and "django==" not in installed
