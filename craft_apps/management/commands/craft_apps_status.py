"""``python manage.py craft_apps_status [--json] [--check [--rule NAME ...]]``: this host, as the
poller left it, and the fleet, as Redis holds it; with the report, the release controls the
site's database holds and what each channel serves with them (``ops.status_read.read_served``).

Without ``--check`` it exits 0 whatever it finds (it reports). ``--check`` applies the health
endpoint's rules (``craft_apps.host.health``): exit 0 when healthy, else 1 with one line per
problem on stdout, for cron and exec probes. Redis is read only for the report, never for
``--check``, and Redis trouble is reported, never fatal.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps.conf import app_settings
from craft_apps.host.health import (
    RULES,
    HealthPolicy,
    current_policy,
    health_document,
    health_problems,
    parse_rules,
)
from craft_apps.host.observe import HostView, observe
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import Clock, SystemClock
from craft_apps.ops.status_document import status_document
from craft_apps.ops.status_read import (
    read_cdn_purge,
    read_channel_settings,
    read_fleet,
    read_host_marks,
    read_kept_controls,
    read_notices,
    read_release_controls,
    read_served,
    read_waiting,
)
from craft_apps.ops.status_text import render_text
from craft_apps.reports.status import reports_document

EXIT_UNHEALTHY = 1


class Command(BaseCommand):
    help = "Shows this host's craft app releases, poller, lease, backoff and GitHub quota."
    clock: Clock = SystemClock()  # what "now" is read on (a rollout's schedule); tests set their own

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="The status as a JSON document.")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Apply the health rules: exit 0 when healthy, else 1 with one line per problem.",
        )
        parser.add_argument(
            "--rule",
            action="append",
            choices=RULES,
            default=[],
            help="With --check: only this rule (repeat for more); all of them by default.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        now_ms = self.clock.now_ms()
        store = StateStore(app_settings.STATE_DIR)
        try:
            view = observe(store)
            policy = current_policy()
            if options["check"]:
                self._check(view, policy, now_ms, options)
                return
            channel_apps, controls = read_channel_settings(), read_release_controls()
            served = waiting = None
            if view.exists and view.problem is None and channel_apps is not None and controls.problem is None:
                served = read_served(store, channel_apps, controls.controls, now_ms)
                waiting = read_waiting(store, channel_apps, controls.controls, now_ms)
        finally:
            store.close()
        fleet = read_fleet([app.key for app in app_settings.APPS])
        marks = read_host_marks(app_settings.STATE_DIR)
        doc = status_document(
            view,
            fleet,
            policy,
            app_settings.APPS,
            now_ms,
            read_notices(now_ms),
            host_marks=marks,
            channel_apps=channel_apps,
            controls=controls,
            served=served,
            kept=read_kept_controls(app_settings.STATE_DIR, controls),
            waiting=waiting,
            cdn_purge=read_cdn_purge(),
        )
        doc["reports"] = reports_document([app.key for app in app_settings.APPS], doc.get("waiting_releases"))
        if options["json"]:
            self.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render_text(doc, now_ms), ending="")

    def _check(self, view: HostView, policy: HealthPolicy, now_ms: int, options: dict[str, Any]) -> None:
        rules = parse_rules(options["rule"])
        problems = health_problems(view, policy, now_ms, rules)
        if options["json"]:
            self.stdout.write(json.dumps(health_document(problems, rules), ensure_ascii=False))
        else:
            for problem in problems:
                self.stdout.write(problem.line())
        if problems:
            raise CommandError(f"{len(problems)} health problems", returncode=EXIT_UNHEALTHY)
