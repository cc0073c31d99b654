"""`manage.py poll_craft_releases` as real processes: exit codes, signals and the lease.

The pollers talk to the local GitHub stand-in; the lease is shortened (TTL 3 s, retry 0.5 s)
through its settings so takeovers happen in seconds. Waiting here is for real processes and
sockets, bounded by deadlines; no test waits for a timer of its own.
"""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import django
import pytest

import craft_apps
from craft_apps.compat import UTC
from craft_apps.domain import AppSpec
from craft_apps.management.commands.poll_craft_releases import Command
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub, SlowFault, StatusFault

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    AppSpec("photocraft", "PhotoCraft", "storytold/photocraft"),
    AppSpec("artcraft-launcher", "ArtCraft Launcher", "storytold/craft-launcher"),
)
TTL_S, RETRY_S = 3.0, 0.5

pytestmark = pytest.mark.slow


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        for app in APPS:
            server.publish(app.repo, demo_release(app, "0.5.0", datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


@pytest.fixture
def poller_env(github: FakeGitHub, state_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
        CRAFT_APPS_RELEASE_APPS=",".join(f"{a.key}={a.name}={a.repo}" for a in APPS),
        CRAFT_APPS_LEASE_TTL_SECS=str(TTL_S),
        CRAFT_APPS_LEASE_RETRY_SECS=str(RETRY_S),
    )
    return env


class Poller:
    """One `poll_craft_releases` process, its output collected in a file."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "poll_craft_releases", *args],
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 20) -> float:
        """Seconds until `text` appears in the output."""
        return wait_until(
            lambda: text in self.output(), timeout, f"{text!r} in {self.log.name}: {self.output()}"
        )

    def finish(self, timeout: float = 20) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self._out.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.finish()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
    return time.monotonic() - started


def lease_row(state_dir: Path) -> tuple[str, int, int]:
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    try:
        row = db.execute("SELECT holder, fence, expires_ms FROM lease").fetchone()
    finally:
        db.close()
    assert row is not None
    holder, fence, expires_ms = row
    return str(holder), int(fence), int(expires_ms)


@pytest.fixture
def pollers(poller_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Poller]]:
    started: list[Poller] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Poller:
        poller = Poller(env or poller_env, tmp_path / f"poller-{len(started)}.log", *args)
        started.append(poller)
        return poller

    yield start
    for poller in started:
        poller.kill()


def test_version_is_craft_apps_version_not_djangos(capsys):
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(SystemExit) as exited:
        command.run_from_argv(["manage.py", "poll_craft_releases", "--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == craft_apps.__version__ != django.get_version()


def test_once_runs_a_round_and_exits_0(pollers, github: FakeGitHub, state_dir: Path):
    poller = pollers("--once")
    assert poller.finish() == 0, poller.output()
    assert len(github.requests) == 2
    assert "2 fetched, 0 unchanged, 0 failed" in poller.output()
    assert (state_dir / "craft_apps_state.sqlite3").stat().st_mode & 0o777 == 0o600


def test_once_exits_0_whatever_github_answers(pollers, github: FakeGitHub):
    github.unpublish(APPS[0].repo)
    github.set_fault(APPS[1].repo, StatusFault(502))
    poller = pollers("--once")
    assert poller.finish() == 0, poller.output()
    assert "1 fetched, 0 unchanged, 1 failed" in poller.output()


def test_a_configuration_error_stops_it_with_the_setting_named(pollers, poller_env):
    poller = pollers("--once", env={**poller_env, "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "often"})
    assert poller.finish() != 0
    assert "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS" in poller.output()


def test_polling_disabled_says_so_and_exits_0(pollers, poller_env, github: FakeGitHub):
    poller = pollers(env={**poller_env, "CRAFT_APPS_RELEASE_POLLING_ENABLED": "false"})
    assert poller.finish() == 0
    assert "disabled" in poller.output()
    assert github.requests == []


def test_a_restart_revalidates_with_if_none_match(pollers, github: FakeGitHub, poller_env):
    assert pollers("--once").finish() == 0
    github.reset_requests()
    # An hour later (as far as the state file knows) every app is due again.
    db = sqlite3.connect(Path(poller_env["CRAFT_APPS_STATE_DIR"]) / "craft_apps_state.sqlite3")
    db.execute("UPDATE app_state SET fetched_ms = fetched_ms - 3600000")
    db.commit()
    db.close()
    assert pollers("--once").finish() == 0
    assert [r.status for r in github.requests] == [304, 304]
    assert all(r.header("If-None-Match") == github.etag_of(str(r.repo)) for r in github.requests)


def test_two_processes_racing_for_a_cold_lease_poll_once(pollers, github: FakeGitHub):
    racers = [pollers("--once") for _ in range(2)]
    assert [racer.finish() for racer in racers] == [0, 0]
    outputs = [racer.output() for racer in racers]
    assert sum("this poller is active" in out for out in outputs) == 1, outputs
    assert sum("another poller" in out for out in outputs) == 1, outputs
    assert sorted(str(r.repo) for r in github.requests) == sorted(app.repo for app in APPS)


def test_sigterm_exits_0_quickly_and_a_standby_takes_over_within_seconds(pollers, state_dir: Path):
    holder = pollers("--no-startup-delay")
    holder.wait_for("2 fetched")
    standby = pollers("--no-startup-delay")
    standby.wait_for("standing by")
    fence = lease_row(state_dir)[1]
    holder.process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert holder.finish() == 0, holder.output()
    assert time.monotonic() - started < 2.0
    took_over = standby.wait_for("took over polling", timeout=5)
    assert took_over < RETRY_S + 1.5
    assert lease_row(state_dir)[1] == fence + 1


def test_sigterm_during_a_slow_request_still_exits_0_within_two_seconds(pollers, github: FakeGitHub):
    github.set_fault(APPS[0].repo, SlowFault(20))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the slow request")
    holder.process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert holder.finish() == 0
    assert time.monotonic() - started < 2.0


def test_a_second_signal_exits_at_once(pollers, github: FakeGitHub):
    github.set_fault(APPS[0].repo, SlowFault(20))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the slow request")
    holder.process.send_signal(signal.SIGINT)
    holder.wait_for("stopping after the request in flight")  # signals sent together would merge
    holder.process.send_signal(signal.SIGINT)
    started = time.monotonic()
    status = holder.finish()
    assert time.monotonic() - started < 0.5
    assert status == 130


def test_kill_9_of_the_holder_gives_a_takeover_within_the_ttl_plus_a_retry(pollers, state_dir: Path):
    holder = pollers("--no-startup-delay")
    holder.wait_for("2 fetched")
    standby = pollers("--no-startup-delay")
    standby.wait_for("standing by")
    holder.process.kill()
    holder.finish()
    took_over = standby.wait_for("took over polling", timeout=TTL_S + RETRY_S + 5)
    assert took_over <= TTL_S + RETRY_S + 1.0


def test_a_holder_paused_past_its_ttl_has_its_writes_refused_and_steps_down(
    pollers, github: FakeGitHub, state_dir: Path
):
    # The request outlasts the standby's start (seconds on a busy machine) and then the TTL.
    github.set_fault(APPS[0].repo, SlowFault(TTL_S + 7))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the holder's slow request")
    standby = pollers("--no-startup-delay")
    standby.wait_for("standing by")  # up and waiting before the holder stalls
    holder.process.send_signal(signal.SIGSTOP)
    standby.wait_for("took over polling", timeout=TTL_S + RETRY_S + 5)
    new_fence = lease_row(state_dir)[1]
    holder.process.send_signal(signal.SIGCONT)
    holder.wait_for("standing by", timeout=TTL_S + 10)
    out = holder.output()
    assert "another poller took over" in out or "lease lost" in out or "lost the lease" in out, out
    assert lease_row(state_dir)[1] == new_fence
    assert holder.process.poll() is None, "a superseded holder waits as a standby"


def test_the_example_supervisord_configuration_runs_and_stops_the_poller(
    poller_env: dict[str, str], state_dir: Path, tmp_path: Path
):
    supervisor_dir = tmp_path / "supervisor"
    supervisor_dir.mkdir()
    env = {
        **poller_env,
        "CRAFT_APPS_SUPERVISOR_DIR": str(supervisor_dir),
        "CRAFT_APPS_PYTHON": sys.executable,
    }
    bin_dir = str(Path(sys.executable).parent)
    conf = ROOT / "config" / "supervisord.conf"
    supervisord = subprocess.Popen([f"{bin_dir}/supervisord", "-c", str(conf)], cwd=ROOT, env=env)
    ctl = [f"{bin_dir}/supervisorctl", "-c", str(conf)]
    try:
        log = supervisor_dir / "poller.log"
        wait_until(lambda: log.exists() and "this poller is active" in log.read_text(), 30, "the poller")
        holder, fence, expires_ms = lease_row(state_dir)
        assert expires_ms > 0
        stopped = subprocess.run(
            [*ctl, "stop", "craft_apps_poller"], env=env, capture_output=True, text=True, timeout=20
        )
        assert "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        status = subprocess.run(
            [*ctl, "status", "craft_apps_poller"], env=env, capture_output=True, text=True, timeout=20
        )
        assert "STOPPED" in status.stdout
        assert (
            "stopped: craft_apps_poller (exit status 0)" in (supervisor_dir / "supervisord.log").read_text()
        )
        assert lease_row(state_dir) == (holder, fence, 0), "expired in place, the fence kept"
    finally:
        subprocess.run([*ctl, "shutdown"], env=env, capture_output=True, timeout=20)
        supervisord.wait(20)
