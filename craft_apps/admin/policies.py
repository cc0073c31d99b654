"""The Django admin of the release policies (``ReleasePolicy``), with the release controls' rules.

``ReleasePolicyAdmin`` needs the model's own permissions and a reason, records who changed a
policy, and lists each release a policy keeps back on this host now (``waiting_now``, from the
endpoint's answer cache). Its actions approve a waiting release, approve it as a staged rollout,
or take over a staged or guarded rollout as a hand-made control at the same percentage, so
nothing launchers see changes (docs/controls.md). The package's ``__init__`` imports it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import django
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.core.exceptions import ValidationError
from django.db import router, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from craft_apps.admin.reports_chart import install_reports_urls
from craft_apps.api.answer import build_release_info
from craft_apps.api.runtime import runtime
from craft_apps.conf import app_settings
from craft_apps.content.channels import read_channel_apps, read_controls
from craft_apps.content.models import REASON_MAX, ReleaseControl
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.form import app_choices, set_widget
from craft_apps.controls.guard import FAILING, Health, Mark, resume
from craft_apps.controls.guard_banner import paused_marks, paused_text, warn_paused
from craft_apps.controls.policies import parse_offsets, policy_of, rollout_of
from craft_apps.controls.rules import APPROVAL, GUARDED, ROLLOUT, STAGED, format_schedule
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.instants import datetime_to_ms, format_ms, ms_to_datetime
from craft_apps.kernel.serving import HostReleases, WaitingRelease, waiting_releases
from craft_apps.kernel.versions import version_text
from craft_apps.reports.counts import ReportsUnavailable
from craft_apps.reports.stores import release_counts

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def waiting_now() -> list[WaitingRelease] | None:
    """Every release a policy keeps back now on this host, by the database's controls and
    policies (what the web processes apply within 2 s) and the state file as the
    endpoint's own look left it (no read of the file here); None before that look read it."""
    snapshot = runtime().answers.snapshot()
    if snapshot.version == 0:
        return None
    apps, web_url = app_settings.APPS, app_settings.GITHUB_WEB_URL
    listed = build_release_info(apps, snapshot.apps, web_url)
    releases = HostReleases(apps, listed, web_url, snapshot.history, snapshot.history_fetches)
    return waiting_releases(releases, read_channel_apps(), read_controls(), runtime().clock.now_ms())


def _waiting_of(policy: ReleasePolicy) -> list[WaitingRelease] | None:
    found = waiting_now()
    if found is None:
        return None
    return [w for w in found if (w.app_key, w.channel.value) == (policy.app_key, policy.channel)]


def _wait_line(item: WaitingRelease) -> str:
    wait = item.wait
    if wait.kind == APPROVAL:
        return f"{wait.release.tag}: waits for an approval"
    if wait.paused:
        return f"{wait.release.tag}: paused by its guard at {wait.percentage} %"
    text = f"{wait.release.tag}: {wait.kind} at {wait.percentage} %"
    if wait.next_ms is not None:
        text += f", {wait.next_percentage} % from {format_ms(wait.next_ms)}"
    return text


# A URL typed without a scheme is https (Django 5.0 added the argument; 6.0 made it the default).
URL_SCHEME: dict[str, Any] = {"assume_scheme": "https"} if django.VERSION >= (5, 0) else {}


# The fields an operator types, in the form and on the admin page.
EDITABLE = (
    "app_key",
    "channel",
    "policy",
    "schedule",
    "min_installs",
    "max_failing_percent",
    "notify_url",
    "reason",
)


class ReleasePolicyForm(forms.ModelForm):  # type: ignore[type-arg]
    """The model's fields, the app key chosen from the configured apps (as a control's,
    ``controls.form.app_choices``); the model's validation is the one rule."""

    notify_url = forms.URLField(
        required=False,
        max_length=500,
        **URL_SCHEME,
        help_text="guarded: a webhook (Slack-compatible) told when a rollout pauses itself; optional.",
    )

    class Meta:
        model = ReleasePolicy
        fields = EDITABLE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.instance.app_key if self.instance.pk is not None else None
        set_widget(self, "app_key", forms.Select(choices=app_choices(app_settings.APPS, current)))
        for name in ("min_installs", "max_failing_percent"):  # left out: the model's default
            if name in self.fields:
                self.fields[name].required = False

    def _or_default(self, name: str) -> Any:
        """The value typed for ``name``, or the model's default when left out."""
        found = self.cleaned_data.get(name)
        return getattr(ReleasePolicy(), name) if found is None else found

    def clean_min_installs(self) -> Any:
        return self._or_default("min_installs")

    def clean_max_failing_percent(self) -> Any:
        return self._or_default("max_failing_percent")


