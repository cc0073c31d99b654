"""The systemd examples: they name the site only through placeholders; with those filled (this
repository's site, this virtual environment) `systemd-analyze verify` finds nothing to say, the
hardening is there and scores well offline, and the poller unit's command, run as the unit would
run it, polls."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from config.environment import PLACEHOLDER_SECRET_KEY
from craft_apps.conf import DEFAULT_APPS
from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.deploy.support import (
    EXAMPLES,
    NGINX_SITE,
    PLACEHOLDER,
    THIS_SITE,
    containers,
    environment_of,
    filled,
    outside_environment,
    postgres_database,
    strong_secret_key,
)

ROOT = Path(__file__).resolve().parents[2]
UNITS = EXAMPLES / "systemd"
ENV_EXAMPLE = UNITS / "craft-apps.env.example"
NAMES = ("craft-apps-web.service", "craft-apps-poller.service")
# What the units leave to the site, each named once in the web unit's header.
PLACEHOLDERS = {"@SITE_DIR@", "@VENV_DIR@", "@SETTINGS_MODULE@", "@WSGI_APPLICATION@"}
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "StateDirectory": "craft_apps",
    "StateDirectoryMode": "0700",
    "User": "craft-apps",
}

pytestmark = pytest.mark.slow


def env_file(path: Path) -> dict[str, str]:
    """KEY=value lines as systemd's EnvironmentFile= reads them (the example has no quoting)."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return dict(line.partition("=")[::2] for line in lines if line and not line.startswith("#"))


def service_section(path: Path) -> list[tuple[str, str]]:
    """The [Service] section's settings in order (a key may repeat, as Environment= does)."""
    settings, section = [], None
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings.append((key, value))
    return settings


def site_values(site_dir: Path) -> dict[str, str]:
    """The placeholders for this repository's site at ``site_dir`` in this virtual environment."""
    return THIS_SITE | {"@SITE_DIR@": str(site_dir), "@VENV_DIR@": str(Path(sys.executable).parent.parent)}


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """The units as installed, their placeholders filled, for a site at tmp_path/app (this
    repository's, through symlinks)."""
    app = tmp_path / "app"
    app.mkdir()
    for name in ("manage.py", "config", "craft_apps"):
        (app / name).symlink_to(ROOT / name)
    units = tmp_path / "units"
    units.mkdir()
    for name in NAMES:
        (units / name).write_text(filled((UNITS / name).read_text(), site_values(app)))
    return units


@pytest.mark.parametrize("name", NAMES)
def test_the_units_name_the_site_only_through_its_placeholders(name: str):
    text = (UNITS / name).read_text()
    settings = "\n".join(f"{key}={value}" for key, value in service_section(UNITS / name))
    assert set(PLACEHOLDER.findall(settings)) <= PLACEHOLDERS
    assert "@SITE_DIR@" in settings and "@VENV_DIR@" in settings and "@SETTINGS_MODULE@" in settings
    assert "/srv/" not in settings and "config." not in settings, "no checkout of this repository"
    header = (UNITS / NAMES[0]).read_text().split("[Unit]")[0]
    assert all(f"#   {placeholder} " in header for placeholder in PLACEHOLDERS), "each one explained"
    assert set(PLACEHOLDER.findall(text)) <= PLACEHOLDERS


def test_as_shipped_verify_fails_on_the_placeholders_so_they_must_be_filled(tmp_path: Path):
    """Why the test fills them: the shipped unit names no real program."""
    for name in NAMES:
        (tmp_path / name).write_text((UNITS / name).read_text())
    done = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", *(f"./{name}" for name in NAMES)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "path is not absolute: @SITE_DIR@" in done.stderr, done.stderr


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze is missing: .ci/setup installs Debian's systemd package"
    return found


