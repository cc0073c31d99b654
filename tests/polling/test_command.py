"""`manage.py poll_craft_releases` as real processes: exit codes, signals, the lease, and the
state file under faults (deleted under gunicorn and the poller, read-only, full, locked, a
symbolic link, a crowd of --once runs on a new directory).

The pollers talk to the local GitHub stand-in; the lease is shortened (TTL 3 s, retry 0.5 s)
through its settings so takeovers happen in seconds. Waiting here is for real processes and
sockets, bounded by deadlines; no test waits for a timer of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.api.caching import CACHEABLE
from craft_apps.host.store import StateStore
from craft_apps.testing.fake_github import FakeGitHub, SlowFault, StatusFault
from tests.polling.processes import APPS, RETRY_S, ROOT, TTL_S, Poller, wait_until
from tests.support import ONE_AT_A_TIME, free_port, publish

pytestmark = pytest.mark.slow


def asked(github: FakeGitHub) -> tuple[list[str], list[str]]:
    """The repositories GitHub was asked the latest release of, and the release list of (once
    each per app in a first round: the list comes with an app's first latest), sorted."""
    latests = [str(r.repo) for r in github.requests if r.path.endswith("/releases/latest")]
    lists = [str(r.repo) for r in github.requests if r.path.split("?")[0].endswith("/releases")]
    assert len(latests) + len(lists) == len(github.requests), "nothing but latests and lists"
    return sorted(latests), sorted(lists)


EVERY_APP = sorted(app.repo for app in APPS)


def lease_row(state_dir: Path) -> tuple[str, int, int]:
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    try:
        row = db.execute("SELECT holder, fence, expires_ms FROM lease").fetchone()
    finally:
        db.close()
    assert row is not None
    holder, fence, expires_ms = row
    return str(holder), int(fence), int(expires_ms)


def test_once_runs_a_round_and_exits_0(pollers, github: FakeGitHub, state_dir: Path):
    poller = pollers("--once")
    assert poller.finish() == 0, poller.output()
    assert asked(github) == (EVERY_APP, EVERY_APP)
    assert "4 fetched, 0 unchanged, 0 failed" in poller.output()  # two latests, two lists
    assert (state_dir / "craft_apps_state.sqlite3").stat().st_mode & 0o777 == 0o600


def test_once_exits_3_when_failed_requests_leave_an_app_out_of_date(pollers, github: FakeGitHub):
    github.releases.unpublish(APPS[0].repo)  # a repository without a release is fetched, not failed
    github.set_fault(APPS[1].repo, StatusFault(502))
    poller = pollers("--once")
    assert poller.finish() == 3, poller.output()
    assert "1 fetched, 0 unchanged, 1 failed" in poller.output()
    assert "1 apps are older than the interval: artcraft-launcher" in poller.output()


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


def logged_at(output: str, text: str) -> str | None:
    """The timestamp of the first log line holding ``text`` (they sort as they read)."""
    return next((line[:23] for line in output.splitlines() if text in line), None)


def test_two_processes_racing_for_a_cold_lease_poll_once(pollers, github: FakeGitHub):
    racers = [pollers("--once") for _ in range(2)]
    assert [racer.finish() for racer in racers] == [0, 0]
    outputs = [racer.output() for racer in racers]
    active = [out for out in outputs if "this poller is active" in out]
    if len(active) == 2:
        # On a loaded machine the second process may start only after the first one's whole
        # round: no race then, and it must take the lease only once the first released it.
        first, second = sorted(active, key=lambda out: logged_at(out, "acquired by") or "")
        released, acquired = logged_at(first, "released by"), logged_at(second, "acquired by")
        assert released is not None and acquired is not None and released <= acquired, outputs
    else:
        assert len(active) == 1 and sum("another poller" in out for out in outputs) == 1, outputs
    # Either way GitHub was asked about each app once: the later round found them fresh.
    assert asked(github) == (EVERY_APP, EVERY_APP)


@ONE_AT_A_TIME
def test_sigterm_exits_0_quickly_and_a_standby_takes_over_within_seconds(pollers, state_dir: Path):
    holder = pollers("--no-startup-delay")
    holder.wait_for("4 fetched")
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


@ONE_AT_A_TIME
def test_sigterm_during_a_slow_request_still_exits_0_within_two_seconds(pollers, github: FakeGitHub):
    github.set_fault(APPS[0].repo, SlowFault(20))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the slow request")
    holder.process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert holder.finish() == 0
    assert time.monotonic() - started < 2.0


@ONE_AT_A_TIME
def test_a_second_signal_exits_at_once(pollers, github: FakeGitHub):
    github.set_fault(APPS[0].repo, SlowFault(20))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the slow request")
    # Two kinds of signal, sent together (one kind sent twice could merge into one; waiting to send
    # the second would race the first one's 1.5 s grace). The poller once hung for good on this.
    holder.process.send_signal(signal.SIGINT)
    holder.process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    status = holder.finish()
    assert status == 130, holder.output()
    assert time.monotonic() - started < 5, "not after the request in flight (20 s)"
    assert re.search(r"Second SIG(INT|TERM): exiting now\.", holder.output())


@ONE_AT_A_TIME
def test_kill_9_of_the_holder_gives_a_takeover_within_the_ttl_plus_a_retry(pollers, state_dir: Path):
    holder = pollers("--no-startup-delay")
    holder.wait_for("4 fetched")
    standby = pollers("--no-startup-delay")
    standby.wait_for("standing by")
    holder.process.kill()
    holder.finish()
    took_over = standby.wait_for("took over polling", timeout=TTL_S + RETRY_S + 5)
    assert took_over <= TTL_S + RETRY_S + 1.0


@ONE_AT_A_TIME
def test_a_holder_paused_past_its_ttl_has_its_writes_refused_and_steps_down(
    pollers, github: FakeGitHub, state_dir: Path
):
    github.set_fault(APPS[0].repo, SlowFault(TTL_S + 2))
    holder = pollers("--no-startup-delay")
    wait_until(lambda: bool(github.requests_for(APPS[0].repo)), 20, "the holder's slow request")
    holder.process.send_signal(signal.SIGSTOP)
    standby = pollers("--no-startup-delay")
    # Its start-up (Python, Django) is not the bound under test: wait for its first word on the
    # lease. On a loaded machine the holder's lease may have run out by then: it starts active.
    words = ("standing by", "took over polling", "this poller is active")
    wait_until(
        lambda: any(word in standby.output() for word in words),
        60,
        lambda: f"the standby's start: {standby.output()}\nthe holder's: {holder.output()}",
    )
    if "this poller is active" not in standby.output():
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


# ---- the state file under faults (issue 9: items 4, 5, 6 and the symlink of 10) -------------------

DB = "craft_apps_state.sqlite3"


def state_files(state_dir: Path) -> list[Path]:
    return [state_dir / f"{DB}{suffix}" for suffix in ("", "-wal", "-shm")]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The file really read-only for the poller: mode 0400, or for root (whom modes don't stop)
    the immutable attribute."""
    as_root = os.geteuid() == 0
    if as_root:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o400)
    try:
        yield
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o600)


def once_on_a_full_disk(env: dict[str, str], prepared: Path, work: Path, free_pages: int) -> tuple[int, str]:
    """Runs ``poll_craft_releases --once`` with its state directory on a real, full filesystem;
    returns its exit status and output.

    In a private mount namespace (an unprivileged user namespace: no root needed, nothing shown
    to the rest of the machine) a 256 KiB tmpfs is mounted at ``work/full``, the prepared state
    file copied into it and the rest filled but for ``free_pages`` pages of 4 KiB; SQLite then
    meets ENOSPC ("database or disk is full") exactly as on a full disk. Measured: opening the
    file takes 8 pages (its -shm), taking the lease 3 more, storing an app's release 2-3 more.
    """
    mount = work / "full"
    mount.mkdir()
    script = (
        'set -e; mount -t tmpfs -o size=256k,mode=0700 tmpfs "$1"; cp "$2/' + DB + '" "$1/";'
        ' dd if=/dev/zero of="$1/filler" bs=4096 2>/dev/null || true;'
        ' truncate -s "-$(( $3 * 4096 ))" "$1/filler"; shift 3; exec "$@"'
    )
    command = [
        "unshare", "--user", "--map-root-user", "--mount",
        "sh", "-c", script, "sh", str(mount), str(prepared), str(free_pages),
        sys.executable, "manage.py", "poll_craft_releases", "--once",
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**env, "CRAFT_APPS_STATE_DIR": str(mount)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout


@pytest.mark.parametrize("args", [("--once",), ("--no-startup-delay",)])
def test_a_read_only_state_file_is_an_error_naming_it_not_another_poller(
    pollers, github: FakeGitHub, state_dir: Path, args: tuple[str, ...]
):
    publish(state_dir, {})  # a file whose lease was released long ago
    with read_only(state_dir / DB):
        poller = pollers(*args)
        assert poller.finish() == 1, poller.output()
    out = poller.output()
    assert (
        f"ERROR craft_apps.polling.process: Craft app releases: can't write the lease to the state file: "
        f"craft_apps state file {state_dir / DB} cannot be written (attempt to write a readonly database)"
    ) in out
    assert "another poller" not in out and "standing by" not in out
    assert github.requests == []


def test_a_full_disk_is_an_error_naming_the_file_not_another_poller(
    poller_env: dict[str, str], github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    publish(state_dir, {})  # a file whose lease was released long ago
    status, out = once_on_a_full_disk(poller_env, state_dir, tmp_path, 8 + 1)  # room to open it only
    assert status == 1, out
    assert (
        f"can't write the lease to the state file: craft_apps state file {tmp_path / 'full' / DB} "
        "cannot be written (database or disk is full)"
    ) in out
    assert "another poller" not in out
    assert github.requests == []


def test_on_a_full_disk_the_round_summary_counts_only_what_was_saved(
    poller_env: dict[str, str], github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    StateStore(state_dir).open_for_writing()  # an empty file: every app is due
    env = {**poller_env, "CRAFT_APPS_LEASE_TTL_SECS": "30"}
    status, out = once_on_a_full_disk(env, state_dir, tmp_path, 8 + 4)  # room for the lease, not the apps
    assert status == 0, out  # the round ran
    assert asked(github) == (EVERY_APP, EVERY_APP)
    assert (
        "Craft app releases (standalone): 0 fetched, 0 unchanged, 0 failed, 4 not saved "
        "(the host's state file can't be written; kept in memory)."
    ) in out, out
    assert out.count("couldn't write the host's state file") == 1, out  # once, not per write
    assert "cannot be written (database or disk is full)" in out


@ONE_AT_A_TIME
def test_a_crowd_of_once_runs_on_a_new_state_directory_polls_once_and_the_rest_exit_0(
    poller_env: dict[str, str], github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    github.set_fault(None, SlowFault(0.5))  # the winner holds the lease while the others try
    count = 40
    env = {**poller_env, "CRAFT_APPS_LEASE_TTL_SECS": "30", "CRAFT_APPS_LEASE_RETRY_SECS": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.host._once_race", str(count), str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    statuses = dict(line.split() for line in done.stdout.splitlines())
    outputs = {n: (tmp_path / f"once-{n}.log").read_text() for n in statuses}
    failed = {n: outputs[n][-500:] for n, status in statuses.items() if status != "0"}
    assert len(statuses) == count and not failed, failed
    active = [n for n, out in outputs.items() if "this poller is active" in out]
    losers = [n for n, out in outputs.items() if "another poller (" in out and "is active" in out]
    assert sorted(active + losers, key=int) == sorted(statuses, key=int)
    assert asked(github) == (EVERY_APP, EVERY_APP)  # polled once
    assert not any("locked" in out or "not a craft_apps state file" in out for out in outputs.values())


def test_the_poller_waits_out_a_lock_on_the_state_file_at_start_up(
    pollers, poller_env: dict[str, str], github: FakeGitHub, state_dir: Path
):
    publish(state_dir, {})
    blocker = sqlite3.connect(state_dir / DB, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
        poller = pollers("--once", env={**poller_env, "CRAFT_APPS_LEASE_TTL_SECS": "30"})  # waits 3 s
        # Once it has the file open it is at the lock; hold it well past SQLite's usual 0.2 s.
        wait_until(lambda: has_open(poller.process.pid, state_dir / DB), 20, "the poller to open the file")
        time.sleep(0.6)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert poller.finish() == 0, poller.output()
    assert "this poller is active" in poller.output()
    assert asked(github) == (EVERY_APP, EVERY_APP)


def has_open(pid: int, path: Path) -> bool:
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:  # a descriptor closed while listing: look again
        return False
    return str(path) in links


def test_a_holder_whose_file_another_poller_made_anew_steps_down_without_asking_github(
    pollers, poller_env: dict[str, str], github: FakeGitHub, state_dir: Path
):
    # The sequence: the file is deleted under a running holder and a second poller
    # starts, makes a new file and takes its lease with fence 1, the holder's fence too.
    env = {**poller_env, "CRAFT_APPS_LEASE_TTL_SECS": "30", "CRAFT_APPS_LEASE_RETRY_SECS": "2"}
    github.set_fault(None, SlowFault(0.5))
    holder = pollers("--no-startup-delay", env={**env, "CRAFT_APPS_RELEASE_GITHUB_TOKEN": "ghp_holder0001"})
    wait_until(lambda: len(github.requests) == 1, 20, "the holder's first request")
    holder.process.send_signal(signal.SIGSTOP)  # so it can't make the file anew first
    try:
        for path in state_files(state_dir):
            path.unlink(missing_ok=True)
        newcomer = pollers(
            "--no-startup-delay", env={**env, "CRAFT_APPS_RELEASE_GITHUB_TOKEN": "ghp_newcomer01"}
        )
        newcomer.wait_for("this poller is active (fence 1)")
    finally:
        holder.process.send_signal(signal.SIGCONT)
    holder.wait_for("standing by", timeout=15)
    newcomer.wait_for("4 fetched", timeout=15)
    by_holder = [r for r in github.requests if r.header("Authorization") == "Bearer ghp_holder0001"]
    assert len(by_holder) == 1, "the former holder asked GitHub nothing more"
    out = holder.output()
    assert "refused" in out or "someone else took it over" in out, out
    assert f":{newcomer.process.pid}:" in lease_row(state_dir)[0]
    assert newcomer.process.poll() is None and holder.process.poll() is None


def test_a_state_file_that_is_a_symbolic_link_is_refused_and_its_target_left_alone(
    pollers, github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    elsewhere = tmp_path / "elsewhere"
    publish(elsewhere, {})
    before = digest(elsewhere / DB)
    state_dir.mkdir(mode=0o700)
    (state_dir / DB).symlink_to(elsewhere / DB)
    poller = pollers("--once")
    assert poller.finish() == 1
    assert (
        f"craft_apps state file {state_dir / DB} is a symbolic link; refusing to follow it" in poller.output()
    )
    assert digest(elsewhere / DB) == before
    assert github.requests == []


# ---- a state file deleted under gunicorn and the poller (issue 9, item 1) ------------------------


class Site:
    """gunicorn with two sync workers; its access log says which worker sent which answer."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{self.port}",
                "--access-logfile", "-", "--access-logformat", "access %(p)s %(s)s %({cache-control}o)s",
                "config.wsgi:application",
            ],
            cwd=ROOT, env=env, stdout=self._out, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def get(self) -> tuple[int, str, bytes]:
        url = f"http://127.0.0.1:{self.port}/v1/craft_apps/release_info"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.headers["Cache-Control"], answer.read()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def workers_that_answered(self, cache_control: str) -> set[str]:
        lines = [line.split(" ", 3) for line in self.output().splitlines() if line.startswith("access ")]
        return {pid for _, pid, status, header in lines if status == "200" and header == cache_control}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._out.close()


def stored(state_dir: Path) -> dict[str, tuple[str, str, int]]:
    """app key -> (release JSON, ETag, fetch time) as the state file has them."""
    db = sqlite3.connect(f"{(state_dir / DB).as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT key, release_json, etag, fetched_ms FROM app_state").fetchall()
    finally:
        db.close()
    return {key: (release, etag, fetched) for key, release, etag, fetched in rows}


def test_a_state_file_deleted_under_gunicorn_and_the_poller_loses_nothing_either_knew(
    poller_env: dict[str, str], github: FakeGitHub, state_dir: Path, tmp_path: Path
):
    env = poller_env
    poller = Poller(env, tmp_path / "poller.log", "--no-startup-delay")
    site = Site(env, tmp_path / "gunicorn.log")
    try:
        poller.wait_for("4 fetched")
        before = stored(state_dir)
        assert len(before) == 2 and all(etag for _, etag, _ in before.values())

        # Both workers serve the full answer before the file goes.
        wait_until(lambda: site.process.poll() is None and _answers(site), 30, "gunicorn to answer")
        status, cache_control, good = site.get()
        assert (status, cache_control) == (200, CACHEABLE)
        warm = lambda: len(site.workers_that_answered(CACHEABLE)) == 2  # noqa: E731
        wait_until(lambda: _burst(site) and warm(), 30, "both workers to serve the full answer")

        for path in state_files(state_dir):
            path.unlink(missing_ok=True)
        deleted_at = time.monotonic()
        answers = []
        while not (state_dir / DB).exists() or time.monotonic() - deleted_at < 0.5:
            answers.append(site.get())
            assert time.monotonic() - deleted_at < 5, "the poller makes it anew within a second or so"
        assert {(s, c) for s, c, _ in answers} == {(200, CACHEABLE)}
        assert all(body == good for _, _, body in answers), "every answer was the last good one"

        # Nothing the poller knew was lost: releases, ETags and fetch times are all back.
        assert stored(state_dir) == before
        # The poller logs once the new file holds everything; the line may come a moment later.
        poller.wait_for("was deleted; made it anew from memory (2 apps")
        requests_so_far = len(github.requests)
        out = site.output()
        missing_lines = [line for line in out.splitlines() if "serving the last good answer" in line]
        assert 1 <= len(missing_lines) <= 2, out  # one line per worker that noticed
        assert all(f"{state_dir / DB} is missing" in line for line in missing_lines)
        assert "serving the not-fetched-yet answer" not in out
    finally:
        site.stop()
        poller.process.send_signal(signal.SIGTERM)
        poller.finish()

    assert len(github.requests) == requests_so_far, "the poller fetched nothing again"
    # The next round revalidates what the made-anew file holds (an hour on, every app is due).
    db = sqlite3.connect(state_dir / DB)
    db.execute("UPDATE app_state SET fetched_ms = fetched_ms - 3600000")
    db.commit()
    db.close()
    github.reset_requests()
    again = Poller(env, tmp_path / "again.log", "--once")
    assert again.finish() == 0, again.output()
    assert [r.status for r in github.requests] == [304, 304]
    assert all(r.header("If-None-Match") == github.etag_of(str(r.repo)) for r in github.requests)


def _answers(site: Site) -> bool:
    try:
        return site.get()[0] == 200
    except OSError:
        return False


def _burst(site: Site) -> bool:
    """Eight requests at once, so that both sync workers get some."""
    threads = [threading.Thread(target=site.get) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return True
