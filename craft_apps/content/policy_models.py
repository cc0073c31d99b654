"""Each app's release policy per channel (``ReleasePolicy``), edited beside the release controls.

``immediate`` (the default, as without a row), ``staged``, ``guarded`` or ``approval``:
``controls.policies`` and ``controls.guard`` say what each does. Every write bumps
``NoticesVersion``, so the web processes apply an edit or an approval within about a
second. See docs/controls.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from craft_apps.content.models import (
    APP_NAME_MAX,
    REASON_MAX,
    ChannelField,
    NoticeQuerySet,
    _bounded_text,
    _changed,
    _Derived,
    app_key,
)
from craft_apps.controls.guard import GuardRule, Mark, format_marks, parse_marks
from craft_apps.controls.policies import (
    DEFAULT_SCHEDULE,
    IMMEDIATE,
    KINDS,
    SCHEDULED,
    PolicyScheduleRefused,
    format_offsets,
    parse_offsets,
    policy_control,
)
from craft_apps.controls.rules import APPROVED, GUARD, GUARDED, Control
from craft_apps.kernel.domain import Channel, tag_problem
from craft_apps.kernel.instants import datetime_to_ms

APPROVED_KEPT = 50  # the newest approvals a policy keeps: far more than the releases it still sees
MARKS_KEPT = 50  # the newest guarded decisions a policy keeps, one per release
GUARD_AUTHOR = "guarded policy"  # ``changed_by`` of a row the guard wrote


class KindField(models.CharField):  # type: ignore[type-arg]
    """A policy's kind, one of ``choices``. Migrations see a plain ``CharField`` without them
    (as ``ChannelField``): a new kind needs no migration."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        kwargs.pop("choices", None)
        return name, "django.db.models.CharField", args, kwargs


class _PolicyQuerySet(NoticeQuerySet["ReleasePolicy"]):
    """Bulk writes bump the version, as every watched table's (``NoticeQuerySet``)."""


