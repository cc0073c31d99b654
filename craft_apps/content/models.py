"""The tables operators edit: renames, announcements, alerts, channels and release controls.

``full_clean`` holds every rule an item must follow; the admin's form and the import both call
it. Every write bumps the one-row ``NoticesVersion`` in the same transaction, the one number the
web processes look at. See docs/renames-and-notices.md, docs/channels.md and docs/controls.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from django.core import checks
from django.core.exceptions import ValidationError
from django.core.validators import (
    MaxLengthValidator,
    ProhibitNullCharactersValidator,
    RegexValidator,
    URLValidator,
)
from django.db import DatabaseError, models, router
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from craft_apps.content.items import AlertItem, AnnouncementItem, AppRenameItem, RepoRenameItem, Window
from craft_apps.controls.actions.registry import EVERY_ACTION, named
from craft_apps.controls.rules import (
    CONTROL_FIELDS,
    EVERY_CHANNEL,
    Control,
    ScheduleRefused,
    format_schedule,
    parse_schedule,
    problems,
)
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Channel
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.kernel.text import quoted

# Bounds (characters). A GitHub owner has at most 39 and a repository name at most 100.
APP_NAME_MAX = 64
DESCRIPTION_MAX = 500
REPO_MAX = 39 + 1 + 100
TITLE_MAX = 120
BODY_MAX = 4000
LINK_MAX = 500

_M = TypeVar("_M", bound=models.Model)

single_line = RegexValidator(
    r"^[^\r\n\t]*\Z",
    "Keep it on one line: remove line breaks and tabs.",
)
no_surrounding_space = RegexValidator(
    r"^(?!\s)(?s:.*\S)?\Z",
    "Remove the spaces at the start or the end.",
)
repository = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}\Z",
    "Write the repository as organization/project (letters, digits, '-', '_', '.'), "
    "such as storytold/docucraft.",
)
https_url = URLValidator(
    schemes=["https"],
    message="Enter a full https:// address the launcher can open, such as https://example.com/notes "
    "(http and other schemes are refused).",
)


_no_nul = ProhibitNullCharactersValidator()  # what the admin's form fields refuse too


def storable_problem(value: object) -> str | None:
    """Why a field's value can't be stored and served as it is, or None: a text with a NUL or
    with a lone UTF-16 surrogate (no UTF-8 holds it), an instant past the year 9999 in UTC."""
    if isinstance(value, str):
        try:
            _no_nul(value)
        except ValidationError as err:
            return " ".join(err.messages)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            return f"Remove the character at position {err.start + 1}: a lone surrogate, which no text holds."
    if isinstance(value, datetime) and value.tzinfo is not None:
        try:
            value.astimezone(UTC)
        except OverflowError:
            return "Pick an instant before the year 10000 in UTC."
    return None


def type_problem(f: models.Field[Any, Any], value: object) -> str | None:
    """Why ``value`` is not of the type ``f`` stores, or None (None is the field's null rule's):
    a text is a str, a yes or no a bool, a whole number an int (neither a bool, nor 12.7, nor
    "12"), an instant a datetime. The admin's form fields hand these types; another caller's
    value (the import's JSON) is refused rather than converted, as Django's conversion would
    store 12.7 as 12 and true as 1."""
    if value is None:
        return None
    if isinstance(f, models.BooleanField):
        return None if isinstance(value, bool) else f"Write true or false, not {_shown(value)}."
    if isinstance(f, models.IntegerField):
        whole = isinstance(value, int) and not isinstance(value, bool)
        return None if whole else f"Write a whole number, not {_shown(value)}."
    if isinstance(f, models.DateTimeField):
        return None if isinstance(value, datetime) else f"Write an instant, not {_shown(value)}."
    if isinstance(f, models.CharField | models.TextField):
        return None if isinstance(value, str) else f"Write a text, not {_shown(value)}."
    return None


def _shown(value: object) -> str:
    """What a caller gave, as JSON writes it and bounded, for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, int):
        return str(value) if value.bit_length() < 64 else "a number that long"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "an object"
    return f"a {type(value).__name__}"


