"""Every item as JSON and back (``craft_apps_notices export|import``), for staging and backups.

An import makes the database hold exactly the file's items, each checked as the admin checks
it: one problem, one line each, and nothing is written. Values are taken as JSON typed them.
Older exports still import; a control for an unknown tag imports with a warning.
See docs/renames-and-notices.md and docs/controls.md.
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

from craft_apps.content.models import NOTICE_MODELS, AppChannel, Notice, ReleaseControl
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.rules import problems as control_problems
from craft_apps.controls.rules import waiting
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Channel
from craft_apps.kernel.text import one_line, quoted

FORMAT = "craft_apps_notices"
FORMAT_VERSION = 1
AUDIT = "release_controls_audit"  # read-only: what the admin's log says of the controls
_ENVELOPE = {"format", "version", AUDIT}


MAX_ID = 2**31 - 1  # the largest id every database's id column holds

# What an export holds, in its order: the notices, the channel settings, the release controls,
# the release policies.
TRANSFERRED: tuple[Any, ...] = (*NOTICE_MODELS, AppChannel, ReleaseControl, ReleasePolicy)
# Kinds an older export lacks: left as they are when the file has none.
OPTIONAL_KINDS = frozenset({AppChannel.kind, ReleaseControl.kind, ReleasePolicy.kind})
# Fields the admin's form doesn't edit that an export carries all the same, per kind; of them,
# the read-only ones are ignored by the import.
KEPT_FIELDS: dict[str, frozenset[str]] = {
    ReleaseControl.kind: frozenset({"paused_at", "changed_by", "updated_at"}),
    ReleasePolicy.kind: frozenset({"effective_from", "approved", "changed_by", "updated_at"}),
}
READ_ONLY_FIELDS: dict[str, frozenset[str]] = {
    ReleaseControl.kind: frozenset({"updated_at"}),
    ReleasePolicy.kind: frozenset({"updated_at"}),
}


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
    # A line each for what was imported but deserves a look: a control whose tag the host
    # knows no release of (kept, and applied the moment the release appears).
    warnings: list[str] = field(default_factory=list)

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
    ``known_tags``: the tags the host knows of each app (``controls.known_tags``); a
    release control whose tag isn't one is imported with a warning; None checks no tag."""
    db = using or router.db_for_write(NOTICE_MODELS[0])
    problems: list[str] = []
    if not isinstance(document, dict):
        raise ImportRefused(
            [f"the file holds a {type(document).__name__}, not an object of the export format"]
        )
    version = document.get("version")
    if document.get("format") != FORMAT or type(version) is not int or version != FORMAT_VERSION:
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
        warnings: list[str] = []
        for model, plan in plans:
            if model is ReleaseControl:
                warnings = _check_controls(plan, known_tags, problems)
        if problems:
            raise ImportRefused(problems)
        report = ImportReport({model.kind: _apply(model, plan, db) for model, plan in plans}, warnings)
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


def _plan(model: type[Notice], rows: object, db: str, problems: list[str]) -> _Plan:
    plan = _Plan()
    if not isinstance(rows, list):
        problems.append(f"{model.kind}: must be a list of items")
        return plan
    existing = {item.pk: item for item in model._default_manager.using(db).all()}
    seen: set[int] = set()
    seen_unique: dict[tuple[str, object], str] = {}
    names = {f.name: f for f in _fields(model)}
    for index, row in enumerate(rows):
        where = f"{model.kind}[{index}]"
        if not isinstance(row, dict):
            problems.append(f"{where}: must be an object")
            continue
        row = _upgraded(model, row)
        refused = _row_problem(row, where, seen, names)
        if refused is not None:
            problems.append(refused)
            continue
        pk: int = row["id"]
        where = f"{where} (id {pk})"
        item = existing.get(pk)
        if item is None:
            item = model()
            item.pk = pk
        before = None if item._state.adding else export_row(item)
        found = _fill(item, row, names, where)
        if not found and (repeated := _repeated(item, where, seen_unique)) is not None:
            found = [repeated]
        if found:
            problems.extend(found)
            continue
        plan.valid.append((where, item))
        _note(plan, item, before)
    return plan


def _upgraded(model: type[Any], row: dict[str, Any]) -> dict[str, Any]:
    """A row of an older export as today's fields say it: an app channel's ``"beta": true``
    (or false) is ``"channels": ["beta"]`` (or ``[]``). Any other value of ``beta`` is handed
    on as it is, for the model's check to refuse."""
    if model is not AppChannel or "beta" not in row or "channels" in row:
        return row
    upgraded = {name: value for name, value in row.items() if name != "beta"}
    beta = row["beta"]
    upgraded["channels"] = ([Channel.BETA.value] if beta else []) if isinstance(beta, bool) else beta
    return upgraded


