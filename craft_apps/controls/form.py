"""The admin's form of a release control, made for an incident (docs/controls.md).

The app is chosen from the configured apps (a row with another key keeps it); the tag field
suggests the releases the host knows of that app, and any tag can still be typed. What the host
knows is handed in by the admin, from what the endpoint's look left: the form reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms

from craft_apps.content.models import ReleaseControl
from craft_apps.kernel.domain import AppSpec

# The fields the operators edit, from the model: a field added to it shows up in the form.
EDITED_CONTROL_FIELDS = tuple(
    f.name for f in ReleaseControl._meta.concrete_fields if f.editable and not f.primary_key
)
DATALIST_PREFIX = "craft-apps-tags-"


def app_choices(apps: Sequence[AppSpec], current: str | None) -> list[tuple[str, str]]:
    """The select's options: an empty one, each configured app (its key and name), and
    ``current`` (the row's key) when no configured app has it."""
    choices = [("", "---------"), *((app.key, f"{app.key} ({app.name})") for app in apps)]
    if current and current not in {app.key for app in apps}:
        choices.append((current, f"{current} (no configured app has this key: kept as it is)"))
    return choices


def set_widget(form: forms.BaseForm, name: str, widget: forms.Widget) -> None:
    """Give the form's field ``name`` this widget, if the form has the field: a user who may
    only view gets a form without fields (the admin shows each value as text)."""
    if name in form.fields:
        form.fields[name].widget = widget


class TagInput(forms.TextInput):
    """A text input whose suggestions are the tags the host knows of the chosen app, newest
    first (``known``: app key → tags); the page's app select switches the list."""

    template_name = "craft_apps/admin/tag_input.html"

    def __init__(self, known: Mapping[str, Sequence[str]], app: str | None) -> None:
        attrs = {"autocomplete": "off", "spellcheck": "false"}
        if app:
            attrs["list"] = DATALIST_PREFIX + app
        super().__init__(attrs)
        self.known = known

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["widget"]["known"] = [
            (DATALIST_PREFIX + key, tags) for key, tags in sorted(self.known.items())
        ]
        context["widget"]["prefix"] = DATALIST_PREFIX
        return context


class ReleaseControlForm(forms.ModelForm):  # type: ignore[type-arg]
    """The model's fields, the app key as a select and the tag with its suggestions. The app
    key stays a text field underneath: the model's validation is the one rule."""

    apps: tuple[AppSpec, ...] = ()  # set per request by ``control_form``
    known: Mapping[str, Sequence[str]] = {}  # as ``apps``

    class Meta:
        model = ReleaseControl
        fields = EDITED_CONTROL_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.instance.app_key if self.instance.pk is not None else None
        chosen = self.data.get("app_key") if self.is_bound else (current or self.initial.get("app_key"))
        set_widget(self, "app_key", forms.Select(choices=app_choices(self.apps, current)))
        set_widget(self, "tag", TagInput(self.known, str(chosen) if chosen else None))


def control_form(
    base: type[forms.ModelForm[Any]], apps: tuple[AppSpec, ...], known: Mapping[str, Sequence[str]]
) -> type[forms.ModelForm[Any]]:
    """``base`` (the admin's ``ReleaseControlForm``) with the configured apps and the tags
    the host knows of each, for one request."""
    return type(base.__name__, (base,), {"apps": apps, "known": known})
