"""``python manage.py craft_apps_keys generate|show``: the answer's signing keys.

``generate`` makes a new Ed25519 key pair and prints the private key once, to standard output
only (nothing is written to disk or logged), with its public key and id: the private key goes
into the ``SIGNING_KEY`` setting (or ``SIGNING_KEY_PREVIOUS`` while rotating), the public key into
the launchers. ``show`` prints the public key and id of each configured key, never the private
one; it exits 1 when a configured key can't be used (the check's message says why).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps.checks import finding
from craft_apps.conf import app_settings, describe, resolve
from craft_apps.kernel import signing


class Command(BaseCommand):
    help = "Generates a signing key pair, or shows the public key and id of the configured ones."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("generate", "show"))

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "generate":
            self._generate()
        else:
            self._show()

    def _generate(self) -> None:
        key = signing.generate()
        self.stdout.write(
            "A new Ed25519 signing key. The private key is shown this once and kept nowhere:\n"
            f"put it in the web workers' environment as {describe('SIGNING_KEY')}.\n\n"
            f"private key: {signing.private_key_text(key)}\n"
            f"public key:  {signing.public_key_text(key.public)}\n"
            f"key id:      {key.key_id}\n\n"
            "Launchers pin the public key (docs/signed-feed.md says how to rotate)."
        )

    def _show(self) -> None:
        problems = [
            problem for name in ("SIGNING_KEY", "SIGNING_KEY_PREVIOUS") for problem in resolve(name).problems
        ]
        for name in ("SIGNING_KEY", "SIGNING_KEY_PREVIOUS"):
            key = resolve(name).value
            if key is not None:
                self.stdout.write(
                    f"{name}: key id {key.key_id}, public key {signing.public_key_text(key.public)}"
                )
        config = app_settings.SIGNING
        if config is None and not problems:
            self.stdout.write(f"No signing key is set ({describe('SIGNING_KEY')}): answers are not signed.")
        elif config is not None:
            self.stdout.write(f"Answers are signed by {len(config.keys)} key(s), valid {config.window_s} s.")
        if problems:
            raise CommandError("\n".join(finding(problem).msg for problem in problems))
