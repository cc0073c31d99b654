"""``python manage.py craft_apps_verify URL --public-key KEY``: what a launcher decides about an answer.

Fetches ``URL``, decodes the body as the transport coded it, and checks it with
``kernel.signing.verify`` and the pinned public keys: prints the verdict and the order to pass
as ``--last-order`` next time and exits 0 when the answer is accepted; exits 1 with the reason
when it is refused. ``--v1`` applies the rules of a launcher built before ``order``
(``verify_v1``, with ``--last-accepted``). See docs/signed-feed.md.
"""

from __future__ import annotations

import gzip
import time
from typing import Any

import brotli
import requests
from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps.kernel import signing


def decode(body: bytes, coding: str) -> bytes:
    """``body`` without its content coding (``br``, ``gzip`` or none); ``ValueError`` else."""
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return body
    if coding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if coding == "br":
        return bytes(brotli.decompress(body))
    raise ValueError(f"a content coding this command can't decode: {coding!r}")


class Command(BaseCommand):
    help = "Fetches an answer of release_info and says whether a launcher pinning these keys accepts it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="e.g. https://example.org/v1/craft_apps/release_info")
        parser.add_argument(
            "--public-key",
            action="append",
            required=True,
            help="a pinned public key (base64 or PEM); repeatable",
        )
        parser.add_argument("--last-order", type=int, help="the highest order accepted before (an integer)")
        parser.add_argument("--v1", action="store_true", help="the rules of a launcher built before order")
        parser.add_argument(
            "--last-accepted", help="with --v1: the signed time of the last answer accepted (RFC 3339)"
        )
        parser.add_argument("--variant", default="", help="the variant asked for (empty: the default answer)")
        parser.add_argument("--timeout", type=float, default=10.0)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            keys = [signing.parse_public_key(text) for text in options["public_key"]]
            last = options["last_accepted"]
            last_accepted = signing.parse_rfc3339(last) if last else None
        except ValueError as err:
            raise CommandError(f"a --public-key or --last-accepted can't be read: {err}") from None
        try:
            response = requests.get(
                options["url"],
                headers={"Accept-Encoding": "br, gzip"},
                stream=True,
                timeout=options["timeout"],
            )
            raw = response.raw.read(decode_content=False)
        except requests.RequestException as err:
            raise CommandError(f"couldn't fetch {options['url']}: {err}") from None
        if response.status_code != 200:
            raise CommandError(f"{options['url']} answered {response.status_code}, not 200")
        coding = response.headers.get("Content-Encoding", "")
        try:
            body = decode(raw, coding)
        except (ValueError, OSError, brotli.error) as err:
            raise CommandError(f"the body can't be decoded ({coding}): {err}") from None
        now, variant = int(time.time()), options["variant"]
        if options["v1"]:
            verdict = signing.verify_v1(body, response.headers, keys, now, last_accepted, variant)
        else:
            verdict = signing.verify(body, response.headers, keys, now, options["last_order"], variant)
        if not verdict.accepted:
            raise CommandError(str(verdict))
        self.stdout.write(f"{verdict} ({len(body)} bytes of JSON, sent as {coding or 'identity'})")
