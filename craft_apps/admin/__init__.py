"""The Django admin of renames, notices, channel settings and release controls (docs/controls.md).

Each ``ModelAdmin`` here validates with the model's ``full_clean`` and previews the JSON
launchers get. ``ReleaseControlAdmin`` needs the model's own permissions, records who changed a
control and why, and warns when the host knows no release of its tag. What the host knows comes
from the endpoint's answer cache (``AnswerCache.snapshot``): no admin page opens the state file
or Redis. Beside them: ``policies`` the release policies' admin, ``reports_chart`` the install
reports' page, drawn by ``chart_svg``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.db import router, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from craft_apps.api.runtime import runtime
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.content.feed import load_scheduled
from craft_apps.content.items import Notices, Visibility
from craft_apps.content.models import (
    Alert,
    Announcement,
    AppChannel,
    AppRename,
    Notice,
    ReleaseControl,
    RepoRename,
)
from craft_apps.controls.actions.registry import named
from craft_apps.controls.form import EDITED_CONTROL_FIELDS, ReleaseControlForm, control_form
from craft_apps.controls.guard_banner import PausedBannerAdmin, warn_paused
from craft_apps.controls.known_tags import known_tags
from craft_apps.controls.rules import newest_first, tag_known, waiting
from craft_apps.kernel.domain import Channel
from craft_apps.kernel.instants import datetime_to_ms


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

    @admin.action(description="Publish the selected items", permissions=["change"])
    def publish(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(published=True)
        self.message_user(request, f"{count} published; served while inside their window.")

    @admin.action(description="Unpublish the selected items", permissions=["change"])
    def unpublish(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(published=False)
        self.message_user(request, f"{count} unpublished; launchers stop receiving them within 2 s.")

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


class AppChannelForm(forms.ModelForm):  # type: ignore[type-arg]
    """The channels as boxes to tick, one per channel an operator turns on app by app."""

    channels = forms.MultipleChoiceField(
        choices=[(c.value, c.value) for c in Channel.chosen_per_app()],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=AppChannel.channels.field.help_text,
    )

    class Meta:
        model = AppChannel
        fields = ("app_key", "channels")


class ServedOn(admin.SimpleListFilter):
    """The apps served on one channel beyond stable (the list is read in Python: a JSON list
    can't be searched the same way on every database)."""

    title = "served on"
    parameter_name = "channel"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(c.value, c.value) for c in Channel.chosen_per_app()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() is None:
            return queryset
        on = [row.pk for row in queryset if self.value() in row.served_channels()]
        filtered: QuerySet[Any] = queryset.filter(pk__in=on)
        return filtered


@admin.register(AppChannel)
class AppChannelAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = AppChannelForm
    fields = ("app_key", "channels", "configured", "updated_at")
    readonly_fields = ("configured", "updated_at")
    list_display = ("app_key", "served_on", "configured", "updated_at")
    list_filter = (ServedOn,)
    search_fields = ("app_key",)

    @admin.display(description="channels beyond stable")
    def served_on(self, item: AppChannel) -> str:
        return ", ".join(item.served_channels()) or "-"

    @admin.display(description="configured app")
    def configured(self, item: AppChannel) -> str:
        if not item.app_key:
            return "-"
        names = {app.key: app.name for app in app_settings.APPS}
        name = names.get(item.app_key.lower())
        return name if name is not None else "no configured app has this key (kept, applied when one has)"

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """Beside Django's own, a channel on and off for the selected apps, per channel
        (``beta_on``, ``beta_off``), on the list only, for a user who may change the rows.
        Django 6.1 names the page it asks for in ``action_location``; earlier versions don't."""
        django_admin: Any = super()  # the stubs don't know action_location yet
        if action_location is None:
            actions: dict[str, Any] = django_admin.get_actions(request)
        else:
            actions = django_admin.get_actions(request, action_location=action_location)
            if action_location.name != "CHANGE_LIST":
                return actions
        if not self.has_change_permission(request):
            return actions  # a user who may only view changes no channel
        for channel in Channel.chosen_per_app():
            for on in (True, False):
                name = f"{channel.value}_{'on' if on else 'off'}"
                description = f"Turn {channel.value} {'on' if on else 'off'} for the selected apps"
                actions[name] = (self._channel_action(channel, on), name, description)
        return actions

    @staticmethod
    def _channel_action(channel: Channel, on: bool) -> Any:
        def act(model_admin: AppChannelAdmin, request: HttpRequest, queryset: QuerySet[Any]) -> None:
            count = set_channel(queryset, channel, on)
            model_admin.message_user(
                request,
                f"{channel.value.capitalize()} {'on' if on else 'off'} for {count}; "
                f"launchers asking for {channel.value} see it within 2 s.",
            )

        return act


def set_channel(queryset: QuerySet[Any], channel: Channel, on: bool) -> int:
    """Turns ``channel`` on or off for every row of ``queryset``, in one transaction; how many."""
    rows = list(queryset)
    with transaction.atomic(using=queryset.db):
        for row in rows:
            names = set(row.served_channels())
            row.channels = sorted(names | {channel.value} if on else names - {channel.value})
            row.save(using=queryset.db)
    return len(rows)


def host_known_tags(request: HttpRequest) -> dict[str, frozenset[str]] | None:
    """The tags this host knows of each app, from the endpoint's answer cache
    (``AnswerCache.snapshot``: the admin opens no file of its own); None, which the page says,
    when this process never could read the state file."""
    snapshot = runtime().answers.snapshot()
    if snapshot.version == 0:
        messages.warning(
            request,
            "This host's state file hasn't been read yet (or holds no release), so the tag wasn't "
            "compared with the releases this host knows: check the tag's spelling on GitHub.",
        )
        return None
    return known_tags(snapshot)


def offered_tags(known: Mapping[str, frozenset[str]]) -> dict[str, list[str]]:
    """Each app's known tags as the form offers them: newest first."""
    return {key: newest_first(tags) for key, tags in known.items()}


# The admin's fields of a release control come from the model: what every control has, then
# the fields only some actions take (a rollout's), then why, who and when. A field the
# operators edit, added to the model, shows up among an action's own.
_WHAT = ("app_key", "action", "tag", "channel")
_WHY = ("reason", "changed_by", "updated_at")
_ACTIONS_OWN = tuple(name for name in EDITED_CONTROL_FIELDS if name not in _WHAT + _WHY)


@admin.register(ReleaseControl)
class ReleaseControlAdmin(PausedBannerAdmin):
    form = ReleaseControlForm
    # Narrow columns, and the reason and who changed it before the wide ones: an operator
    # reads them without scrolling sideways at 1280 px (the reason wraps, shortened).
    list_display = ("app_key", "action", "tag_now", "scope", "percentage_now", "why", "changed")
    list_filter = ("app_key", "action")
    search_fields = ("app_key", "tag", "reason")
    readonly_fields = ("percentage_now", "changed_by", "updated_at", "served_now")
    actions = ("pause", "resume")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """What is served now first (on a control's page), then what, the rollout's own, why."""
        served = [("Served now on this host", {"fields": ("served_now",)})] if obj is not None else []
        return [
            *served,
            (None, {"fields": _WHAT}),
            ("Staged rollout", {"fields": (*_ACTIONS_OWN, "percentage_now")}),
            ("Why", {"fields": _WHY}),
        ]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        # A class of this request's own: the configured apps and the tags this host knows now.
        known = runtime().answers.snapshot()
        return control_form(form, app_settings.APPS, offered_tags(known_tags(known)))

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # The list takes the whole width: without the admin's side menu, the reason and who
        # changed it fit beside the rest at 1280 px, the filters by app and action kept.
        context = {**(extra_context or {}), "is_nav_sidebar_enabled": False}
        if request.method == "GET":
            warn_paused(request)  # a guarded rollout that paused itself, of any app
        return super().changelist_view(request, extra_context=context)

    @admin.display(description="tag", ordering="tag")
    def tag_now(self, control: ReleaseControl) -> str:
        """The tag, and whether it waits for its release on this host (``controls.tag_known``)."""
        snapshot = runtime().answers.snapshot()
        if snapshot.version == 0 or tag_known(control.to_control(), known_tags(snapshot)):
            return control.tag
        return format_html("{}<br><small>waiting for its release</small>", control.tag)

    @admin.display(description="reason", ordering="reason")
    def why(self, control: ReleaseControl) -> str:
        # A long word (a URL) breaks anywhere rather than widen the table.
        return format_html(
            '<span style="overflow-wrap: anywhere" title="{}">{}</span>',
            control.reason,
            shortened(control.reason),
        )

    @admin.display(description="changed", ordering="updated_at")
    def changed(self, control: ReleaseControl) -> str:
        when = timezone.localtime(control.updated_at).strftime("%Y-%m-%d %H:%M")
        return format_html(
            '{}<br><span style="white-space: nowrap">{}</span>', control.changed_by or "-", when
        )

    @admin.display(description="channel")
    def scope(self, control: ReleaseControl) -> str:
        return control.channel or "every channel"

    @admin.display(description="percentage now")
    def percentage_now(self, control: ReleaseControl) -> str:
        if not named(control.action).scheduled:
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
        for channel in Channel:
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
        warn_if_waiting(request, obj)

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
                if not named(control.action).scheduled:
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
        self.message_user(request, f"{verb} {done} rollout(s){note}. Launchers see it within 2 s.")


def with_reason(structured: Any, control: ReleaseControl) -> str:
    """Django's structured change message as the text the history page shows, then the reason."""
    text = LogEntry(change_message=json.dumps(structured)).get_change_message() if structured else ""
    return f"{text} Reason: {control.reason}".strip()


REASON_SHOWN = 120  # characters of the reason the list shows; the whole one on hover


def shortened(text: str) -> str:
    return text if len(text) <= REASON_SHOWN else text[: REASON_SHOWN - 1].rstrip() + "…"


def warn_if_waiting(request: HttpRequest, control: ReleaseControl) -> None:
    """A warning when the saved control's tag is none this host knows a release of: kept, and
    applied the moment it appears; the warning names the tags it knows, so a typo shows."""
    known = host_known_tags(request)
    if known is None:
        return
    for found in waiting([control.to_control()], known):
        messages.warning(request, found.message)


# The release policies' admin lives in its own module; importing it registers it.
import craft_apps.admin.policies  # noqa: E402, F401
