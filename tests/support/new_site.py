"""A site as a new user makes one, in a directory of the test: ``django-admin startproject mysite``,
craft_apps added by ``python -m craft_apps.install_example`` and the static files settings of
docs/installation.md appended as they are printed there, then ``DEBUG = False``.

craft_apps is this environment's (installed from the checkout); tests/test_install.py installs
the wheel. The site's commands run without this suite's ``DJANGO_*`` and ``CRAFT_APPS_*``
variables, so only the site's own settings count.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALLATION = ROOT / "docs" / "installation.md"
PROJECT = "mysite"
HOST = "127.0.0.1"


def static_files_block() -> str:
    """The installation page's one Python block that sets STATIC_ROOT, as printed."""
    blocks = re.findall(r"```python\n(.*?)```", INSTALLATION.read_text(encoding="utf-8"), re.DOTALL)
    found = [block for block in blocks if "STATIC_ROOT" in block]
    assert len(found) == 1, f"expected one python block setting STATIC_ROOT in {INSTALLATION}"
    return textwrap.dedent(found[0])


@dataclass(frozen=True)
class NewSite:
    directory: Path
    env: dict[str, str] = field(repr=False)

    @property
    def settings_module(self) -> str:
        return f"{PROJECT}.settings"

    @property
    def wsgi_application(self) -> str:
        return f"{PROJECT}.wsgi"

    def run(self, *command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            command, cwd=self.directory, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
        return done

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "manage.py", *args)


def site_environment() -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "CRAFT_APPS_", "PROMETHEUS_")) and key != "DATABASE_URL"
    } | {"NO_PROXY": "127.0.0.1,localhost"}


def new_site(directory: Path) -> NewSite:
    """startproject, the install script, the docs' static files block, DEBUG off; migrated and
    its static files collected, as the installation page's steps say."""
    directory.mkdir(parents=True)
    site = NewSite(directory, site_environment())
    site.run(sys.executable, "-m", "django", "startproject", PROJECT, str(directory))
    site.run(sys.executable, "-m", "craft_apps.install_example", PROJECT)
    settings = directory / PROJECT / "settings.py"
    with settings.open("a", encoding="utf-8") as out:
        out.write("\n" + static_files_block())
        out.write(f'\nDEBUG = False\nALLOWED_HOSTS = ["{HOST}", "localhost"]\n')
    site.manage("migrate", "--noinput")
    site.manage("collectstatic", "--noinput")
    return site


def wait_until_served(url: str, process: subprocess.Popen[bytes], log: Path, within_s: float = 60) -> None:
    """Until ``url`` answers 200: the port is the server's signal that it is up."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:  # refused while it starts; an HTTPError is one too
            pass
        time.sleep(0.05)  # a starting server, not a timer under test
    raise AssertionError(f"{url} did not answer within {within_s:g} s: {log.read_text()[-2000:]}")
