"""The banner of a guarded rollout that paused itself: on the release policy's page and list,
and on the release controls' list and the page of a control of that app (the pause lives on
the policy's row, ``ReleasePolicy.guard``); ``PausedBannerAdmin`` puts it on a change page.
See docs/controls.md#guarded-rollouts.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import Mark
from craft_apps.controls.rules import GUARDED
from craft_apps.kernel.instants import format_ms


def paused_marks(row: ReleasePolicy | None) -> list[Mark]:
    """The releases the policy's guard paused (none for another policy)."""
    return [] if row is None or row.policy != GUARDED else [m for m in row.marks().values() if m.paused]


def paused_text(row: ReleasePolicy, mark: Mark) -> str:
    return (
        f"{row.app_key} {mark.tag} on {row.channel}: the guarded rollout paused itself at "
        f"{mark.percentage} % on {format_ms(mark.at_ms)}: {mark.seen.text()}, "
        f"over {float(row.max_failing_percent):g} %. "
        "Resume it with the release policies' action, or yank it in Release controls."
    )


def warn_paused(request: HttpRequest, app_key: str | None = None) -> None:
    """A warning on the page for each paused guarded rollout (of ``app_key``, or of every app)."""
    rows = ReleasePolicy.objects.filter(policy=GUARDED).order_by("app_key", "channel")
    for row in rows if app_key is None else rows.filter(app_key=app_key):
        for mark in paused_marks(row):
            messages.warning(request, paused_text(row, mark))


class PausedBannerAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """A model admin whose change page warns of each paused guarded rollout of its row's app
    (``app_key``)."""

    def change_view(self, request: HttpRequest, object_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        found = self.model.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        if found is not None and request.method == "GET":
            warn_paused(request, found.app_key)
        return super().change_view(request, object_id, *args, **kwargs)
