"""Every item as JSON and back, for staging → production and for backups.

The export lists every item of each kind (published or not, any window) with its id, in id
order. An import makes the database hold exactly the file's items: an item whose id is in the
file is added or changed, one that isn't is deleted. Each item goes through the model's
``full_clean``, the same validation as the admin's form; one problem and nothing is written.
Whatever the file holds (a nesting too deep, a number of thousands of digits, a date that
doesn't exist, an instant past 9999 in UTC, a lone surrogate, a NUL), the answer is the list of
problems, one line each, never a traceback.
An item that is already as the file says is not written at all, so importing an export again
changes nothing (not even the version marker).

The channel settings (``AppChannel``, under ``app_channels``) travel with the notices, checked
by the same ``full_clean`` and written in the same transaction: all or nothing. An export made
before channels has no ``app_channels``; importing it leaves the channel settings as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.color import no_style
from django.db import connections, models, router, transaction
from django.utils.dateparse import parse_datetime

from craft_apps.compat import UTC
from craft_apps.notices.models import NOTICE_MODELS, AppChannel, Notice
from craft_apps.text import one_line

FORMAT = "craft_apps_notices"
FORMAT_VERSION = 1
_ENVELOPE = {"format", "version"}


MAX_ID = 2**31 - 1  # the largest id every database's id column holds

# What an export holds, in its order: the notices, then the channel settings.
TRANSFERRED: tuple[Any, ...] = (*NOTICE_MODELS, AppChannel)
# Kinds an older export lacks: left as they are when the file has none.
OPTIONAL_KINDS = frozenset({AppChannel.kind})


class ImportRefused(Exception):
    """The file can't be imported; ``problems`` says why, one printable line each (what the
    file said is quoted folded: no line break, NUL or lone surrogate). Nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = [one_line(problem, 1000) for problem in problems]


MAX_DIGITS = 19  # an id or a count has no more (2**63 has 19); Pythons differ past 4300


class _LongNumber(ValueError):
    pass


