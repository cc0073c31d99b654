"""What a request of the Tauri updater endpoint costs a web process, beside ``release_info``'s:
in process, through Django's test client, on ``bench.endpoint``'s state (the 13 demo releases)
with the first app's latest release given updater files.

Run ``python -m bench.tauri``: per path, the CPU microseconds of one request (the median of
``--rounds`` rounds of ``--requests`` requests each, with the fastest round). The answer of a
state version is made before the rounds, so they measure what every request after it pays.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path


def add_updater(state_dir: Path) -> tuple[str, str]:
    """Gives the first demo app's latest release a Windows updater file; its key and version."""
    from craft_apps.conf import DEFAULT_APPS
    from craft_apps.host.lease import Lease
    from craft_apps.host.store import StateStore
    from craft_apps.kernel.clock import SystemClock
    from craft_apps.kernel.domain import UpdaterFile
    from craft_apps.kernel.versions import served_version

    app = DEFAULT_APPS[0]
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="bench-tauri", clock=SystemClock())
    if not lease.try_acquire() or lease.fence is None:
        raise RuntimeError(f"the lease of {store.path} is held by someone else")
    state = store.read().apps[app.key]
    latest = state.latest_release
    assert latest is not None
    url = f"https://github.com/{app.repo}/releases/download/{latest.tag}/{app.name}_x64_en-US.msi"
    signed = replace(latest, updater=(UpdaterFile("windows-x86_64", url, "c2lnbmF0dXJl" * 30),))
    store.put_app(app.key, replace(state, latest_release=signed), fence=lease.fence)
    lease.release()
    store.close()
    return app.key, served_version(latest.tag)


def per_request_us(
    get: Callable[[str], object], path: str, requests: int, rounds: int
) -> tuple[float, float]:
    """The median and fastest CPU microseconds of one GET of ``path``."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(requests):
            get(path)
        times.append((time.process_time() - started) / requests * 1e6)
    return statistics.median(times), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tauri", description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    logging.disable(logging.WARNING)  # the demo database isn't migrated here: no notices
    from django.test import Client, override_settings

    from bench.endpoint import fill_state

    with tempfile.TemporaryDirectory(prefix="bench-tauri-") as workdir:
        state_dir = Path(workdir)
        fill_state(state_dir)
        key, version = add_updater(state_dir)
        tauri = f"/v1/craft_apps/updates/tauri/{key}/windows/x86_64"
        paths = {
            "release_info": "/v1/craft_apps/release_info",
            "tauri, an update (200)": f"{tauri}/0.0.1?bucket=7",
            "tauri, no update (204)": f"{tauri}/{version}",
        }
        with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir)}):
            client = Client(HTTP_HOST="localhost")
            for path in paths.values():
                assert client.get(path).status_code in (200, 204), path
            print("| request | CPU µs (median) | fastest |\n|---|---|---|")
            for label, path in paths.items():
                median, fastest = per_request_us(client.get, path, options.requests, options.rounds)
                print(f"| {label} | {median:.0f} | {fastest:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
