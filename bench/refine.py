"""What the ``Refiner`` buys: brotli at the request path's quality against its best, on the
demo site's answer (the 13 demo releases, as ``bench.endpoint`` serves them).

Run ``python -m bench.refine``: the answer's JSON size, then per quality the brotli size and the
CPU time of one compression (the median of 7, with the fastest).
"""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import brotli


def answer_body(state_dir: Path) -> bytes:
    """``GET /v1/craft_apps/release_info`` of the demo settings on a state file of the demo
    releases, as JSON (identity)."""
    os.environ["CRAFT_APPS_STATE_DIR"] = str(state_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    # The demo database isn't migrated here: the notices feed warns, and the answer has no notice.
    logging.disable(logging.WARNING)
    from django.test import Client

    from bench.endpoint import fill_state

    fill_state(state_dir)
    return Client(HTTP_HOST="localhost").get("/v1/craft_apps/release_info").content


def timed(body: bytes, quality: int, rounds: int = 7) -> tuple[int, float, float]:
    """The brotli size at ``quality`` and the median and fastest CPU ms of one compression."""
    times, size = [], 0
    for _ in range(rounds):
        started = time.process_time()
        size = len(brotli.compress(body, mode=brotli.MODE_TEXT, quality=quality))
        times.append((time.process_time() - started) * 1000)
    return size, statistics.median(times), min(times)


def main() -> int:
    from craft_apps.api.representation import BROTLI_BEST_QUALITY, BROTLI_FAST_QUALITY

    with tempfile.TemporaryDirectory(prefix="bench-refine-") as workdir:
        body = answer_body(Path(workdir) / "state")
    print(f"answer: {len(body):,} bytes of JSON")
    sizes = {}
    for quality in (BROTLI_FAST_QUALITY, BROTLI_BEST_QUALITY):
        size, median_ms, fastest_ms = timed(body, quality)
        sizes[quality] = size
        print(f"brotli quality {quality}: {size:,} bytes, {median_ms:.1f} ms CPU (fastest {fastest_ms:.1f})")
    saved = 1 - sizes[BROTLI_BEST_QUALITY] / sizes[BROTLI_FAST_QUALITY]
    print(f"quality {BROTLI_BEST_QUALITY} is {saved:.0%} smaller than quality {BROTLI_FAST_QUALITY}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
