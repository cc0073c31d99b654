"""Every page of the app's admin, for every model it registers and every kind of staff user: the
list, add, change, delete and history pages, an empty add and change form posted, each action
posted on the list, and a deletion confirmed. Each answers without a server error and with the
status that user should get: 403 without the model's permissions, the pages to look at for a
user who may only view (every field as text, no action), everything for a user with the model's
add, change and delete permissions, and for a superuser."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db.models import Model
from django.test import Client, RequestFactory

from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import AppChannel
from craft_apps.content.policy_models import ReleasePolicy
from tests.content.controls_support import control, publish_host
from tests.content.support import alert, announcement, app_rename, repo_rename
from tests.support import apps_setting

pytestmark = pytest.mark.django_db

NONE, VIEW, CHANGE, SUPERUSER = "no permission", "view only", "change", "superuser"
KINDS = (NONE, VIEW, CHANGE, SUPERUSER)
NOT_RUN = "No action selected."


def app_channel() -> AppChannel:
    made: AppChannel = AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    return made


def release_policy() -> ReleasePolicy:
    made: ReleasePolicy = ReleasePolicy.objects.create(
        app_key="photocraft", channel="stable", policy="approval", reason="Brakes first."
    )
    return made


# One row of each model the app registers in the admin (the test below holds the list whole).
ROWS: dict[str, Callable[[], Model]] = {
    "apprename": app_rename,
    "reporename": repo_rename,
    "announcement": announcement,
    "alert": alert,
    "appchannel": app_channel,
    "releasecontrol": lambda: control(action="rollout", percentage=25),
    "releasepolicy": release_policy,
}


@dataclass(frozen=True)
class Page:
    """One request to the admin and the status each kind of user gets."""

    name: str
    method: str
    path: str
    statuses: dict[str, int]
    data: dict[str, str] = field(default_factory=dict)
    action: bool = False


def looks(status_to_view: int) -> dict[str, int]:
    """A page to look at: refused without the model's permissions."""
    return {NONE: 403, VIEW: status_to_view, CHANGE: 200, SUPERUSER: 200}


def edits(allowed: int) -> dict[str, int]:
    """A page that changes something: only for the model's add, change or delete permission."""
    return {NONE: 403, VIEW: 403, CHANGE: allowed, SUPERUSER: allowed}


def action_names(model: type[Model], superuser: Any) -> list[str]:
    """Every action the model's admin offers a superuser on its list."""
    request = RequestFactory().get("/")
    request.user = superuser
    return sorted(admin.site._registry[model].get_actions(request))


def acts(action: str) -> dict[str, int]:
    """An action posted on the list: it runs and goes back to the list (a deletion asks first)
    for a user with the model's permissions; a view-only user is offered none, so the post
    shows the list again and changes nothing."""
    allowed = 200 if action == "delete_selected" else 302
    return {NONE: 403, VIEW: 200, CHANGE: allowed, SUPERUSER: allowed}


def _selected(action: str, pk: int) -> dict[str, str]:
    """The list's form with one row ticked and ``action`` chosen, as the admin posts it."""
    return {"action": action, "_selected_action": str(pk), "index": "0"}


def pages(model: type[Model], pk: int, superuser: Any) -> list[Page]:
    """The model's admin pages, in an order that keeps the row until its deletion, last."""
    base = f"/admin/craft_apps/{model._meta.model_name}"
    actions = [
        Page(f"action {name}", "post", f"{base}/", acts(name), _selected(name, pk), action=True)
        for name in action_names(model, superuser)
    ]
    return [
        Page("list", "get", f"{base}/", looks(200)),
        Page("add", "get", f"{base}/add/", edits(200)),
        Page("change", "get", f"{base}/{pk}/change/", looks(200)),
        Page("history", "get", f"{base}/{pk}/history/", looks(200)),
        Page("delete", "get", f"{base}/{pk}/delete/", edits(200)),
        Page("add, posted empty", "post", f"{base}/add/", edits(200)),
        Page("change, posted empty", "post", f"{base}/{pk}/change/", edits(200)),
        *actions,
        Page("delete, confirmed", "post", f"{base}/{pk}/delete/", edits(302), {"post": "yes"}),
    ]