class ReleasePolicy(_Derived):
    """How new releases of one app start on one channel. ``effective_from`` is when the policy
    took effect (set when it leaves ``immediate``, kept across edits): only releases published
    from then on wait. ``approved`` lists the tags approved, one a line, newest last."""

    app_key = models.CharField(
        max_length=APP_NAME_MAX,
        validators=[app_key],
        help_text="The app's key, as in the APPS setting (photocraft); lowercase.",
    )
    channel = ChannelField(
        max_length=16,
        default=Channel.STABLE.value,
        choices=[(c.value, c.value) for c in Channel],
        help_text="The channel whose new releases the policy applies to.",
    )
    policy = KindField(
        max_length=16,
        default=IMMEDIATE,
        choices=[(k, k) for k in KINDS],
        help_text="immediate: a new release is served at once. staged: it starts as a rollout "
        "following the schedule from its publication. guarded: staged, each step taken only "
        "while the release's install reports are healthy. approval: it waits for an approval here.",
    )
    schedule = models.CharField(
        max_length=500,
        default=DEFAULT_SCHEDULE,
        help_text="A staged release's steps after its publication (m, h or d) and the percentage "
        "from then on, such as “+0h 5, +24h 25, +72h 100”; also the schedule of “approve as staged”.",
    )
    min_installs = models.PositiveIntegerField(
        default=200,
        validators=[MaxValueValidator(10_000_000)],
        help_text="guarded: the distinct installs a release needs reported before its next step.",
    )
    max_failing_percent = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("2.00"),
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(100))],
        help_text="guarded: the most of those installs that may fail, crash or roll back (percent); "
        "over it, the rollout pauses itself until resumed.",
    )
    notify_url = models.URLField(
        max_length=500,
        blank=True,
        help_text="guarded: a webhook (Slack-compatible) told when a rollout pauses itself; optional.",
    )
    guard = _bounded_text(MARKS_KEPT * 128, blank=True, editable=False)
    effective_from = models.DateTimeField(null=True, blank=True, editable=False)
    approved = _bounded_text(APPROVED_KEPT * 256, blank=True, editable=False)
    reason = _bounded_text(REASON_MAX, help_text="Why (kept with who and when, in the admin's log).")
    changed_by = models.CharField(max_length=150, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = _PolicyQuerySet.as_manager()
    kind = "release_policies"

    class Meta:
        ordering = ("app_key", "channel")
        verbose_name = "release policy"
        verbose_name_plural = "release policies"
        constraints = [
            models.UniqueConstraint(fields=("app_key", "channel"), name="craft_apps_one_policy_per_channel")
        ]

    def __str__(self) -> str:
        return f"{self.app_key} on {self.channel}: {self.policy}"

    def derive(self) -> None:
        """The key is lowercase; ``effective_from`` is set when the policy leaves
        ``immediate`` and cleared when it returns to it."""
        self.app_key = (self.app_key or "").lower()
        if self.policy == IMMEDIATE:
            self.effective_from = None
        elif self.effective_from is None:
            self.effective_from = timezone.now()

    def approved_tags(self) -> list[str]:
        return [tag for tag in (self.approved or "").splitlines() if tag]

    def approve(self, tag: str) -> None:
        """Adds ``tag`` to the approvals (the newest ``APPROVED_KEPT`` are kept)."""
        tags = [t for t in self.approved_tags() if t != tag] + [tag]
        self.approved = "\n".join(tags[-APPROVED_KEPT:])

    def rule(self) -> GuardRule:
        return GuardRule(self.min_installs, float(self.max_failing_percent))

    def marks(self) -> dict[str, Mark]:
        """What the guard decided for each release, by tag (``controls.guard``)."""
        return parse_marks(self.guard or "")

    def set_marks(self, marks: dict[str, Mark]) -> None:
        """Keeps ``marks`` (the newest ``MARKS_KEPT``, newest last)."""
        kept = sorted(marks.values(), key=lambda m: m.at_ms)[-MARKS_KEPT:]
        self.guard = format_marks({m.tag: m for m in kept})

    def to_controls(self) -> tuple[Control, ...]:
        """The policy, its approvals and its guard's marks as the controls they travel as (none
        for immediate)."""
        self.derive()
        try:
            offsets = parse_offsets(self.schedule or "")
        except PolicyScheduleRefused:
            offsets = ()
        since = self.effective_from
        made = (
            None
            if since is None
            else policy_control(self.app_key, self.channel, self.policy, offsets, datetime_to_ms(since))
        )
        if made is None:
            return ()
        approvals = (Control(self.app_key, APPROVED, tag, self.channel) for tag in self.approved_tags())
        marks = () if self.policy != GUARDED else (self._mark_control(m) for m in self.marks().values())
        return (made, *approvals, *marks)

    def _mark_control(self, mark: Mark) -> Control:
        paused = mark.at_ms if mark.paused else None
        return Control(self.app_key, GUARD, mark.tag, self.channel, mark.percentage, paused_at_ms=paused)

    def clean_fields(self, exclude: Any = None) -> None:
        self.derive()
        super().clean_fields(exclude)

    def check_fields(self, errors: dict[str, Any], skipped: set[str]) -> None:
        """The schedule reads as steps (kept as the model writes it); approvals are tags."""
        if "schedule" not in errors and (self.schedule or self.policy in SCHEDULED):
            try:
                self.schedule = format_offsets(parse_offsets(self.schedule or ""))
            except PolicyScheduleRefused as err:
                errors["schedule"] = [str(err)]
        wrong = [tag for tag in self.approved_tags() if tag_problem(tag) is not None]
        if wrong and "approved" not in skipped:
            errors["approved"] = [f"Not a tag: {wrong[0][:40]!r}."]


post_save.connect(_changed, sender=ReleasePolicy, dispatch_uid="craft_apps.content.ReleasePolicy.save")
post_delete.connect(_changed, sender=ReleasePolicy, dispatch_uid="craft_apps.content.ReleasePolicy.delete")