@admin.register(ReleasePolicy)
class ReleasePolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = ReleasePolicyForm
    list_display = (
        "app_key",
        "channel",
        "policy",
        "schedule",
        "waiting",
        "changed_by",
        "updated_at",
        "reason",
    )
    list_filter = ("policy", "channel")
    search_fields = ("app_key", "reason")
    fields = (*EDITABLE, "effective_from", "approved")
    readonly_fields = ("effective_from", "approved", "waiting", "changed_by", "updated_at")
    actions = ("approve", "approve_staged", "take_over", "resume_guarded")

    def get_urls(self) -> list[Any]:
        """The policies' pages, and the install reports' charts (``reports_chart``)."""
        return [*install_reports_urls(self, lambda: runtime().clock.now_ms()), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        """The page, with a banner for each release the policy's guard paused."""
        row = ReleasePolicy.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        for mark in paused_marks(row):
            messages.warning(request, paused_text(row, mark))  # type: ignore[arg-type]
        return super().change_view(request, object_id, *args, **kwargs)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The list, with a banner for each guarded rollout paused now."""
        if request.method == "GET":
            warn_paused(request)
        return super().changelist_view(request, extra_context)

    @admin.action(
        description="Resume the guarded rollouts the selected policies paused", permissions=["change"]
    )
    def resume_guarded(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        done: list[str] = []
        now_ms = runtime().clock.now_ms()
        with transaction.atomic(using=router.db_for_write(ReleasePolicy)):
            for policy in queryset.select_for_update():
                marks = policy.marks()
                resumed = paused_marks(policy)
                for mark in resumed:
                    marks[mark.tag] = resume(mark, _counts_now(policy.app_key, mark), now_ms)
                if resumed:
                    policy.set_marks(marks)
                    policy.changed_by = request.user.get_username()
                    policy.save()
                    tags = ", ".join(m.tag for m in resumed)
                    self._log(request, policy, f"Resumed the guarded rollout of {tags}")
                    done += [f"{policy.app_key} {m.tag} on {policy.channel}" for m in resumed]
        said = ", ".join(done) if done else "nothing: no guarded rollout is paused"
        self.message_user(request, f"Resumed {said}. Launchers see it within 2 s.")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*self.fields, "waiting", "changed_by", "updated_at")

    @admin.display(description="waiting now on this host")
    def waiting(self, policy: ReleasePolicy) -> str:
        if policy.pk is None:
            return "-"
        found = _waiting_of(policy)
        if found is None:
            return "unknown: this host's state file can't be read"
        if not found:
            return "none"
        return format_html("<pre>{}</pre>", "\n".join(_wait_line(w) for w in found))

    def save_model(self, request: HttpRequest, obj: ReleasePolicy, form: Any, change: bool) -> None:
        obj.changed_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        """Django's message of what changed, as text, with the reason (as a control's)."""
        structured = super().construct_change_message(request, form, formsets, add)
        text = LogEntry(change_message=json.dumps(structured)).get_change_message() if structured else ""
        return f"{text} Reason: {form.instance.reason}".strip()

    @admin.action(description="Approve the releases the selected policies keep back", permissions=["change"])
    def approve(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        done: list[str] = []
        with transaction.atomic(using=router.db_for_write(ReleasePolicy)):
            for policy in queryset.select_for_update():
                tags = [w.wait.release.tag for w in _waiting_of(policy) or ()]
                for tag in tags:
                    policy.approve(tag)
                if tags:
                    policy.changed_by = request.user.get_username()
                    policy.save()
                    self._log(request, policy, f"Approved {', '.join(tags)}")
                    done += [f"{policy.app_key} {tag} on {policy.channel}" for tag in tags]
        said = ", ".join(done) if done else "nothing: no release waits"
        self.message_user(request, f"Approved {said}. Launchers see it within 2 s.")

    @admin.action(
        description="Approve as a staged rollout (the policy's schedule from now)", permissions=["change"]
    )
    def approve_staged(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._hand_made(request, queryset, staged_from_now=True)

    @admin.action(
        description="Take over the staged or guarded rollouts (to pause, advance, finish or yank)",
        permissions=["change"],
    )
    def take_over(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._hand_made(request, queryset, staged_from_now=False)

    def _hand_made(self, request: HttpRequest, queryset: QuerySet[Any], staged_from_now: bool) -> None:
        """A hand-made rollout for the newest release each selected policy keeps back: from
        now on the policy's schedule, or exactly the policy's own (taking it over)."""
        if not request.user.has_perm("craft_apps.add_releasecontrol"):
            self.message_user(request, "Only users who may add release controls can do this.", level="error")
            return
        made: list[str] = []
        for policy in queryset:
            found = _waiting_of(policy) or []
            if not found:
                continue
            newest = max(found, key=lambda w: datetime_to_ms(w.wait.release.published_at or EPOCH))
            control = _rollout(policy, newest, staged_from_now, runtime().clock.now_ms())
            if control is None:
                continue
            control.changed_by = request.user.get_username()
            try:
                control.full_clean()
            except ValidationError as err:
                self.message_user(request, f"{control}: {' '.join(err.messages)}", level="error")
                continue
            control.save()
            self.log_addition(
                request, control, f"Added with the release policies' action. Reason: {control.reason}"
            )
            made.append(f"{policy.app_key} {control.tag} on {policy.channel}")
        said = ", ".join(made) if made else "nothing"
        self.message_user(request, f"Rollouts made for {said}; edit them in Release controls.")

    def _log(self, request: HttpRequest, policy: ReleasePolicy, what: str) -> None:
        self.log_change(request, policy, f"{what} with the list's action. Reason: {policy.reason}")


def _rollout(
    policy_row: ReleasePolicy, item: WaitingRelease, staged_from_now: bool, now_ms: int
) -> ReleaseControl | None:
    """The hand-made rollout of the waiting release: the policy's schedule from ``now_ms``, or
    the policy's own rollout taken over (None when the policy has no schedule)."""
    if staged_from_now:
        offsets = parse_offsets(policy_row.schedule)
        steps = "\n".join(f"{format_ms(now_ms + o.after_ms)} {o.percentage}" for o in offsets)
        made = ReleaseControl(percentage=0, schedule=steps, reason="Approved as a staged rollout")
    else:
        found = _taken_over(policy_row, item, now_ms)
        if found is None:
            return None
        made = found
    made.app_key, made.action, made.tag = policy_row.app_key, ROLLOUT, item.wait.release.tag
    made.channel = policy_row.channel
    made.reason = f"{made.reason} ({policy_row}). Reason: {policy_row.reason}"[:REASON_MAX]
    return made


