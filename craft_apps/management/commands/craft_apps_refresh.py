"""``python manage.py craft_apps_refresh [APP_KEY ...]``: what a GitHub webhook does, by hand.

Marks the named apps (every configured app without arguments) due now, in Redis and on this
host's state file, exactly as a webhook delivery does (``api.refresh``): the pollers ask GitHub
about them within about a second, within the same limits (once per 10 s per app, never during a
backoff). Exits 1 naming any unknown app key, or when nothing could be marked.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps.api.refresh import refresh_stores, request_refresh
from craft_apps.conf import app_settings
from craft_apps.kernel.clock import SystemClock


class Command(BaseCommand):
    help = "Asks the pollers to check the latest release of these apps (all without arguments) now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("app_keys", nargs="*", metavar="APP_KEY", help="app keys, as in APPS")

    def handle(self, *args: Any, **options: Any) -> None:
        configured = [app.key for app in app_settings.APPS]
        asked = [str(key).strip().lower() for key in options["app_keys"]] or configured
        unknown = sorted(set(asked) - set(configured))
        if unknown:
            raise CommandError(
                f"unknown app key(s): {', '.join(unknown)}; the configured ones are {', '.join(configured)}"
            )
        keys = list(dict.fromkeys(asked))
        host, fleet = refresh_stores()
        try:
            outcome = request_refresh(keys, now_ms=SystemClock().now_ms(), host=host, fleet=fleet)
        finally:
            host.close()
        if not outcome.marked:
            raise CommandError(f"couldn't mark {', '.join(keys)} due: {'; '.join(outcome.problems)}")
        for problem in outcome.problems:
            self.stderr.write(f"Marked in {outcome.where()} only: {problem}")
        reach = (
            "the fleet asks GitHub within about a second (one host asks, "
            "the others serve its answer within 2 s of it)"
            if outcome.shared
            else "this host's poller asks within about a second; "
            "the other hosts at their next scheduled check"
        )
        self.stdout.write(f"Marked {', '.join(keys)} due in {outcome.where()}: {reach}.")
