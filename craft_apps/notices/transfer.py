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

So do the release controls (``ReleaseControl``, under ``release_controls``; an export without
them leaves the controls as they are). Each row carries, besides what the admin's form edits,
who changed it last (``changed_by``, imported as the file says), when it was paused
(``paused_at``, imported: a paused rollout stays where it stood) and when it changed
(``updated_at``, UTC; read-only, the import's write sets its own). Since the file's controls
replace the table, each row's ``full_clean`` leaves the database's other rows out
(``check_others``) and the file's controls are checked as one set (``controls.problems``),
with the tags the host's state file knows when the caller hands them (``known_tags``; the
command does). ``release_controls_audit`` lists the admin's log of the controls (when, who,
what, the message with its reason): read-only, ignored by the import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.core.management.color import no_style
from django.db import connections, models, router, transaction
from django.utils.dateparse import parse_datetime

from craft_apps.compat import UTC
from craft_apps.controls import problems as control_problems
from craft_apps.notices.models import NOTICE_MODELS, AppChannel, Notice, ReleaseControl
from craft_apps.text import one_line

FORMAT = "craft_apps_notices"
FORMAT_VERSION = 1
AUDIT = "release_controls_audit"  # read-only: what the admin's log says of the controls
_ENVELOPE = {"format", "version", AUDIT}


MAX_ID = 2**31 - 1  # the largest id every database's id column holds

# What an export holds, in its order: the notices, the channel settings, the release controls.
TRANSFERRED: tuple[Any, ...] = (*NOTICE_MODELS, AppChannel, ReleaseControl)
# Kinds an older export lacks: left as they are when the file has none.
OPTIONAL_KINDS = frozenset({AppChannel.kind, ReleaseControl.kind})
# Fields the admin's form doesn't edit that an export carries all the same, per kind; of them,
# the read-only ones are ignored by the import.
KEPT_FIELDS: dict[str, frozenset[str]] = {
    ReleaseControl.kind: frozenset({"paused_at", "changed_by", "updated_at"}),
}
READ_ONLY_FIELDS: dict[str, frozenset[str]] = {ReleaseControl.kind: frozenset({"updated_at"})}


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
    """What an export carries: every stored field but the derived ones (and those kept)."""
    kept = KEPT_FIELDS.get(model.kind, frozenset())
    return [f for f in model._meta.concrete_fields if f.editable or f.name in kept]


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
    document[AUDIT] = export_audit(using or router.db_for_read(ReleaseControl))
    return document


_ACTIONS = {1: "added", 2: "changed", 3: "deleted"}  # LogEntry's ADDITION, CHANGE, DELETION


def export_audit(db: str) -> list[dict[str, Any]]:
    """The admin's log entries of the release controls, oldest first: when, who, what (added,
    changed or deleted), which control and the message (with its reason)."""
    if not django_apps.is_installed("django.contrib.admin"):  # a site without the admin: no log
        return []
    from django.contrib.admin.models import LogEntry  # only importable with the admin installed
    from django.contrib.contenttypes.models import ContentType

    kind = ContentType.objects.db_manager(db).get_for_model(ReleaseControl, for_concrete_model=False)
    entries = LogEntry.objects.using(db).filter(content_type=kind).select_related("user")
    return [
        {
            "when": _instant(entry.action_time),
            "user": entry.user.get_username(),
            "action": _ACTIONS.get(entry.action_flag, str(entry.action_flag)),
            "id": int(entry.object_id) if (entry.object_id or "").isdigit() else entry.object_id,
            "control": entry.object_repr,
            "message": entry.get_change_message(),
        }
        for entry in entries.order_by("action_time", "pk")
    ]


def import_notices(
    document: object,
    using: str | None = None,
    dry_run: bool = False,
    known_tags: dict[str, frozenset[str]] | None = None,
) -> ImportReport:
    """Makes the database hold exactly ``document``'s items, or raises ``ImportRefused``.
    ``known_tags``: the tags the host knows of each app it fetched, which a release
    control's tag must be one of (``api.controls.known_tags``); None checks no tag."""
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
        for model, plan in plans:
            if model is ReleaseControl:
                _check_controls(plan, known_tags, problems)
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
    # Every row that passed its own validation, with where it is in the file: what the rows
    # must pass as one set is checked on these.
    valid: list[tuple[str, Any]] = field(default_factory=list)
    # Of them, the (app key, tag) the database already holds under the row's id.
    kept_tags: set[tuple[str, str]] = field(default_factory=set)


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
        ignored = READ_ONLY_FIELDS.get(model.kind, frozenset())
        if isinstance(item, ReleaseControl):
            item.check_others = False  # the file's set replaces the table: checked as one
        try:
            for name, raw in row.items():
                if name not in ignored:
                    setattr(item, names[name].attname, _value(names[name], raw))
            item.full_clean()  # the admin form's validation
        except ValidationError as err:
            problems.extend(f"{where}: {message}" for message in _messages(err))
            continue
        except (TypeError, ValueError, OverflowError) as err:  # a value no rule foresaw: still one line
            problems.append(f"{where}: {type(err).__name__}: {err}")
            continue
        plan.valid.append((where, item))
        tag = _tag_of(item)
        if tag is not None and before is not None and (before["app_key"], before["tag"]) == tag:
            plan.kept_tags.add(tag)
        if before is not None and before == export_row(item):
            plan.unchanged.add(pk)
        else:
            plan.keep.append(item)
    return plan


def _tag_of(item: object) -> tuple[str, str] | None:
    """A release control's app key and tag; None for another kind."""
    return (item.app_key, item.tag) if isinstance(item, ReleaseControl) else None


def _check_controls(plan: _Plan, known_tags: dict[str, frozenset[str]] | None, problems: list[str]) -> None:
    """The file's release controls as one set (``controls.problems``, as the admin's form
    checks one against the others), and each one's tag against ``known_tags``. Each row's own
    problems were found by its ``full_clean``; the rows with any aren't in ``plan.valid``.
    A tag the database already holds for the row is not checked again: a hold whose release
    was since deleted on GitHub still means something, and an export imported again must
    change nothing."""
    if known_tags is not None:
        known_tags = dict(known_tags)
        for key, tag in plan.kept_tags:
            if key in known_tags:
                known_tags[key] = known_tags[key] | {tag}
    found = control_problems([item.to_control() for _, item in plan.valid], known_tags)
    for problem in found:
        where, item = plan.valid[problem.index]
        named = f"{problem.field}: " if problem.field else ""
        problems.append(f"{where} ({item}): {named}{problem.message}")


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
