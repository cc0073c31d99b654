"""What signing costs a request: ``views.respond`` in this process, on the 13 demo releases
(the 92 KB answer), with and without a signing key, for a brotli 200 and a 304; and the
signature made once per answer and period (hash the body, one Ed25519 signature).

In process, without a server or the middleware, so the difference is the view's alone
(the endpoint benchmark measures the whole stack). Run ``python -m bench.signing --help``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _timed(call: Callable[[], object], requests: int) -> float:
    """Microseconds per call, the best of three runs of ``requests`` calls."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(requests):
            call()
        best = min(best, time.perf_counter() - start)
    return best / requests * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per timed run")
    parser.add_argument("--rounds", type=int, default=5, help="turns each setup takes")
    options = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site_settings")
    import django

    django.setup()
    logging.disable(logging.WARNING)  # the notices' database is not set up here
    from django.test import RequestFactory, override_settings

    from bench.endpoint import ENDPOINT_PATH, fill_state
    from craft_apps.api import views
    from craft_apps.api.runtime import runtime
    from craft_apps.kernel import signing

    with tempfile.TemporaryDirectory() as directory:
        state_dir = Path(directory)
        fill_state(state_dir)
        factory = RequestFactory()
        br = factory.get("/" + ENDPOINT_PATH, headers={"Accept-Encoding": "br, gzip"})
        key = signing.private_key_text(signing.generate())
        setups = {"without a key": {}, "with a key": {"SIGNING_KEY": key}}
        best: dict[tuple[str, str], float] = {}
        for _ in range(options.rounds):  # the two take turns: the machine's noise hits both
            for name, extra in setups.items():
                with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir), **extra}):
                    runtime().answers.clear()
                    etag = views.respond(br)["ETag"]
                    revalidate = factory.get(
                        "/" + ENDPOINT_PATH, headers={"Accept-Encoding": "br, gzip", "If-None-Match": etag}
                    )
                    for path, request in (("200", br), ("304", revalidate)):
                        took = _timed(functools.partial(views.respond, request), options.requests)
                        best[name, path] = min(best.get((name, path), took), took)
                runtime().answers.clear()
        rows = [(name, best[name, "200"], best[name, "304"]) for name in setups]
        with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir)}):
            body = runtime().answers.answer().body
        runtime().answers.clear()
        config = signing.SigningConfig((signing.parse_private_key(key),), signing.DEFAULT_VALIDITY_SECS)
        # Both signatures of a member, as every answer now carries (sig and sig2).
        once = _timed(lambda: signing.sign(config, body, 0, order=1_790_000_000_000), 200)
    print(f"| `views.respond`, in process ({len(body):,} bytes of JSON) | brotli 200 | 304 |")
    print("|---|---|---|")
    for name, ok, not_modified in rows:
        print(f"| {name} | {ok:.1f} µs | {not_modified:.1f} µs |")
    print(f"\nThe signature itself (sig and sig2), once per answer, order and period: {once:.0f} µs.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
