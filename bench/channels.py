"""What one state version costs for every channel: the answers a web process encodes when the
state file changes, stable and beta, on the demo releases with every app on beta and the first
apps holding a newer prerelease in their history (``bench.endpoint``'s state).

Run ``python -m bench.channels``: per channel, the CPU time of building the release info and
encoding it (JSON, gzip and brotli at the request path's quality, once per state version), the
brotli form the ``Refiner`` remakes off the request path, and the total per state version. The
median of ``--rounds`` with the fastest.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _cpu_ms(call: Callable[[], object], rounds: int) -> tuple[float, float]:
    """The median and the fastest CPU milliseconds of ``call``."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        call()
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.channels", description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    options = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    logging.disable(logging.WARNING)  # the demo database isn't migrated here: no notices

    from bench.endpoint import fill_state
    from craft_apps.api.answer import build_release_info
    from craft_apps.api.representation import best_brotli, encode_answer
    from craft_apps.conf import DEFAULT_APPS, DEFAULT_GITHUB_WEB_URL
    from craft_apps.host.store import StateStore
    from craft_apps.kernel.domain import Channel, ChannelApps
    from craft_apps.kernel.serving import HostReleases, serve

    with tempfile.TemporaryDirectory(prefix="bench-channels-") as workdir:
        state_dir = Path(workdir)
        fill_state(state_dir)
        store = StateStore(state_dir)
        snapshot = store.read()
        store.close()
    apps, web = DEFAULT_APPS, DEFAULT_GITHUB_WEB_URL
    everyone = ChannelApps({Channel.BETA: {app.key for app in apps}})
    stable = build_release_info(apps, snapshot.apps, web)
    releases = HostReleases(apps, stable, web, snapshot.history, snapshot.history_fetches)
    beta = serve(Channel.BETA, releases, everyone, (), 0)
    if beta is stable:
        raise SystemExit("the beta channel answers the stable release info: no prerelease in the state")

    def build_stable() -> object:
        return encode_answer(build_release_info(apps, snapshot.apps, web))

    def build_beta() -> object:
        info = serve(Channel.BETA, releases, everyone, (), 0)
        return encode_answer(info, channel="beta")

    stable_body = encode_answer(stable).body
    beta_body = encode_answer(beta, channel="beta").body
    made = "release info, JSON, gzip, brotli 5"
    rows = [
        (f"stable: {made}", _cpu_ms(build_stable, options.rounds), len(stable_body)),
        (f"beta: {made}", _cpu_ms(build_beta, options.rounds), len(beta_body)),
        ("stable: brotli 11, off the request path", _cpu_ms(lambda: best_brotli(stable_body), 7), 0),
        ("beta: brotli 11, off the request path", _cpu_ms(lambda: best_brotli(beta_body), 7), 0),
    ]
    print("| per state version | CPU ms (median) | fastest | JSON bytes |")
    print("|---|---|---|---|")
    for name, (median, fastest), size in rows:
        print(f"| {name} | {median:.2f} | {fastest:.2f} | {f'{size:,}' if size else ''} |")
    request_path = rows[0][1][0] + rows[1][1][0]
    print(f"\nOn the request path, once per state version for both channels: {request_path:.2f} ms of CPU.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
