"""GitHub requests a private app costs, counted at the fake GitHub (``craft_apps.testing``).

1. **The poller**, per private app per hour: a poller in this process (the real client, state
   file and lease; time is a FakeClock, which the fake GitHub and the App's credentials read
   too) ticks every ``--interval`` seconds for ``--hours`` hours, with one new release each hour,
   authenticated by a token and then by a GitHub App. Counted: the latest release (200s and
   304s), the release list, the small files read through the API (``latest.json``), the App's
   installation look-ups and token exchanges.
2. **The downloads**: ``--launchers`` launchers ask for one file of a private app, all within a
   few seconds, through gunicorn with two workers (after one ``poll_craft_releases --once``);
   counted: GitHub's asset requests those downloads made.

Run ``python -m bench.private_quota`` (``--help`` for the options); it prints one line per figure.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

TOKEN = "github_pat_11BENCH_privateQuotaTokenNeverShown"
REPO = "storytold/artcraft"
MSI = "ArtCraft_0.37.0_x64_en-US.msi"
APP_ID = "4242"
INSTALLATION = 77


def kind(path: str, method: str) -> str:
    """What a request to the fake GitHub was for."""
    if path.startswith("/_objects/"):
        return "file host (signed URL, not the API)"
    if path.endswith("/access_tokens"):
        return "token exchange"
    if path.endswith("/installation"):
        return "installation look-up"
    if "/releases/assets/" in path:
        return "file through the API"
    if path.endswith("/releases/latest"):
        return "latest release"
    if "/releases" in path and path.startswith("/repos/"):
        return "release list"
    return f"other {method}"


def publish(github: object, version: str, published: datetime) -> None:
    from craft_apps.tauri.fake_release import tauri_action_release
    from craft_apps.testing.fake_github import FakeGitHub

    assert isinstance(github, FakeGitHub)
    built = tauri_action_release(
        REPO, "ArtCraft", version, published, signatures={}, web_url=github.url, api_url=github.url
    )
    github.publish(REPO, built.release, files=built.files)


def poller_hours(auth: str, hours: int, interval_s: int) -> tuple[Counter[str], int]:
    """The requests by kind (and 304s apart) of one private app over ``hours`` hours."""
    from craft_apps.github.app_auth import AppCredentials
    from craft_apps.github.client import GitHubClient
    from craft_apps.host.lease import Lease
    from craft_apps.host.store import StateStore
    from craft_apps.kernel.domain import AppSpec
    from craft_apps.polling.poller import PollConfig, Poller
    from craft_apps.testing.clock import FakeClock
    from craft_apps.testing.fake_github import FakeGitHub
    from tests.support.github_app import APP_KEY

    clock = FakeClock()
    now_s = lambda: clock.now_ms() / 1000  # noqa: E731
    app = AppSpec("artcraft", "ArtCraft", REPO, private=True)
    with FakeGitHub(now=now_s) as github, tempfile.TemporaryDirectory() as state_dir:
        github.private.make_private(REPO)
        credentials = None
        if auth == "token":
            github.private.allow_token(TOKEN)
        else:
            github.private.add_app(APP_ID, APP_KEY.public_key(), {INSTALLATION: [REPO]})
            credentials = AppCredentials(
                api_url=github.url, app_id=APP_ID, private_key=APP_KEY, private_repos=[REPO], now=now_s
            )
        client = GitHubClient(
            api_url=github.url,
            web_url=github.url,
            token=TOKEN if auth == "token" else None,
            clock=clock,
            private_repos=[REPO],
            credentials=credentials,
        )
        store = StateStore(Path(state_dir))
        store.open_for_writing()
        lease = Lease(store, holder="bench", clock=clock)
        assert lease.try_acquire() and lease.fence is not None
        poller = Poller(
            config=PollConfig((app,), interval_s * 1000, 4 * 3600 * 1000, web_url=github.url),
            github=client,
            host=store,
            fence=lease.fence,
            clock=clock,
        )
        poller.load_host_state()
        start_ms = clock.now_ms()
        published = datetime(2026, 11, 20, 17, 4, 12)
        for hour in range(hours):
            publish(github, f"0.{37 + hour}.0", published + timedelta(hours=hour))
            while clock.now_ms() < start_ms + (hour + 1) * 3600 * 1000:
                poller.tick()
                lease.renew_if_due()
                clock.advance(interval_s)
        counted = Counter(kind(r.path, r.method) for r in github.requests)
        not_modified = sum(1 for r in github.requests if r.status == 304)
    return counted, not_modified


def downloads(launchers: int, workdir: Path) -> tuple[int, int]:
    """GitHub's asset requests made for ``launchers`` downloads of one file through two
    gunicorn workers, and how many of the downloads were answered 302."""
    import requests

    from bench.endpoint import ROOT, gunicorn_command, running, site_env
    from craft_apps.testing.fake_github import FakeGitHub
    from tests.support import free_port

    with FakeGitHub() as github:
        publish(github, "0.37.0", datetime(2026, 11, 20, 17, 4, 12))
        github.private.make_private(REPO)
        github.private.allow_token(TOKEN)
        env = {
            **site_env(workdir / "state", workdir / "unused.json", workdir),
            "CRAFT_APPS_RELEASE_GITHUB_API_URL": github.url,
            "CRAFT_APPS_RELEASE_GITHUB_WEB_URL": github.url,
            "CRAFT_APPS_RELEASE_APPS": f"artcraft=ArtCraft={REPO}",
            "CRAFT_APPS_RELEASE_PRIVATE_APPS": "artcraft",
            "CRAFT_APPS_RELEASE_GITHUB_TOKEN": TOKEN,
            "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false",
        }
        poll = [sys.executable, "manage.py", "poll_craft_releases", "--once"]
        poller_env = {**env, "DJANGO_SETTINGS_MODULE": "config.settings"}
        done = subprocess.run(poll, cwd=ROOT, env=poller_env, capture_output=True, text=True)
        assert done.returncode == 0, f"the poller failed: {done.stderr[-2000:]}"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log = workdir / "gunicorn.log"
        with running(
            gunicorn_command(port, 2), env=env, log=log, ready_url=f"{base}/v1/craft_apps/release_info"
        ):
            before = len(github.requests)
            link = f"{base}/v1/craft_apps/download/artcraft/windows/x64"
            asset = requests.get(link, allow_redirects=False, timeout=10).headers["Location"]
            url = requests.compat.urljoin(link, asset)

            def download(_: int) -> int:
                with requests.Session() as launcher:
                    return launcher.get(url, allow_redirects=False, timeout=10).status_code

            with ThreadPoolExecutor(max_workers=16) as pool:
                statuses = list(pool.map(download, range(launchers)))
        asked = [r for r in github.requests[before:] if "/releases/assets/" in r.path]
    return len(asked), statuses.count(302)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.private_quota", description=__doc__)
    parser.add_argument("--hours", type=int, default=11)
    parser.add_argument("--interval", type=int, default=120, help="seconds (the default with a token)")
    parser.add_argument("--launchers", type=int, default=500)
    options = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    logging.disable(logging.WARNING)
    for auth in ("token", "app"):
        counted, not_modified = poller_hours(auth, options.hours, options.interval)
        per_hour = {name: round(count / options.hours, 2) for name, count in sorted(counted.items())}
        print(
            f"poller, {auth}, every {options.interval} s, {options.hours} h, one release an hour: "
            f"{dict(counted)} ({not_modified} of them 304); per hour {per_hour}"
        )
    with tempfile.TemporaryDirectory(prefix="bench-private-") as workdir:
        asked, redirected = downloads(options.launchers, Path(workdir))
    print(
        f"downloads: {options.launchers} launchers, one file, two gunicorn workers: {redirected} "
        f"answered 302; {asked} GitHub asset requests"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
