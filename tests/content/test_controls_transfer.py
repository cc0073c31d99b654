"""`manage.py craft_apps_notices export|import` with the release controls: every field with who
and when, the admin's log as a read-only audit, an export imported again changing nothing, the
file's controls checked as one set (not against the rows it replaces) and against the tags this
host's state file knows, all or nothing, every problem one line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from craft_apps.content.feed import read_version
from craft_apps.content.models import ReleaseControl
from craft_apps.content.transfer import export_notices
from craft_apps.host.schema import DB_FILENAME
from tests.content.controls_support import BAD_TAGS, publish_host
from tests.content.controls_support import control as support_control
from tests.support import apps_setting

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(state_dir: Path, settings) -> Path:
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    publish_host(state_dir)
    return state_dir


@pytest.fixture
def admin_client(client: Client, django_user_model) -> Client:
    client.force_login(
        django_user_model.objects.create(username="operator", is_staff=True, is_superuser=True)
    )
    return client


def control(**fields: object) -> ReleaseControl:
    return support_control(cleaned=True, **{"changed_by": "operator", **fields})


def some_controls() -> None:
    control()
    control(action="rollout", tag="v0.5.0", percentage=10, schedule="2026-12-02T09:00Z 50", paused=True)
    control(action="hold", tag="v0.4.0", channel="beta", reason="Beta testers wait for 0.5.1.")


def imported(document: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "import.json"
    path.write_text(json.dumps(document))
    out = io.StringIO()
    call_command("craft_apps_notices", "import", str(path), stdout=out, stderr=out)
    return out.getvalue()


def problems_of(document: dict[str, Any], tmp_path: Path) -> list[str]:
    path = tmp_path / "import.json"
    path.write_text(json.dumps(document))
    err = io.StringIO()
    before = (export_notices(), read_version("default"))
    with pytest.raises(CommandError, match="Nothing imported"):
        call_command("craft_apps_notices", "import", str(path), stdout=io.StringIO(), stderr=err)
    assert (export_notices(), read_version("default")) == before, "nothing written"
    return err.getvalue().splitlines()


def row(**fields: object) -> dict[str, object]:
    return {
        "id": 1,
        "app_key": "photocraft",
        "action": "hold",
        "tag": "v0.4.0",
        "channel": None,
        "percentage": None,
        "schedule": "",
        "paused": False,
        "paused_at": None,
        "reason": "Wait for 0.5.1.",
        "changed_by": "staging-operator",
        "updated_at": "2026-11-30T10:00:00Z",
        **fields,
    }


def document(*rows: dict[str, object]) -> dict[str, Any]:
    base = export_notices()
    return {**base, "release_controls": list(rows)}


def test_the_export_carries_each_control_with_who_when_and_the_admins_log(host: Path, admin_client: Client):
    response = admin_client.post(
        "/admin/craft_apps/releasecontrol/add/",
        {
            "app_key": "photocraft",
            "action": "yank",
            "tag": "v0.5.0",
            "channel": "",
            "reason": "Loses layers.",
        },
    )
    assert response.status_code == 302, response.content.decode()
    saved = ReleaseControl.objects.get()
    exported = export_notices()
    assert exported["release_controls"] == [
        {
            "id": saved.pk,
            "app_key": "photocraft",
            "action": "yank",
            "tag": "v0.5.0",
            "channel": None,
            "percentage": None,
            "schedule": "",
            "paused": False,
            "paused_at": None,
            "reason": "Loses layers.",
            "changed_by": "operator",
            "updated_at": saved.updated_at.isoformat().replace("+00:00", "Z"),
        }
    ]
    assert exported["release_controls"][0]["updated_at"].endswith("Z")
    [entry] = exported["release_controls_audit"]
    assert {k: entry[k] for k in ("user", "action", "id", "control", "message")} == {
        "user": "operator",
        "action": "added",
        "id": saved.pk,
        "control": "photocraft: yank v0.5.0",
        "message": "Added. Reason: Loses layers.",
    }
    assert entry["when"].endswith("Z")


def test_an_export_imported_again_changes_nothing(host: Path, tmp_path: Path):
    some_controls()
    exported = export_notices()
    version = read_version("default")
    out = imported(exported, tmp_path)
    assert "release_controls: 0 added, 0 changed, 0 deleted, 3 unchanged" in out
    assert read_version("default") == version, "not even the version marker moved"
    assert export_notices() == exported


def test_a_good_import_replaces_the_controls_checked_as_the_files_set(host: Path, tmp_path: Path):
    # A yank of v0.5.0, which the file drops: its hold at v0.5.0 is no contradiction. Its id is
    # named, apart from the file's: PostgreSQL's sequence doesn't go back when a test rolls back.
    control(id=1)
    paused_at = "2026-11-29T08:00:00Z"
    out = imported(
        document(
            row(id=7, tag="v0.5.0"),
            row(
                id=8,
                action="rollout",
                tag="v0.5.0",
                channel="beta",
                percentage=5,
                paused=True,
                paused_at=paused_at,
            ),
        ),
        tmp_path,
    )
    assert "release_controls: 2 added, 0 changed, 1 deleted, 0 unchanged" in out
    hold, rollout = ReleaseControl.objects.order_by("pk")
    assert (hold.pk, hold.action, hold.tag, hold.changed_by) == (7, "hold", "v0.5.0", "staging-operator")
    assert rollout.paused_at is not None and rollout.paused_at.isoformat() == "2026-11-29T08:00:00+00:00"


def test_an_older_export_without_controls_leaves_them_as_they_are(host: Path, tmp_path: Path):
    some_controls()
    before = export_notices()["release_controls"]
    older = {
        k: v for k, v in export_notices().items() if k not in ("release_controls", "release_controls_audit")
    }
    imported(older, tmp_path)
    assert export_notices()["release_controls"] == before


def test_a_hold_on_a_tag_the_same_file_yanks_is_refused(host: Path, tmp_path: Path):
    some_controls()
    problems = problems_of(
        document(row(id=1, action="yank", tag="v0.5.0"), row(id=2, tag="v0.5.0")), tmp_path
    )
    assert problems == [
        "release_controls[1] (id 2) (photocraft: hold v0.5.0): tag: v0.5.0 of photocraft is yanked: "
        "hold at another tag, or delete the yank first."
    ]


def test_every_problem_is_one_line_and_nothing_is_written(host: Path, tmp_path: Path):
    some_controls()
    problems = problems_of(
        document(
            row(id=1, action="rollout", tag="v0.5.0", percentage=150),
            row(id=2, action="rollout", tag="v0.5.0", percentage=-5, channel="stable"),
            row(id=3, tag="v9.9.9"),
            row(id=4, action="yank", channel="stable"),
            row(id=5, action="rollout", percentage=5, schedule="2026-12-02T09:00Z 50\n2026-12-03T09:00Z 25"),
            row(id=6, app_key="artcraft-launcher", tag="v0.0.1"),  # its list not fetched: kept
        ),
        tmp_path,
    )
    assert problems == [
        "release_controls[0] (id 1): percentage: Give a percentage from 0 to 100, not 150.",
        "release_controls[1] (id 2): percentage: Give a percentage from 0 to 100, not -5.",
        "release_controls[3] (id 4): channel: A yank applies on every channel: leave the channel empty.",
        "release_controls[4] (id 5): schedule: Line 2: the percentage goes back from 50 to 25; a schedule "
        "only goes up (pause the rollout to stop it).",
    ], "a tag the host knows no release of is no problem: a warning"


def test_an_unreadable_state_file_skips_the_tag_check_and_says_so(host: Path, tmp_path: Path):
    (host / DB_FILENAME).write_bytes(b"not a database" * 100)
    path = tmp_path / "import.json"
    path.write_text(json.dumps(document(row(tag="v9.9.9"))))
    err = io.StringIO()
    call_command("craft_apps_notices", "import", str(path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().startswith("The release controls' tags were not checked: ")
    assert ReleaseControl.objects.get().tag == "v9.9.9"


def test_a_tag_not_published_yet_is_imported_with_a_warning_naming_the_tags_the_host_knows(
    host: Path, tmp_path: Path
):
    """For every app (photocraft has a release list, artcraft-launcher only its latest): the
    controls are written, and the report has one warning line for each waiting one."""
    said = imported(
        document(
            row(id=1, action="rollout", tag="v0.6.1", percentage=25),
            row(id=2, app_key="artcraft-launcher", tag="v1.0.1"),
            row(id=3, tag="v0.4.0"),
        ),
        tmp_path,
    )
    assert "release_controls: 3 added" in said
    warnings = [line for line in said.splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        "Warning: release_controls[0] (id 1): photocraft has no release tagged v0.6.1 that this host "
        "knows (it knows v0.5.0, v0.4.0): the control is kept, and applied the moment the release "
        "appears. Check the tag's spelling if it is a typo.",
        "Warning: release_controls[1] (id 2): artcraft-launcher has no release tagged v1.0.1 that this "
        "host knows (it knows v1.0.0): the control is kept, and applied the moment the release "
        "appears. Did you mean v1.0.0?",
    ]
    assert sorted(ReleaseControl.objects.values_list("tag", flat=True)) == ["v0.4.0", "v0.6.1", "v1.0.1"]


def test_a_control_whose_release_is_gone_imports_again_unchanged(host: Path, tmp_path: Path):
    control(action="hold", tag="v0.3.0")  # its release deleted on GitHub since
    exported = export_notices()
    again = imported(exported, tmp_path)
    assert "0 added, 0 changed, 0 deleted, 1 unchanged" in again
    assert "photocraft has no release tagged v0.3.0" in again, "still said: it waits"
    exported["release_controls"][0]["reason"] = "Still."
    assert "0 added, 1 changed, 0 deleted, 0 unchanged" in imported(exported, tmp_path)


def test_a_value_the_database_cant_store_is_refused_in_any_field(host: Path, tmp_path: Path):
    problems = problems_of(
        document(row(id=1, changed_by="op\x00erator"), row(id=2, tag="v0.5.0", reason="\ud800")), tmp_path
    )
    assert [problem.split(": ")[1] for problem in problems] == ["changed_by", "reason"], problems


@pytest.mark.parametrize("tag", BAD_TAGS)
def test_a_tag_git_refuses_is_refused_as_the_admin_refuses_it(host: Path, tmp_path: Path, tag: str):
    some_controls()
    # artcraft-launcher: the host has no list of its tags, so only the tag rule can refuse.
    [problem] = problems_of(
        document(row(id=1, app_key="artcraft-launcher", action="yank", tag=tag)), tmp_path
    )
    assert problem.startswith(f"release_controls[0] (id 1): tag: {BAD_TAGS[tag]}"), problem
    assert problem.isprintable()


def rollout(**fields: object) -> dict[str, object]:
    return row(**{"id": 1, "action": "rollout", "tag": "v0.5.0", "percentage": 5, **fields})


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"percentage": 12.7}, "percentage: Write a whole number, not 12.7."),
        ({"percentage": True}, "percentage: Write a whole number, not true."),
        ({"percentage": "12"}, "percentage: Write a whole number, not '12'."),
        ({"percentage": 12.0}, "percentage: Write a whole number, not 12.0."),
        ({"paused": "yes"}, "paused: Write true or false, not 'yes'."),
        ({"paused": 1}, "paused: Write true or false, not 1."),
        ({"tag": 5}, "tag: Write a text, not 5."),
        ({"channel": ["beta"]}, "channel: Write a text, not a list."),
        ({"reason": {"why": "x"}}, "reason: Write a text, not an object."),
        ({"changed_by": False}, "changed_by: Write a text, not false."),
        ({"schedule": 50}, "schedule: Write a text, not 50."),
        ({"reason": "  \n "}, "reason: This field cannot be blank."),
        ({"updated_at": 5}, "updated_at: a JSON number is not an instant with its zone"),
        ({"paused_at": True, "paused": True}, "paused_at: a JSON boolean is not an instant with its zone"),
        (
            {"paused": True, "paused_at": "2999-01-01T00:00:00Z"},
            "paused_at: 2999-01-01T00:00:00Z is later than now (",
        ),
    ],
    ids=lambda value: None if isinstance(value, str) else ascii(value),
)
def test_a_value_json_types_otherwise_than_the_admin_is_refused_and_nothing_written(
    host: Path, tmp_path: Path, fields: dict[str, object], line: str
):
    """JSON's types, not Django's conversion: 12.7 and true were stored as 12 and 1, and a pause
    in the future was kept, so the paused rollout followed its schedule until then."""
    some_controls()
    [problem] = problems_of(document(rollout(**fields)), tmp_path)
    assert problem.startswith(f"release_controls[0] (id 1): {line}"), problem


def test_a_pause_in_the_past_is_kept_and_one_left_empty_starts_at_the_import(host: Path, tmp_path: Path):
    imported(document(rollout(paused=True, paused_at=None)), tmp_path)
    paused = ReleaseControl.objects.get()
    assert paused.paused_at is not None and paused.paused_at <= timezone.now()
    exported = export_notices()
    assert "1 unchanged" in imported(exported, tmp_path), "imported again, the pause stays as it was"