def bump_version(using: str) -> None:
    """Tells every web process that the notices changed (in the caller's transaction)."""
    versions = NoticesVersion.objects.using(using)
    # At least the writer's clock in ns: the marker is then also when the notices and controls
    # were last written (a deletion too), which signed answers are ordered by.
    bumped = Greatest(F("version") + 1, Value(time.time_ns()))
    if versions.filter(pk=1).update(version=bumped):
        return
    # The row is missing (a flushed database): a recreated row starts from the clock, so it
    # never repeats a number a process may have kept.
    versions.bulk_create([NoticesVersion(pk=1, version=time.time_ns())], ignore_conflicts=True)
    versions.filter(pk=1).update(version=bumped)


class NoticeQuerySet(models.QuerySet[_M]):
    """Bulk writes send no signals: these bump the version themselves."""

    def update(self, **kwargs: Any) -> int:
        changed = super().update(**kwargs)
        bump_version(self.db)
        return changed

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[_M]:
        created = super().bulk_create(objs, *args, **kwargs)
        bump_version(self.db)
        return created

    def bulk_update(self, objs: Any, *args: Any, **kwargs: Any) -> int:
        changed = super().bulk_update(objs, *args, **kwargs)
        bump_version(self.db)
        return changed


def _bounded_text(max_length: int, **kwargs: Any) -> models.TextField[str, str]:
    """A multi-line text the model itself bounds (a TextField's max_length binds only forms)."""
    return models.TextField(max_length=max_length, validators=[MaxLengthValidator(max_length)], **kwargs)


class _Checked(models.Model):
    """A row whose ``full_clean`` refuses, first, a value not of its field's type
    (``type_problem``), then also, in any field, a value the database can't store and serve as
    it is (``storable_problem``) and a required text of only spaces (which the admin's form,
    stripping it, finds empty): that field's error, beside Django's own."""

    class Meta:
        abstract = True

    def full_clean(
        self,
        exclude: Iterable[str] | None = None,
        validate_unique: bool = True,
        validate_constraints: bool = True,
    ) -> None:
        """A row with a value of the wrong type is refused with just those values' errors: the
        other rules read each value as its type."""
        skipped = set(exclude or ())
        wrong = {
            f.name: [problem]
            for f in self._meta.concrete_fields
            if f.name not in skipped and (problem := type_problem(f, getattr(self, f.attname))) is not None
        }
        if wrong:
            raise ValidationError(wrong)
        super().full_clean(exclude, validate_unique, validate_constraints)

    def clean_fields(self, exclude: Any = None) -> None:
        errors: dict[str, Any] = {}
        try:
            super().clean_fields(exclude)
        except ValidationError as err:
            errors = err.update_error_dict(errors)
        skipped = set(exclude or ())
        for f in self._meta.concrete_fields:
            if f.name in errors or f.name in skipped:
                continue
            value = getattr(self, f.attname)
            problem = storable_problem(value)
            if problem is None and not f.blank and isinstance(value, str) and not value.strip():
                problem = str(f.error_messages["blank"])
            if problem is not None:
                errors[f.name] = [problem]
        self.check_fields(errors, skipped)
        if errors:
            raise ValidationError(errors)

    def check_fields(self, errors: dict[str, Any], skipped: set[str]) -> None:
        """Adds the model's own checks of single fields to ``errors`` (by field name); a field
        in ``skipped`` is not the caller's to change (the admin's form doesn't show it)."""


