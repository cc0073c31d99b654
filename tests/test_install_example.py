"""``python -m craft_apps.install_example`` on a real ``django-admin startproject`` site, with no
program of the system on ``PATH`` (it is plain Python): it says what it changed, run again it
changes nothing (a second block made the site fail to start: ``Application labels aren't
unique``), and a wrong project name is refused with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts manage.py and the script as a site's processes


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CRAFT_APPS_"))}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def new_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    made = run([sys.executable, "-m", "django", "startproject", "mysite", str(site)], tmp_path)
    assert made.returncode == 0, made.stderr
    return site


def install_example(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """With no ``PATH``: plain Python, it needs no shell or other program of the system."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CRAFT_APPS_"))}
    return subprocess.run(
        [sys.executable, "-m", "craft_apps.install_example", *args],
        cwd=site, env=env | {"PATH": ""}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_run_twice_it_adds_each_block_once_says_so_and_the_site_passes_its_checks(tmp_path: Path):
    site = new_site(tmp_path)
    first = install_example(site, "mysite")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "mysite/settings.py: added craft_apps and its API's apps to INSTALLED_APPS, REST_FRAMEWORK,"
        " SPECTACULAR_SETTINGS, MIDDLEWARE",
        "mysite/urls.py: added /v1/craft_apps/ (the endpoint), /api/schema/, /api/docs/ and /api/redoc/",
    ]
    applied = {name: (site / "mysite" / name).read_text() for name in ("settings.py", "urls.py")}

    second = install_example(site, "mysite")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "mysite/settings.py: unchanged (it has craft_apps's settings already)",
        "mysite/urls.py: unchanged (it has craft_apps's URLs already)",
    ]
    assert {name: (site / "mysite" / name).read_text() for name in applied} == applied
    assert applied["settings.py"].count('"craft_apps"]') == 1
    assert applied["settings.py"].count("craft_apps.api.startup.StartBackground") == 1

    check = run([sys.executable, "manage.py", "check"], site)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "System check identified no issues" in check.stdout
    urls = run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.urls import reverse; print(reverse('redoc'))",
        ],
        site,
    )
    assert urls.stdout.splitlines()[-1] == "/api/redoc/", urls.stdout + urls.stderr


def test_a_wrong_project_name_is_refused_with_one_line_and_nothing_is_written(tmp_path: Path):
    site = new_site(tmp_path)
    before = sorted(path.relative_to(site) for path in site.rglob("*"))
    refused = install_example(site, "mysit")
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "install_example: no mysit/settings.py and mysit/urls.py here: run it beside manage.py, naming"
        " the project (python -m craft_apps.install_example <project>)."
    ]
    assert sorted(path.relative_to(site) for path in site.rglob("*")) == before
