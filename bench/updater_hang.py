"""How long ``poll_craft_releases --once`` takes while Tauri releases' ``latest.json`` hang, and
when another Tauri app's updater files are served meanwhile.

Run ``python -m bench.updater_hang [--hanging N] [--runs R] [--checkout DIR]``: the GitHub
stand-in (this checkout's) serves N Tauri apps whose ``latest.json`` it holds open without an
answer (``FakeGitHub.hold_download``), then one Tauri app served normally and one plain app, in
that order in ``APPS``; a real ``--once`` of ``DIR``'s ``manage.py`` (default: this checkout;
an older one to measure what changed) polls them with this Python. Per run: the seconds until
the process ended, and until the served Tauri app's updater files were in the state file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from craft_apps.host.store import StateStore, StateUnavailable
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.tauri.fake_release import tauri_action_release
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
SERVED = AppSpec("soundcraft", "SoundCraft", "storytold/soundcraft")
PLAIN = AppSpec("photocraft", "PhotoCraft", "storytold/photocraft")


def publish(github: FakeGitHub, hanging: int) -> tuple[AppSpec, ...]:
    """Publishes the apps, holds the hanging ones' latest.json; the apps in ``APPS`` order."""
    held = tuple(AppSpec(f"hang{n}", f"Hang{n}", f"storytold/hang{n}") for n in range(1, hanging + 1))
    for app in (*held, SERVED):
        built = tauri_action_release(
            app.repo,
            app.name,
            "1.0.0",
            PUBLISHED,
            tag_prefix=f"{app.key}-v",
            web_url=github.url,
            api_url=github.url,
        )
        github.publish(app.repo, built.release, files=built.files)
        if app in held:
            github.faults.hold_download(f"/{app.repo}/releases/download/{app.key}-v1.0.0/latest.json")
    github.publish(PLAIN.repo, demo_release(PLAIN, "0.6.0", PUBLISHED, github.url, github.url))
    return (*held, SERVED, PLAIN)


def one_run(checkout: Path, hanging: int) -> tuple[float, float | None]:
    """One ``--once``: seconds until it ended, and until the served app's files were saved."""
    with FakeGitHub() as github, tempfile.TemporaryDirectory(prefix="bench-updater-hang-") as tmp:
        apps = publish(github, hanging)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            CRAFT_APPS_STATE_DIR=tmp,
            CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
            CRAFT_APPS_RELEASE_GITHUB_WEB_URL=github.url,
            CRAFT_APPS_RELEASE_APPS=",".join(f"{a.key}={a.name}={a.repo}" for a in apps),
        )
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "manage.py", "poll_craft_releases", "--once"],
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        served_s = None
        while process.poll() is None:
            if served_s is None and _served(Path(tmp)):
                served_s = time.monotonic() - started
            time.sleep(0.02)
        ended_s = time.monotonic() - started
        if served_s is None and _served(Path(tmp)):
            served_s = ended_s
        return ended_s, served_s


def _served(state_dir: Path) -> bool:
    try:
        state = StateStore(state_dir).read().apps.get(SERVED.key)
    except StateUnavailable:
        return False
    return state is not None and state.latest_release is not None and bool(state.latest_release.updater)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.updater_hang", description=__doc__.split("\n")[0])
    parser.add_argument("--hanging", type=int, default=1, help="apps whose latest.json hangs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the manage.py's directory")
    args = parser.parse_args(argv)
    ended, served = [], []
    for run in range(1, args.runs + 1):
        ended_s, served_s = one_run(args.checkout, args.hanging)
        ended.append(ended_s)
        served.append(served_s)
        shown = "never" if served_s is None else f"{served_s:.2f} s"
        print(
            f"run {run}: --once ended after {ended_s:.2f} s; the other Tauri app's files saved after {shown}"
        )
    median, worst = statistics.median(ended), max(ended)
    print(f"{args.hanging} hanging, {args.checkout}: --once median {median:.2f} s, max {worst:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