def _taken_over(policy_row: ReleasePolicy, item: WaitingRelease, now_ms: int) -> ReleaseControl | None:
    """A staged policy's rollout at exactly its percentages; a guarded one's at the percentage
    its guard serves now, with the schedule's later steps (its health no longer gates them) and
    paused when the guard paused it. None for a policy without a schedule."""
    tag, published = item.wait.release.tag, item.wait.release.published_at
    policy = policy_of(policy_row.to_controls(), policy_row.channel)
    if policy is None or policy.action not in (STAGED, GUARDED) or published is None:
        return None
    rollout = rollout_of(policy, tag, datetime_to_ms(published))
    if policy.action == STAGED:
        steps = format_schedule(rollout.steps)
        return ReleaseControl(percentage=0, schedule=steps, reason="Taken over from the staged policy")
    current = item.wait.percentage or 0
    later = tuple(s for s in rollout.steps if s.at_ms > now_ms and s.percentage > current)
    paused = item.wait.paused
    why = f"Taken over from the guarded policy at {current} %" + (", paused by its guard" if paused else "")
    made = ReleaseControl(percentage=current, schedule=format_schedule(later), reason=why, paused=paused)
    made.paused_at = ms_to_datetime(now_ms) if paused else None
    return made


def _counts_now(app: str, mark: Mark) -> Health:
    """The release's counts now, from which a resumed rollout is judged (those at its pause
    when the reports can't be read)."""
    version = version_text(mark.tag) or mark.tag
    try:
        found = [c for c in release_counts([app]) if c.version == version]
    except ReportsUnavailable:
        found = []
    if not found:
        return Health(mark.base.installs + mark.seen.installs, mark.base.failing + mark.seen.failing)
    return Health(found[0].installs(), found[0].installs(FAILING))
