"""``python manage.py craft_apps_notices export FILE`` / ``import FILE`` (``-``: stdout / stdin).

Export writes the renames, notices, channel settings and release controls (with their admin
log) as JSON. Import makes the database hold exactly the file's items, each validated as the
admin validates it, all or nothing: on any problem it lists them one per line and writes
nothing. A control whose tag the host knows no release of is imported with a warning, as in the
admin. ``--dry-run`` says what an import would do (docs/renames-and-notices.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from craft_apps.conf import app_settings
from craft_apps.content.transfer import ImportRefused, export_notices, import_notices, parse_document
from craft_apps.controls.known_tags import known_tags
from craft_apps.host.store import StateStore, StateUnavailable


class Command(BaseCommand):
    help = (
        "Exports or imports the renames and notices launchers receive, the apps' channel settings "
        "and the release controls (JSON)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["export", "import"])
        parser.add_argument("file", help="The JSON file; - for standard output (export) or input (import).")
        parser.add_argument(
            "--dry-run", action="store_true", help="import: check the file and say what would change."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            self._export(options["file"])
        else:
            self._import(options["file"], dry_run=bool(options["dry_run"]))

    def _export(self, file: str) -> None:
        text = json.dumps(export_notices(), ensure_ascii=False, indent=2) + "\n"
        if file == "-":
            self.stdout.write(text, ending="")
            return
        try:
            Path(file).write_text(text, encoding="utf-8")
        except OSError as err:
            raise CommandError(f"Can't write {file}: {err.strerror or err}") from None

    def _import(self, file: str, dry_run: bool) -> None:
        source = "standard input" if file == "-" else file
        try:
            text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        except OSError as err:
            raise CommandError(f"Can't read {file}: {err.strerror or err}") from None
        except UnicodeDecodeError as err:
            raise CommandError(f"{source} is not JSON (UTF-8): {err}") from None
        try:
            report = import_notices(parse_document(text), dry_run=dry_run, known_tags=self._known_tags())
        except ImportRefused as refused:
            for problem in refused.problems:
                self.stderr.write(problem)
            raise CommandError(
                f"Nothing imported: {len(refused.problems)} problem(s) in {source}, listed above."
            ) from None
        prefix = "Dry run, nothing written: " if dry_run else "Imported: "
        self.stdout.write(prefix + report.summary())
        for warning in report.warnings:
            self.stdout.write(f"Warning: {warning}")

    def _known_tags(self) -> dict[str, frozenset[str]] | None:
        """The tags this host's state file knows of each app; None, said on standard error,
        when the file can't be read."""
        store = StateStore(app_settings.STATE_DIR)
        try:
            return known_tags(store.read())
        except StateUnavailable as err:
            self.stderr.write(f"The release controls' tags were not checked: {err}")
            return None
        finally:
            store.close()
