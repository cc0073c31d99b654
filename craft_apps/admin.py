"""The Django admin for renames and notices: what is served now, and exactly what launchers get.

Each list shows whether an item is served now (the window rule in ``notices.items``), filters
by it, and searches the texts. An item's page previews the JSON launchers receive with that
item; each list previews everything served now. Validation is the model's (``full_clean``),
whose messages say what to fix. Publishing or unpublishing several items at once is an action.

Beside them, each app's channel setting (``AppChannel``): whether its beta channel is on, and
whether the key names a configured app (a setting for a key no app has is kept, and applied
when one has it). Turning beta on or off for several apps at once is an action.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.contrib import admin
from django.db import router
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.conf import app_settings
from craft_apps.notices.feed import load_scheduled
from craft_apps.notices.items import Notices, Visibility
from craft_apps.notices.models import Alert, Announcement, AppChannel, AppRename, Notice, RepoRename


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
