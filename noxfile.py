"""The test matrix: Django's checks, the OpenAPI validation and the whole suite on every supported
Python/Django pair, each in its own virtual environment under ``.nox/``.

``nox -l`` lists the pairs; ``nox -s "tests(3.12-6.0)"`` runs one (arguments after ``--`` go to
pytest); ``bash .ci/test`` runs the linters once, then every pair. An environment is built once and
reused while ``requirements/`` and ``pyproject.toml`` are unchanged (a stamp in it says which);
uv (``requirements/lint.txt``) builds one in seconds from its cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# Each Django release with the Pythons it supports (Django's own table).
DJANGOS: dict[str, tuple[str, ...]] = {
    "4.2": ("3.10", "3.11", "3.12"),
    "5.2": PYTHONS,
    "6.0": ("3.12", "3.13"),
    "6.1": ("3.12", "3.13"),  # and 3.14, which no registry here offers: untested (the docs say so)
}
PAIRS = [(python, django) for python in PYTHONS for django, pythons in DJANGOS.items() if python in pythons]
# The tests marked slow run once: half of them on the oldest pair, half on the newest.
SLOW_SHARES = {"3.10-4.2": "1/2", "3.13-6.1": "2/2"}
STAMP = ".requirements.sha256"

nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = True


def interpreter(version: str) -> str:
    """``pythonX.Y`` on PATH when it runs, else pyenv's newest ``X.Y.*`` (pyenv's shims only
    answer for the versions selected in the shell), else the bare version for nox to report."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
        return found
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    installed = [
        path
        for path in versions.glob(f"{version}.*/bin/python{version}")
        if re.fullmatch(rf"{re.escape(version)}\.\d+", path.parents[1].name)
    ]
    if installed:
        return str(max(installed, key=lambda path: int(path.parents[1].name.rsplit(".", 1)[1])))
    return version


def requirements_digest() -> str:
    digest = hashlib.sha256()
    for path in [*sorted((ROOT / "requirements").glob("*.txt")), ROOT / "pyproject.toml"]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def install(session: nox.Session, *requirement_files: str) -> None:
    """The pinned requirements and this project (editable), unless the stamp says they are in."""
    stamp = Path(session.virtualenv.location) / STAMP
    want = requirements_digest()
    if stamp.exists() and stamp.read_text() == want:
        session.log("requirements unchanged: reusing the environment")
        return
    session.install("--quiet", *(arg for path in requirement_files for arg in ("-r", path)))
    session.install("--quiet", "--no-deps", "--no-build-isolation", "-e", ".")
    stamp.write_text(want)


# --seed: pip in each environment, which the install tests run (python -m pip).
@nox.session(venv_backend="uv", venv_params=["--seed"])
@nox.parametrize(
    ("python", "django"),
    [(interpreter(python), django) for python, django in PAIRS],
    ids=[f"{python}-{django}" for python, django in PAIRS],
)
def tests(session: nox.Session, django: str) -> None:
    install(session, "requirements/test.txt", "requirements/docs.txt", f"requirements/django-{django}.txt")
    session.run("python", "manage.py", "check", "--fail-level", "WARNING")
    session.run("python", "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    pair = session.name.partition("(")[2].rstrip(")")  # tests(3.12-6.0): its id
    # The tests marked slow (real processes: gunicorn, pollers, fleets, wheels, a browser) are
    # shared between the pairs at the ends of the matrix; every pair runs the rest, which covers
    # what differs between Pythons and Djangos. A later -m in the arguments wins.
    share = SLOW_SHARES.get(pair)
    only = ["--slow-share", share] if share else ["-m", "not slow"]
    session.run("pytest", "-q", "-n", "2", *only, *session.posargs)