@pytest.fixture
def host(state_dir: Path, settings, install_runtime) -> Path:
    """Two configured apps, photocraft fetched with its release list, as the controls' tests."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    publish_host(state_dir)
    return state_dir


def staff(django_user_model: Any, kind: str, model: type[Model]) -> Any:
    """A staff user of ``kind``: none, the view or every permission of ``model``, or superuser."""
    user = django_user_model.objects.create(
        username=kind.replace(" ", "-"), is_staff=True, is_superuser=kind == SUPERUSER
    )
    names = {NONE: [], VIEW: ["view"], CHANGE: ["view", "add", "change", "delete"]}.get(kind, [])
    codenames = [f"{name}_{model._meta.model_name}" for name in names]
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="craft_apps", codename__in=codenames)
    )
    return user


def outcome(client: Client, kind: str, page: Page) -> str | None:
    """What is wrong with the page's answer to a user of ``kind``, or None."""
    response = getattr(client, page.method)(page.path, page.data)
    error = getattr(response, "exc_info", None)
    if error is not None:
        return f"{page.name}: {response.status_code} with {error[1]!r}"
    expected = page.statuses[kind]
    said = [str(m) for m in get_messages(response.wsgi_request)]
    if response.status_code != expected:
        return f"{page.name}: {response.status_code}, not {expected} (messages: {said})"
    if page.action and expected == 302 and (not said or NOT_RUN in said):
        return f"{page.name}: the action didn't run ({said})"
    return None


def test_every_model_the_app_registers_is_walked():
    registered = {m._meta.model_name for m in admin.site._registry if m._meta.app_label == "craft_apps"}
    assert registered == set(ROWS)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("model_name", sorted(ROWS))
def test_every_page_answers_each_kind_of_user_without_a_server_error(
    model_name: str, kind: str, host: Path, django_user_model: Any
):
    row = ROWS[model_name]()
    model = type(row)
    superuser = django_user_model.objects.create(username="root", is_staff=True, is_superuser=True)
    client = Client(raise_request_exception=False)
    client.force_login(staff(django_user_model, kind, model))
    wrong = [found for page in pages(model, row.pk, superuser) if (found := outcome(client, kind, page))]
    assert not wrong, f"{model_name} for a {kind} user:\n" + "\n".join(wrong)
    assert model._default_manager.filter(pk=row.pk).exists() == (kind in (NONE, VIEW))


# Values a view-only user reads as text on a row's page (the rows of ``ROWS``).
SHOWN = {
    "releasecontrol": ["photocraft", "rollout", "v0.5.0", "25"],
    "releasepolicy": ["photocraft", "stable", "approval", "Brakes first."],
    "appchannel": ["photocraft"],
    "alert": ["PhotoCraft 0.5.0 may lose layers", "Update to 0.5.1 before saving."],
}


@pytest.mark.parametrize("model_name", sorted(ROWS))
def test_a_view_only_user_sees_every_value_as_text_and_no_action(
    model_name: str, host: Path, django_user_model: Any
):
    row = ROWS[model_name]()
    model = type(row)
    client = Client()
    client.force_login(staff(django_user_model, VIEW, model))
    base = f"/admin/craft_apps/{model_name}"
    page = html.unescape(client.get(f"{base}/{row.pk}/change/").content.decode())
    for value in SHOWN.get(model_name, []):
        assert f'<div class="readonly">{value}</div>' in page
    edited = [f.name for f in model._meta.concrete_fields if f.editable]
    assert not [name for name in [*edited, "_save"] if f'name="{name}"' in page]
    assert 'name="action"' not in client.get(f"{base}/").content.decode()