def test_systemd_analyze_verify_has_nothing_to_say(installed: Path):
    done = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", *(f"./{name}" for name in NAMES)],
        cwd=installed,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_a_mistake_in_a_unit_would_be_caught(installed: Path):
    unit = installed / NAMES[1]
    unit.write_text(unit.read_text().replace("ProtectSystem=strict", "ProtectSystem=sometimes"))
    done = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", f"./{NAMES[1]}"],
        cwd=installed,
        capture_output=True,
        text=True,
    )
    assert "protect system value" in done.stdout + done.stderr, (done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("name", NAMES)
def test_both_are_hardened_and_share_the_state_directory_as_one_user(name: str, installed: Path):
    settings = dict(service_section(UNITS / name))
    assert {key: settings.get(key) for key in HARDENING} == HARDENING
    assert ("Environment", "CRAFT_APPS_STATE_DIR=%S/craft_apps") in service_section(UNITS / name)
    done = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", f"./{name}"],
        cwd=installed,
        capture_output=True,
        text=True,
        timeout=60,
    )
    level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", done.stdout)
    assert level is not None, done.stdout + done.stderr
    assert float(level.group(1)) <= 2.0, done.stdout[-2000:]


def test_the_poller_units_command_polls_as_the_unit_runs_it(tmp_path: Path, installed: Path):
    """ExecStart in WorkingDirectory with the environment file and the unit's Environment= (%S the
    state root), plus --once."""
    with postgres_database() as database_url:
        poll_as_the_unit(tmp_path, installed, database_url)


def poll_as_the_unit(tmp_path: Path, installed: Path, database_url: str) -> None:
    settings = service_section(installed / NAMES[1])
    values = dict(settings)
    assert values["EnvironmentFile"] == "/etc/craft_apps/env"
    state_root = tmp_path / "var-lib"
    env = outside_environment()
    env.update(env_file(ENV_EXAMPLE))  # the example filled in: a real key and database, no Redis
    del env["CRAFT_APPS_REDIS_URL"]
    env["DJANGO_SECRET_KEY"] = strong_secret_key()
    env["DATABASE_URL"] = database_url
    for key, value in settings:
        if key == "Environment":
            name, _, text = value.partition("=")
            env[name] = text.replace("%S", str(state_root))
    with FakeGitHub() as github:
        for app in DEFAULT_APPS:
            github.publish(app.repo, demo_release(app, "1.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        env["CRAFT_APPS_RELEASE_GITHUB_API_URL"] = github.url
        env["CRAFT_APPS_RELEASE_APPS"] = "photocraft=PhotoCraft=storytold/photocraft"
        done = subprocess.run(
            [*shlex.split(values["ExecStart"]), "--once"],
            cwd=values["WorkingDirectory"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert (state_root / "craft_apps" / "craft_apps_state.sqlite3").exists()


def test_both_units_run_the_sites_settings_and_the_env_file_names_what_the_secret_does():
    for name in NAMES:
        assert ("Environment", "DJANGO_SETTINGS_MODULE=@SETTINGS_MODULE@") in service_section(UNITS / name)
    example = env_file(ENV_EXAMPLE)
    assert example["DJANGO_SECRET_KEY"] == PLACEHOLDER_SECRET_KEY, "a placeholder the settings refuse"
    assert example["DATABASE_URL"].startswith("postgresql://"), "one site database for every host"
    # What the pod's ConfigMap and Secret give, but for what the units' Environment= lines set.
    in_the_units = {"DJANGO_SETTINGS_MODULE", "CRAFT_APPS_STATE_DIR", "PROMETHEUS_MULTIPROC_DIR"}
    assert set(example) == set(environment_of(containers()["web"])) - in_the_units


def test_gunicorn_listens_on_loopback_only_behind_the_hosts_nginx():
    exec_start = shlex.split(dict(service_section(UNITS / NAMES[0]))["ExecStart"])
    bind = exec_start[exec_start.index("--bind") + 1]
    assert bind == "127.0.0.1:8000"
    assert f"proxy_pass http://{bind};" in NGINX_SITE.read_text()
