"""The Django admin for renames and notices: what is served now, and exactly what launchers get.

Each list shows whether an item is served now (the window rule in ``notices.items``), filters
by it, and searches the texts. An item's page previews the JSON launchers receive with that
item; each list previews everything served now. Validation is the model's (``full_clean``),
whose messages say what to fix. Publishing or unpublishing several items at once is an action.

Beside them, each app's channel setting (``AppChannel``): whether its beta channel is on, and
whether the key names a configured app (a setting for a key no app has is kept, and applied
when one has it). Turning beta on or off for several apps at once is an action.

And the release controls (``ReleaseControl``: hold, yank, staged rollout), which only users
with the model's own permissions (``craft_apps.view_releasecontrol``, ``add_``, ``change_``,
``delete_``) see or change, staff or not. The list shows each rollout's percentage now; the
form's validation is the model's (``controls.problems`` against every other control), plus
the check that the tag is one this host's state file knows of the app (``api.controls.known_tags``;
skipped, with a warning, when the file can't be read). A save records who (``changed_by``), and
the admin's log entry of it carries the reason; a control's page shows what each channel serves
for its app now on this host. Pausing or resuming several rollouts at once is an action: it
keeps each one's reason, and its log entry says so.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.db import router, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from craft_apps.api.channels import CHANNELS
from craft_apps.api.controls import known_tags
from craft_apps.api.runtime import runtime
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.controls import ROLLOUT
from craft_apps.host.store import StateUnavailable
from craft_apps.instants import datetime_to_ms
from craft_apps.notices.feed import load_scheduled
from craft_apps.notices.items import Notices, Visibility
from craft_apps.notices.models import (
    Alert,
    Announcement,
    AppChannel,
    AppRename,
    Notice,
    ReleaseControl,
    RepoRename,
)


def launcher_json(notices: Notices) -> str:
    """The answer's renames and notices exactly as the endpoint encodes them, indented."""
    fields = GetCraftAppsReleaseInfoResponseSerializer().fields
    contract = notices.contract()
    data = {name: fields[name].to_representation(value) for name, value in contract.items()}
    return json.dumps(data, ensure_ascii=False, indent=2)


def describe_visibility(item: Notice) -> str:
    now = timezone.now()
    window = item.window()
    state = window.visibility(now)
    change = window.next_change(now)
    if change is None:
        return state.value
    verb = "until" if state is Visibility.SERVED else "from"
    return f"{state.value} ({verb} {timezone.localtime(change):%Y-%m-%d %H:%M %Z})"


class VisibilityFilter(admin.SimpleListFilter):
    title = "served to launchers"
    parameter_name = "visibility"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(v.name.lower(), v.value) for v in Visibility]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() is None:
            return queryset
        wanted = Visibility[str(self.value()).upper()]
        now = timezone.now()
        # The window rule is Python's (one rule for the endpoint and here); the tables are small.
        visible: QuerySet[Any, Any] = queryset.filter(
            pk__in=[i.pk for i in queryset if i.window().visibility(now) is wanted]
        )
        return visible


class NoticeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    contract_fields: tuple[str, ...] = ()
    list_filter = (VisibilityFilter, "published")
    readonly_fields = ("served", "launcher_preview")
    actions = ("publish", "unpublish")
    list_per_page = 50

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (None, {"fields": self.contract_fields}),
            ("Publishing", {"fields": ("published", "visible_from", "visible_until", "served")}),
            ("What launchers receive", {"fields": ("launcher_preview",)}),
        ]

    @admin.display(description="served to launchers")
    def served(self, item: Notice) -> str:
        return describe_visibility(item)

    @admin.display(description="JSON")
    def launcher_preview(self, item: Notice) -> str:
        if item.pk is None:
            return "Save to see the JSON launchers receive with this item."
        only_this = Notices(**{type(item).kind: (item.to_item(),)})
        note = "" if item.window().visibility(timezone.now()) is Visibility.SERVED else " (once served)"
        return format_html(
            "<p>The answer's renames and notices with only this item{}:</p><pre>{}</pre>",
            note,
            launcher_json(only_this),
        )

    @admin.action(description="Publish the selected items")
    def publish(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(published=True)
        self.message_user(request, f"{count} published; served while inside their window.")

    @admin.action(description="Unpublish the selected items")
    def unpublish(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(published=False)
        self.message_user(request, f"{count} unpublished; launchers stop receiving them within a second.")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        kind = cast(type[Notice], self.model).kind
        now = timezone.now()
        served = load_scheduled(router.db_for_read(self.model), now).served(now)
        own = Notices(**{kind: getattr(served, kind)})
        context = {
            **(extra_context or {}),
            "launcher_preview": launcher_json(own),
            "launcher_preview_count": len(own),
        }
        return super().changelist_view(request, extra_context=context)


@admin.register(AppRename)
class AppRenameAdmin(NoticeAdmin):
    contract_fields = ("old_name", "new_name", "description", "renamed_at")
    list_display = ("old_name", "new_name", "served", "visible_from", "visible_until", "renamed_at")
    search_fields = ("old_name", "new_name", "description")


@admin.register(RepoRename)
class RepoRenameAdmin(NoticeAdmin):
    contract_fields = ("old_name", "new_name", "renamed_at")
    list_display = ("old_name", "new_name", "served", "visible_from", "visible_until", "renamed_at")
    search_fields = ("old_name", "new_name")


@admin.register(Announcement)
class AnnouncementAdmin(NoticeAdmin):
    contract_fields = ("title", "body", "created_at")
    list_display = ("title", "served", "visible_from", "visible_until", "created_at")
    search_fields = ("title", "body")


@admin.register(Alert)
class AlertAdmin(NoticeAdmin):
    contract_fields = ("title", "body", "maybe_web_link", "created_at")
    list_display = ("title", "maybe_web_link", "served", "visible_from", "visible_until", "created_at")
    search_fields = ("title", "body", "maybe_web_link")


@admin.register(AppChannel)
class AppChannelAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    fields = ("app_key", "beta", "configured", "updated_at")
    readonly_fields = ("configured", "updated_at")
    list_display = ("app_key", "beta", "configured", "updated_at")
    list_filter = ("beta",)
    search_fields = ("app_key",)
    actions = ("beta_on", "beta_off")

    @admin.display(description="configured app")
    def configured(self, item: AppChannel) -> str:
        if not item.app_key:
            return "-"
        names = {app.key: app.name for app in app_settings.APPS}
        name = names.get(item.app_key.lower())
        return name if name is not None else "no configured app has this key (kept, applied when one has)"

    @admin.action(description="Turn beta on for the selected apps")
    def beta_on(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(beta=True, updated_at=timezone.now())
        self.message_user(request, f"Beta on for {count}; launchers asking for beta see it within a second.")

    @admin.action(description="Turn beta off for the selected apps")
    def beta_off(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(beta=False, updated_at=timezone.now())
        self.message_user(request, f"Beta off for {count}; launchers asking for beta see it within a second.")


def host_known_tags(request: HttpRequest) -> dict[str, frozenset[str]] | None:
    """The tags this host's state file knows of each app it fetched, or None (the tag check
    skipped) when the file can't be read, which the page then says."""
    try:
        snapshot = runtime().state_store().read()
    except StateUnavailable as err:
        messages.warning(
            request,
            f"The tag wasn't checked against the releases this host knows: {err}. "
            "Check the tag's spelling on GitHub.",
        )
        return None
    return known_tags(snapshot)


class ReleaseControlForm(forms.ModelForm):  # type: ignore[type-arg]
    """Sets the tags to check against on the control before the model's validation runs
    (``_post_clean`` runs ``full_clean`` after ``clean``)."""

    request: HttpRequest | None = None  # set per request by ``ReleaseControlAdmin.get_form``

    class Meta:
        model = ReleaseControl
        fields = ("app_key", "action", "tag", "channel", "percentage", "schedule", "paused", "reason")

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        # A tag typed now is checked; one the control already had isn't (a hold whose release
        # was since deleted on GitHub still means something, and its reason stays editable).
        typed = self.instance.pk is None or {"app_key", "tag"} & set(self.changed_data)
        if self.request is not None and typed:
            self.instance.known_tags = host_known_tags(self.request)
        return cleaned


@admin.register(ReleaseControl)
class ReleaseControlAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = ReleaseControlForm
    list_display = (
        "app_key",
        "action",
        "tag",
        "scope",
        "percentage_now",
        "paused",
        "changed_by",
        "updated_at",
        "reason",
    )
    list_filter = ("app_key", "action")
    search_fields = ("app_key", "tag", "reason")
    readonly_fields = ("percentage_now", "changed_by", "updated_at", "served_now")
    fieldsets = (
        (None, {"fields": ("app_key", "action", "tag", "channel")}),
        ("Staged rollout", {"fields": ("percentage", "schedule", "paused", "percentage_now")}),
        ("Why", {"fields": ("reason", "changed_by", "updated_at")}),
        ("Served now on this host", {"fields": ("served_now",)}),
    )
    actions = ("pause", "resume")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        # A class of this request's own: the form checks the tags this host knows when posted.
        return type(form.__name__, (form,), {"request": request})

    @admin.display(description="channel")
    def scope(self, control: ReleaseControl) -> str:
        return control.channel or "every channel"

    @admin.display(description="percentage now")
    def percentage_now(self, control: ReleaseControl) -> str:
        if control.action != ROLLOUT:
            return "-"
        percentage = control.to_control().percentage_at(datetime_to_ms(timezone.now()))
        return f"{percentage} %" + (" (paused)" if control.paused else "")

    @admin.display(description="served now on this host")
    def served_now(self, control: ReleaseControl) -> str:
        """What each channel's answer lists for the app now, as this process serves it (the
        controls saved apply within about a second)."""
        if not control.app_key:
            return "-"
        if control.app_key not in {app.key for app in app_settings.APPS}:
            return "No configured app has this key: the control is kept, applied when one has."
        lines = []
        for channel in CHANNELS:
            listed = runtime().answers.answer(channel).release_info.apps.get(control.app_key)
            if listed is None or listed.app_last_fetched is None:
                lines.append(f"{channel}: not fetched yet on this host")
                continue
            latest = listed.latest_release.tag if listed.latest_release is not None else "no release"
            rollout = (
                ""
                if listed.rollout is None
                else f"; rollout of {listed.rollout.release.tag} to {listed.rollout.percentage} %"
            )
            lines.append(f"{channel}: latest_release {latest}{rollout}")
        return format_html("<pre>{}</pre>", "\n".join(lines))

    def save_model(self, request: HttpRequest, obj: ReleaseControl, form: Any, change: bool) -> None:
        obj.changed_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        """Django's message of what changed, as text, with the reason: the admin's log keeps
        why beside who and when."""
        structured = super().construct_change_message(request, form, formsets, add)
        return with_reason(structured, form.instance)

    @admin.action(description="Pause the selected rollouts", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._set_paused(request, queryset, paused=True)

    @admin.action(description="Resume the selected rollouts", permissions=["change"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self._set_paused(request, queryset, paused=False)

    def _set_paused(self, request: HttpRequest, queryset: QuerySet[Any], paused: bool) -> None:
        """Each rollout saved on its own (``paused_at`` follows ``paused``), keeping its reason,
        with a log entry of its own; holds and yanks have no pause and are left as they are."""
        verb = "Paused" if paused else "Resumed"
        done = skipped = 0
        with transaction.atomic(using=router.db_for_write(ReleaseControl)):
            for control in queryset.select_for_update():
                if control.action != ROLLOUT:
                    skipped += 1
                    continue
                if control.paused == paused:
                    continue
                control.paused = paused
                control.changed_by = request.user.get_username()
                control.save()
                message = f"{verb} with the list's action (the reason is the control's own). "
                self.log_change(request, control, message + f"Reason: {control.reason}")
                done += 1
        note = f"; {skipped} not a rollout, left as it was" if skipped else ""
        self.message_user(request, f"{verb} {done} rollout(s){note}. Launchers see it within a second.")


def with_reason(structured: Any, control: ReleaseControl) -> str:
    """Django's structured change message as the text the history page shows, then the reason."""
    text = LogEntry(change_message=json.dumps(structured)).get_change_message() if structured else ""
    return f"{text} Reason: {control.reason}".strip()