class _Derived(_Checked):
    """A row with fields derived from the typed ones (``derive``), set again at every save."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.derive()
        super().save(*args, **kwargs)

    def derive(self) -> None:
        raise NotImplementedError


class Notice(_Checked):
    """The publish window every item has."""

    published = models.BooleanField(
        default=False, help_text="Served only when ticked (and inside the window below)."
    )
    visible_from = models.DateTimeField(
        default=timezone.now, help_text="Served from this instant (UTC in exports)."
    )
    visible_until = models.DateTimeField(
        null=True, blank=True, help_text="Served until this instant; empty: until unpublished."
    )

    # The contract list this kind is served in, and its export key.
    kind: ClassVar[str]

    class Meta:
        abstract = True
        ordering = ("-visible_from", "-id")  # newest first, stable

    def window(self) -> Window:
        return Window(self.published, self.visible_from, self.visible_until)

    def clean(self) -> None:
        super().clean()
        if (
            self.visible_until is not None
            and self.visible_from is not None
            and self.visible_until <= self.visible_from
        ):
            raise ValidationError(
                {"visible_until": "Must be later than “visible from”; leave it empty for no end."}
            )

    def to_item(self) -> Any:
        raise NotImplementedError


class _Rename(Notice):
    """An ``old_name`` that became ``new_name`` (the concrete classes define both)."""

    old_name: str
    new_name: str

    class Meta(Notice.Meta):
        abstract = True

    def __str__(self) -> str:
        return f"{self.old_name} → {self.new_name}"

    def clean(self) -> None:
        super().clean()
        if self.old_name and self.old_name == self.new_name:
            raise ValidationError(
                {"new_name": "The new name is the same as the old one; write the new name."}
            )


class AppRename(_Derived, _Rename):
    old_name = models.CharField(
        max_length=APP_NAME_MAX,
        validators=[single_line, no_surrounding_space],
        help_text=f"The name launchers know (PdfCraft); at most {APP_NAME_MAX} characters.",
    )
    old_name_lower = models.CharField(max_length=3 * APP_NAME_MAX, blank=True, editable=False)
    new_name = models.CharField(
        max_length=APP_NAME_MAX,
        validators=[single_line, no_surrounding_space],
        help_text=f"The new name (DocuCraft); at most {APP_NAME_MAX} characters.",
    )
    new_name_lower = models.CharField(max_length=3 * APP_NAME_MAX, blank=True, editable=False)
    description = _bounded_text(
        DESCRIPTION_MAX,
        help_text=f"A sentence or two shown beside the rename; at most {DESCRIPTION_MAX} characters.",
    )
    renamed_at = models.DateTimeField(null=True, blank=True, help_text="When it was renamed (optional).")

    objects = NoticeQuerySet.as_manager()
    kind = "app_renames"

    class Meta(_Rename.Meta):
        verbose_name = "app rename"

    def derive(self) -> None:
        """The lowercase names are derived from the names, never typed."""
        self.old_name_lower = (self.old_name or "").lower()
        self.new_name_lower = (self.new_name or "").lower()

    def clean(self) -> None:
        self.derive()
        super().clean()

    def to_item(self) -> AppRenameItem:
        self.derive()
        return AppRenameItem(
            old_name=self.old_name,
            old_name_lower=self.old_name_lower,
            new_name=self.new_name,
            new_name_lower=self.new_name_lower,
            description=self.description,
            renamed_at=self.renamed_at,
        )


class RepoRename(_Rename):
    old_name = models.CharField(
        max_length=REPO_MAX,
        validators=[repository],
        help_text="The repository before, organization/project (storytold/pdfcraft).",
    )
    new_name = models.CharField(
        max_length=REPO_MAX,
        validators=[repository],
        help_text="The repository after, organization/project (storytold/docucraft).",
    )
    renamed_at = models.DateTimeField(null=True, blank=True, help_text="When it moved (optional).")

    objects = NoticeQuerySet.as_manager()
    kind = "repo_renames"

    class Meta(_Rename.Meta):
        verbose_name = "repository rename"

    def to_item(self) -> RepoRenameItem:
        return RepoRenameItem(old_name=self.old_name, new_name=self.new_name, renamed_at=self.renamed_at)


class _Message(Notice):
    title = models.CharField(
        max_length=TITLE_MAX,
        validators=[single_line, no_surrounding_space],
        help_text=f"One line, at most {TITLE_MAX} characters.",
    )
    body = _bounded_text(BODY_MAX, help_text=f"At most {BODY_MAX} characters.")
    created_at = models.DateTimeField(
        null=True, blank=True, default=timezone.now, help_text="The date launchers show (optional)."
    )

    class Meta(Notice.Meta):
        abstract = True

    def __str__(self) -> str:
        return self.title


class Announcement(_Message):
    objects = NoticeQuerySet.as_manager()
    kind = "announcements"

    class Meta(_Message.Meta):
        verbose_name = "announcement"

    def to_item(self) -> AnnouncementItem:
        return AnnouncementItem(title=self.title, body=self.body, created_at=self.created_at)


class Alert(_Message):
    maybe_web_link = models.CharField(
        max_length=LINK_MAX,
        blank=True,
        validators=[https_url],
        help_text=f"A page the popup offers to open (https only, at most {LINK_MAX} characters; optional).",
    )

    objects = NoticeQuerySet.as_manager()
    kind = "alerts"

    class Meta(_Message.Meta):
        verbose_name = "alert"

    def to_item(self) -> AlertItem:
        return AlertItem(
            title=self.title,
            body=self.body,
            maybe_web_link=self.maybe_web_link or None,
            created_at=self.created_at,
        )


app_key = RegexValidator(
    r"^[\w.-]+\Z",
    "Write the app's key as the APPS setting names it (letters, digits, '-', '_', '.'), such as photocraft.",
)


class ChannelListField(models.JSONField):
    """A JSON field whose system check never needs the database.

    Django 6.1 asks the database whether it supports JSON when a command starts; the poller and
    ``craft_apps_status`` must start while the site's database can't be read. Migrations see a
    plain ``JSONField``.
    """

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        try:
            return super().check(**kwargs)
        except DatabaseError:
            return super().check(**{**kwargs, "databases": []})

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class ChannelField(models.CharField):  # type: ignore[type-arg]
    """A channel's name, one of ``choices`` (``domain.Channel``'s). Migrations see a plain
    ``CharField`` without them: the database holds any name, and a new channel needs none."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        kwargs.pop("choices", None)
        return name, "django.db.models.CharField", args, kwargs