def _row_problem(
    row: dict[str, Any], where: str, seen: set[int], names: dict[str, models.Field[Any, Any]]
) -> str | None:
    """Why a row can't be read as an item, or None: an id out of range or seen before (noted in
    ``seen``), or a field the kind doesn't have."""
    pk = row.get("id")
    if not isinstance(pk, int) or isinstance(pk, bool) or not 0 < pk <= MAX_ID:
        return f"{where}: id must be a whole number from 1 to {MAX_ID}"
    where = f"{where} (id {pk})"
    if pk in seen:
        return f"{where}: the id appears twice"
    seen.add(pk)
    unknown = sorted(set(row) - set(names))
    if unknown:
        return f"{where}: unknown fields {', '.join(one_line(name, 40) for name in unknown)}"
    return None


def _fill(
    item: Notice, row: dict[str, Any], names: dict[str, models.Field[Any, Any]], where: str
) -> list[str]:
    """Sets the row's values on ``item`` and validates it as the admin's form does; what is
    wrong, one line each (none: the item is valid)."""
    ignored = READ_ONLY_FIELDS.get(item.kind, frozenset())
    if isinstance(item, ReleaseControl):
        item.check_others = False  # the file's set replaces the table: checked as one
    try:
        for name, raw in row.items():
            value = _value(names[name], raw)  # a read-only field too must read as its type
            if name not in ignored:
                setattr(item, names[name].attname, value)
        # The admin form's validation; what must be unique is checked among the file's rows,
        # which replace the table's (``_repeated``).
        item.full_clean(validate_unique=False)
    except ValidationError as err:
        return [f"{where}: {message}" for message in _messages(err)]
    except (TypeError, ValueError, OverflowError) as err:  # a value no rule foresaw: still one line
        return [f"{where}: {type(err).__name__}: {err}"]
    return []


def _note(plan: _Plan, item: Notice, before: dict[str, Any] | None) -> None:
    """Notes a valid item as unchanged or to write."""
    if before is not None and before == export_row(item):
        plan.unchanged.add(item.pk)
    else:
        plan.keep.append(item)


def _repeated(item: Notice, where: str, seen: dict[tuple[str, object], str]) -> str | None:
    """Why ``item`` can't be one of the file's rows, or None: a unique field's value (an app
    channel's key) that a row before it has (noted in ``seen``). The admin refuses a second
    row with it; the file's rows replace the table's, so they are checked among themselves."""
    for f in type(item)._meta.concrete_fields:
        if f.unique and not f.primary_key:
            value = getattr(item, f.attname)
            first = seen.setdefault((f.name, value), where)
            if first != where:
                return f"{where}: {f.name}: {quoted(str(value))} is {first}'s already; keep one of them."
    return None


def _check_controls(
    plan: _Plan, known_tags: dict[str, frozenset[str]] | None, problems: list[str]
) -> list[str]:
    """The file's release controls as one set (``controls.problems``, as the admin's form
    checks one against the others), each problem added to ``problems``; then the warnings of
    the controls whose tag ``known_tags`` doesn't hold (``controls.waiting``). Each row's own
    problems were found by its ``full_clean``; the rows with any aren't in ``plan.valid``."""
    controls = [item.to_control() for _, item in plan.valid]
    for problem in control_problems(controls):
        where, item = plan.valid[problem.index]
        named = f"{problem.field}: " if problem.field else ""
        problems.append(f"{where} ({item}): {named}{problem.message}")
    if known_tags is None:
        return []
    return [
        one_line(f"{plan.valid[found.index][0]}: {found.message}", 1000)
        for found in waiting(controls, known_tags)
    ]


def _apply(model: type[Notice], plan: _Plan, db: str) -> Counts:
    counts = Counts(unchanged=len(plan.unchanged))
    wanted = plan.unchanged | {item.pk for item in plan.keep}
    for stale in model._default_manager.using(db).exclude(pk__in=wanted):
        stale.delete(using=db)
        counts.deleted += 1
    # A unique value may move from one row to another (two channel settings' keys swapped):
    # the changed rows are written again whole, after every old one is gone.
    rewritten = any(f.unique and not f.primary_key for f in model._meta.concrete_fields)
    if rewritten:
        model._default_manager.using(db).filter(pk__in=[i.pk for i in plan.keep]).delete()
    for item in plan.keep:
        if item._state.adding:
            counts.added += 1
        else:
            counts.changed += 1
        if item._state.adding or rewritten:
            item.save(using=db, force_insert=True)
        else:
            item.save(using=db)
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
    """A JSON value as the field's Python value: an instant read from its text (JSON has no
    instant), an optional text's null as empty; every other value as it is, for the model's
    validation (``full_clean``, whose first rule is that each value is of its field's type)."""
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
    return raw  # as JSON typed it: the model's ``type_problem`` refuses 12.7 or true for a number


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