def _whole_number(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _LongNumber(f"the file holds a number of {digits} digits; an export has none over {MAX_DIGITS}")
    return int(text)


def parse_document(text: str) -> object:
    """The file's JSON, or ``ImportRefused`` with one line saying why it can't be read."""
    try:
        return json.loads(text, parse_int=_whole_number)
    except _LongNumber as err:
        raise ImportRefused([str(err)]) from None
    except RecursionError:
        raise ImportRefused(["the file nests arrays or objects too deep to be an export"]) from None
    except ValueError as err:  # malformed JSON, or a number of more digits than Python reads
        raise ImportRefused([f"the file is not JSON: {err}"]) from None


@dataclass
class Counts:
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0


@dataclass
class ImportReport:
    counts: dict[str, Counts] = field(default_factory=dict)

    @property
    def changed_anything(self) -> bool:
        return any(c.added or c.changed or c.deleted for c in self.counts.values())

    def summary(self) -> str:
        return "; ".join(
            f"{kind}: {c.added} added, {c.changed} changed, {c.deleted} deleted, {c.unchanged} unchanged"
            for kind, c in self.counts.items()
        )


def _fields(model: type[Notice]) -> list[models.Field[Any, Any]]:
    """What an export carries: every stored field but the derived ones."""
    return [f for f in model._meta.concrete_fields if f.editable]


def _instant(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def export_row(item: Notice) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for f in _fields(type(item)):
        value = getattr(item, f.attname)
        if isinstance(f, models.DateTimeField):
            value = _instant(value)
        elif isinstance(f, models.CharField) and f.blank and value == "":
            value = None  # an optional text left empty, as the contract writes it
        row[f.name] = value
    return row


def export_notices(using: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION}
    for model in TRANSFERRED:
        db = using or router.db_for_read(model)
        document[model.kind] = [export_row(item) for item in model._default_manager.using(db).order_by("pk")]
    return document


def import_notices(document: object, using: str | None = None, dry_run: bool = False) -> ImportReport:
    """Makes the database hold exactly ``document``'s items, or raises ``ImportRefused``."""
    db = using or router.db_for_write(NOTICE_MODELS[0])
    problems: list[str] = []
    if not isinstance(document, dict):
        raise ImportRefused(
            [f"the file holds a {type(document).__name__}, not an object of the export format"]
        )
    if document.get("format") != FORMAT or document.get("version") != FORMAT_VERSION:
        problems.append(f'"format" must be "{FORMAT}" and "version" {FORMAT_VERSION}: is this an export?')
    kinds = {model.kind for model in TRANSFERRED}
    unknown = sorted(set(document) - kinds - _ENVELOPE)
    if unknown:
        problems.append(f"unknown keys {', '.join(unknown)}; expected {', '.join(sorted(kinds))}")
    with transaction.atomic(using=db):
        plans = [
            (model, _plan(model, document.get(model.kind, []), db, problems))
            for model in TRANSFERRED
            if model.kind in document or model.kind not in OPTIONAL_KINDS
        ]
        if problems:
            raise ImportRefused(problems)
        report = ImportReport({model.kind: _apply(model, plan, db) for model, plan in plans})
        if report.changed_anything:
            _reset_id_sequences(db)
        if dry_run:
            transaction.set_rollback(True, using=db)
    return report


@dataclass
class _Plan:
    """What one kind's import does; an existing id in neither set is deleted."""

    keep: list[Notice] = field(default_factory=list)  # validated, changed or new
    unchanged: set[int] = field(default_factory=set)


def _plan(model: type[Notice], rows: object, db: str, problems: list[str]) -> _Plan:
    plan = _Plan()
    if not isinstance(rows, list):
        problems.append(f"{model.kind}: must be a list of items")
        return plan
    existing = {item.pk: item for item in model._default_manager.using(db).all()}
    seen: set[int] = set()
    names = {f.name: f for f in _fields(model)}
    for index, row in enumerate(rows):
        where = f"{model.kind}[{index}]"
        if not isinstance(row, dict):
            problems.append(f"{where}: must be an object")
            continue
        pk = row.get("id")
        if not isinstance(pk, int) or isinstance(pk, bool) or not 0 < pk <= MAX_ID:
            problems.append(f"{where}: id must be a whole number from 1 to {MAX_ID}")
            continue
        where = f"{where} (id {pk})"
        if pk in seen:
            problems.append(f"{where}: the id appears twice")
            continue
        seen.add(pk)
        unknown = sorted(set(row) - set(names))
        if unknown:
            problems.append(f"{where}: unknown fields {', '.join(one_line(name, 40) for name in unknown)}")
            continue
        item = existing.get(pk)
        if item is None:
            item = model()
            item.pk = pk
        before = None if item._state.adding else export_row(item)
        try:
            for name, raw in row.items():
                setattr(item, names[name].attname, _value(names[name], raw))
            item.full_clean()  # the admin form's validation
        except ValidationError as err:
            problems.extend(f"{where}: {message}" for message in _messages(err))
            continue
        except (TypeError, ValueError, OverflowError) as err:  # a value no rule foresaw: still one line
            problems.append(f"{where}: {type(err).__name__}: {err}")
            continue
        if before is not None and before == export_row(item):
            plan.unchanged.add(pk)
        else:
            plan.keep.append(item)
    return plan


def _apply(model: type[Notice], plan: _Plan, db: str) -> Counts:
    counts = Counts(unchanged=len(plan.unchanged))
    wanted = plan.unchanged | {item.pk for item in plan.keep}
    for stale in model._default_manager.using(db).exclude(pk__in=wanted):
        stale.delete(using=db)
        counts.deleted += 1
    for item in plan.keep:
        if item._state.adding:
            item.save(using=db, force_insert=True)
            counts.added += 1
        else:
            item.save(using=db)
            counts.changed += 1
    return counts


def _reset_id_sequences(db: str) -> None:
    """Ids came from the file: the next id the admin gets must be above them (PostgreSQL)."""
    connection = connections[db]
    statements = connection.ops.sequence_reset_sql(no_style(), list(TRANSFERRED))
    if statements:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)


def _value(f: models.Field[Any, Any], raw: object) -> object:
    """A JSON value as the field's Python value; the model's validation does the rest."""
    if raw is None:
        return "" if isinstance(f, models.CharField) and f.blank and not f.null else None
    if isinstance(f, models.DateTimeField):
        try:
            parsed = parse_datetime(raw) if isinstance(raw, str) else None
        except ValueError:  # well formed, but no such date or time (2026-13-45)
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            # A text is quoted, cut; anything else only named (a 5000-digit number has no repr).
            shown = repr(one_line(raw, 40)) if isinstance(raw, str) else f"a JSON {_json_kind(raw)}"
            raise ValidationError(
                {f.name: f"{shown} is not an instant with its zone; write it like 2026-10-08T14:52:50Z."}
            )
        return parsed
    if isinstance(f, models.BooleanField) and not isinstance(raw, bool):
        raise ValidationError({f.name: "Write true or false."})
    if isinstance(f, (models.CharField, models.TextField)) and not isinstance(raw, str):
        raise ValidationError({f.name: "Write a text (a JSON string)."})
    return raw


def _json_kind(raw: object) -> str:
    if isinstance(raw, bool):
        return "boolean"
    if isinstance(raw, int | float):
        return "number"
    if isinstance(raw, list):
        return "array"
    return "object" if isinstance(raw, dict) else "value"


def _messages(err: ValidationError) -> list[str]:
    if hasattr(err, "error_dict"):
        return [
            f"{name}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
            for name, messages in err.message_dict.items()
        ]
    return list(err.messages)