class AppChannel(_Derived):
    """One app's channel setting, edited by operators: the channels the app is served on
    beyond stable (``channels``, names of ``domain.Channel``). Without a row, or with an empty
    list, the app is served on every channel as on stable. Every write bumps
    ``NoticesVersion``; a key no configured app has is kept, applied when one has it
    (docs/channels.md)."""

    app_key = models.CharField(
        max_length=APP_NAME_MAX,
        unique=True,
        validators=[app_key],
        help_text="The app's key, as in the APPS setting (photocraft); lowercase.",
    )
    channels = ChannelListField(
        default=list,
        blank=True,
        help_text="The channels this app is served on beyond stable (beta: its prereleases, "
        "GET …/release_info?channel=beta). Any of them costs one more GitHub request per poll "
        "interval for this app.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = NoticeQuerySet.as_manager()
    kind = "app_channels"

    class Meta:
        ordering = ("app_key",)
        verbose_name = "app channel"

    def __str__(self) -> str:
        return f"{self.app_key}: {', '.join(self.served_channels()) or 'stable only'}"

    def serves(self, channel: Channel) -> bool:
        """Whether the app is served on ``channel`` as the row says (stable: always)."""
        return channel is Channel.STABLE or channel.value in self.served_channels()

    def served_channels(self) -> tuple[str, ...]:
        """The row's channels beyond stable, in the order ``Channel`` lists them (none when
        the list isn't one the model keeps: ``full_clean`` says why)."""
        names = self.channels if isinstance(self.channels, list) else []
        return tuple(c.value for c in Channel.chosen_per_app() if c.value in names)

    def derive(self) -> None:
        """A key is kept as the setting keeps it (lowercase, ``conf.parse_app_list``), the
        channels in ``Channel``'s order."""
        self.app_key = (self.app_key or "").lower()
        if channels_problem(self.channels) is None:
            self.channels = list(self.served_channels())

    def clean_fields(self, exclude: Any = None) -> None:
        self.derive()  # the key is checked as it will be stored
        super().clean_fields(exclude)

    def check_fields(self, errors: dict[str, Any], skipped: set[str]) -> None:
        problem = channels_problem(self.channels)
        if problem is not None and "channels" not in errors and "channels" not in skipped:
            errors["channels"] = [problem]


def channels_problem(value: object) -> str | None:
    """Why ``value`` isn't an app's channels, or None: a list of distinct names, each one of
    the channels an operator turns on per app."""
    names = [c.value for c in Channel.chosen_per_app()]
    if not isinstance(value, list):
        return f"Write a list of channel names ({', '.join(names)}), not {_shown(value)}."
    for name in value:
        if not isinstance(name, str) or name not in names:
            shown = quoted(name) if isinstance(name, str) else _shown(name)
            return f"No channel is named {shown}; the channels are {', '.join(names)}."
    if len(set(value)) != len(value):
        return "Name each channel once."
    return None


TAG_MAX = 255  # git allows longer; GitHub's release pages don't


class ActionField(models.CharField):  # type: ignore[type-arg]
    """A control's action: one of ``controls.actions``' names, each described in the help text.
    Migrations see a plain ``CharField`` without either: a new action needs no migration."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["choices"] = [(action.name, action.name) for action in EVERY_ACTION]
        kwargs["help_text"] = " ".join(f"{action.name}: {action.help_text}" for action in EVERY_ACTION)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        kwargs.pop("choices", None)
        kwargs.pop("help_text", None)
        return name, "django.db.models.CharField", args, kwargs


REASON_MAX = 1000


class ReleaseControl(_Derived):
    """One operator decision about one app's release (``craft_apps.controls.rules`` says what each
    does): a hold at a tag, a yank of a tag, or a staged rollout of a tag with an optional
    schedule and a pause. Each has a required reason; who changed it last is kept beside it
    and the admin's log keeps every change. Every write bumps ``NoticesVersion``: the web
    processes apply it within about a second. A key no configured app has, or a tag the host
    doesn't know yet (a release not published yet), is kept and applied when it appears; the
    admin and the import warn of such a tag (``controls.waiting``), they don't refuse it.

    ``full_clean`` checks the control with every other one of the database (``controls.problems``);
    ``check_others`` off (the import, which checks its file's whole set itself) leaves the other
    rows out."""

    app_key = models.CharField(
        max_length=APP_NAME_MAX,
        validators=[app_key],
        help_text="The app's key, as in the APPS setting (photocraft); lowercase.",
    )
    action = ActionField(max_length=16)
    tag = models.CharField(
        max_length=TAG_MAX,
        validators=[single_line, no_surrounding_space],
        help_text="The release's git tag, as on GitHub (v1.2.0).",
    )
    channel = ChannelField(
        max_length=16,
        blank=True,
        default=EVERY_CHANNEL,
        choices=[(EVERY_CHANNEL, "every channel"), *((c.value, c.value) for c in Channel)],
        help_text="Where a hold or a rollout applies; a yank applies on every channel.",
    )
    percentage = models.IntegerField(
        null=True,
        blank=True,
        help_text="A rollout's share of launchers (0-100) before its schedule's first step.",
    )
    schedule = _bounded_text(
        2000,
        blank=True,
        help_text="A rollout's steps, one a line: an instant and the percentage from then on, "
        "such as “2026-12-02T09:00Z 25” then “2026-12-04T09:00Z 100”. Only goes up.",
    )
    paused = models.BooleanField(
        default=False,
        help_text="A paused rollout stays at the percentage it had when paused; its schedule "
        "moves on again when unticked.",
    )
    paused_at = models.DateTimeField(null=True, blank=True, editable=False)
    reason = _bounded_text(
        REASON_MAX, help_text="Why (kept with who and when, in the admin's log and the export)."
    )
    changed_by = models.CharField(max_length=150, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = NoticeQuerySet.as_manager()
    kind = "release_controls"

    class Meta:
        ordering = ("app_key", "action", "tag", "id")
        verbose_name = "release control"

    # Whether ``clean`` checks this control with the database's other rows (not stored). The
    # import turns it off: its file replaces the table, so it checks the file's set instead.
    check_others: bool = True

    def __str__(self) -> str:
        scope = f" on {self.channel}" if self.channel else ""
        kind = named(self.action)
        shown = kind.title(self.tag) if kind.name else f"{self.action} {self.tag}"
        return f"{self.app_key}: {shown}{scope}"

    def derive(self) -> None:
        """The key is lowercase, as the setting keeps it; ``paused_at`` follows ``paused``."""
        self.app_key = (self.app_key or "").lower()
        if self.paused and self.paused_at is None:
            self.paused_at = timezone.now()
        elif not self.paused:
            self.paused_at = None

    def steps(self) -> tuple[Any, ...]:
        try:
            return parse_schedule(self.schedule or "")
        except ScheduleRefused:
            return ()

    def to_control(self) -> Control:
        """The control this row holds: each of ``Control``'s fields from the model's field of
        that name, but those the model keeps as the admin's form edits them (no percentage
        for a hold or a yank, the schedule as text, the pause as an instant)."""
        self.derive()
        converted: dict[str, Any] = {
            "channel": self.channel or EVERY_CHANNEL,
            "percentage": self.percentage or 0,
            "steps": self.steps(),
            "paused_at_ms": None if self.paused_at is None else datetime_to_ms(self.paused_at),
            "since_ms": None,
        }
        same = {name: getattr(self, name) for name in CONTROL_FIELDS if name not in converted}
        return Control(**same, **converted)

    def clean_fields(self, exclude: Any = None) -> None:
        self.derive()  # the key is checked as it will be stored
        super().clean_fields(exclude)

    def check_fields(self, errors: dict[str, Any], skipped: set[str]) -> None:
        """The schedule reads as steps, and is kept as the model writes it; a pause is not in
        the future (``paused_at`` is the import's to give; the admin's form sets it now)."""
        if "paused_at" not in errors and "paused_at" not in skipped:
            problem = pause_problem(self.paused_at, timezone.now())
            if problem is not None:
                errors["paused_at"] = [problem]
        if "schedule" not in errors:
            try:
                parse_schedule(self.schedule or "")
            except ScheduleRefused as err:
                errors["schedule"] = [str(err)]
            else:
                self.schedule = format_schedule(parse_schedule(self.schedule or ""))

    def clean(self) -> None:
        super().clean()
        if named(self.action).scheduled and self.percentage is None:
            raise ValidationError({"percentage": "Give the rollout's percentage now (0-100), such as 5."})
        others = ReleaseControl._default_manager.using(self._state.db or router.db_for_read(ReleaseControl))
        if not self.check_others:
            rows: list[ReleaseControl] = []
        elif self.pk:
            rows = [row for row in others.exclude(pk=self.pk) if row.pk is not None]
        else:
            rows = list(others)
        check_controls([*rows, self], only=self)


def pause_problem(paused_at: datetime | None, now: datetime) -> str | None:
    """Why a rollout can't have been paused at ``paused_at``, or None: a pause later than
    ``now`` would leave the rollout following its schedule until then."""
    if paused_at is None or paused_at <= now:
        return None
    return (
        f"{_instant_text(paused_at)} is later than now ({_instant_text(now)}): a rollout is paused "
        "when it stops, so it would follow its schedule until then. Give when it was paused, or "
        "leave it empty to pause it at the import."
    )


def _instant_text(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_controls(rows: list[ReleaseControl], only: ReleaseControl | None = None) -> None:
    """Raises ValidationError with what is wrong with ``rows`` as one set (``controls.problems``);
    with ``only``, just what concerns it, field by field when the problem is its own."""
    controls = [row.to_control() for row in rows]
    errors: dict[str, list[str]] = {}
    for problem in problems(controls):
        row = rows[problem.index]
        if only is not None and row is not only:
            related = (
                controls[problem.index].app_key == only.app_key and controls[problem.index].tag == only.tag
            )
            if not related:
                continue
            errors.setdefault("__all__", []).append(f"{row}: {problem.message}")
            continue
        field_name = problem.field if only is not None and problem.field else "__all__"
        message = problem.message if only is not None else f"{row}: {problem.message}"
        errors.setdefault(field_name, []).append(message)
    if errors:
        raise ValidationError(errors)


class NoticesVersion(models.Model):
    """One row whose number changes with every write to the notices: the cheap marker the web
    processes look at (at most once a second) instead of the items."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"notices version {self.version}"


# In the contract's order; the feed, the export and the admin go through this.
NOTICE_MODELS: tuple[type[Notice], ...] = (AppRename, RepoRename, Announcement, Alert)


def _changed(sender: type[models.Model], using: str | None = None, **kwargs: Any) -> None:
    bump_version(using or router.db_for_write(sender))


# Every table whose writes the web processes must see: the notices, the channel settings and
# the release controls.
WATCHED_MODELS: tuple[type[models.Model], ...] = (*NOTICE_MODELS, AppChannel, ReleaseControl)

for _model in WATCHED_MODELS:
    post_save.connect(_changed, sender=_model, dispatch_uid=f"craft_apps.content.{_model.__name__}.save")
    post_delete.connect(_changed, sender=_model, dispatch_uid=f"craft_apps.content.{_model.__name__}.delete")
