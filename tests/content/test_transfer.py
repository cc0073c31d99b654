"""`manage.py craft_apps_notices export|import`: every item as JSON, import validated like the
admin, all or nothing, and an export imported again changing nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from craft_apps.content.feed import read_version
from craft_apps.content.models import Alert, Announcement, AppRename, RepoRename
from craft_apps.content.transfer import export_notices
from tests.content.support import alert, announcement, app_rename, repo_rename

pytestmark = pytest.mark.django_db


def some_items() -> None:
    app_rename()
    repo_rename(published=False)
    announcement(visible_until=None)
    alert(maybe_web_link="")
    alert(title="Second", visible_until=None)


def export(tmp_path: Path) -> Path:
    path = tmp_path / "notices.json"
    call_command("craft_apps_notices", "export", str(path))
    return path


def run_import(source: str, stdin: str | None = None, monkeypatch=None) -> str:
    out = io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("craft_apps_notices", "import", source, stdout=out, stderr=out)
    return out.getvalue()


def test_the_export_lists_every_item_with_its_id(tmp_path: Path):
    some_items()
    document = json.loads(export(tmp_path).read_text())
    assert document["format"] == "craft_apps_notices" and document["version"] == 1
    assert [len(document[k]) for k in ("app_renames", "repo_renames", "announcements", "alerts")] == [
        1,
        1,
        1,
        2,
    ]
    assert document["app_renames"][0] == {
        "id": AppRename.objects.get().pk,
        "published": True,
        "visible_from": "2026-09-21T13:13:20Z",
        "visible_until": None,
        "old_name": "PdfCraft",
        "new_name": "DocuCraft",
        "description": "PdfCraft is now DocuCraft: same app, new name.",
        "renamed_at": "2026-09-01T08:00:00.250000Z",
    }
    assert document["alerts"][0]["maybe_web_link"] is None


def test_an_export_imported_again_changes_nothing(tmp_path: Path):
    some_items()
    path = export(tmp_path)
    version = read_version("default")
    out = run_import(str(path))
    assert "0 added, 0 changed, 0 deleted, 2 unchanged" in out  # the alerts
    assert read_version("default") == version, "not even the version marker moved"
    assert export_notices() == json.loads(path.read_text())


def test_an_import_makes_the_database_hold_exactly_the_file(tmp_path: Path, monkeypatch):
    some_items()
    document = json.loads(export(tmp_path).read_text())
    Alert.objects.all().delete()
    RepoRename.objects.all().delete()
    announcement(title="Not in the file")
    document["app_renames"][0]["new_name"] = "DocuCraft Pro"
    out = run_import("-", stdin=json.dumps(document), monkeypatch=monkeypatch)
    assert "app_renames: 0 added, 1 changed" in out
    assert "announcements: 0 added, 0 changed, 1 deleted, 1 unchanged" in out
    assert "alerts: 2 added" in out
    assert export_notices() == document
    assert AppRename.objects.get().new_name_lower == "docucraft pro", "derived on import too"


def test_after_importing_ids_the_admin_still_gets_new_ones(tmp_path: Path, monkeypatch):
    document = {"format": "craft_apps_notices", "version": 1, "alerts": []}
    document["alerts"] = [
        {"id": pk, "title": f"A{pk}", "body": "b", "visible_from": "2026-09-01T00:00:00Z"} for pk in (7, 40)
    ]
    run_import("-", stdin=json.dumps(document), monkeypatch=monkeypatch)
    assert alert().pk > 40  # on PostgreSQL this needs the id sequence moved past the file's ids


def test_a_bad_file_is_refused_whole_with_every_problem_on_its_own_line(tmp_path: Path, monkeypatch):
    some_items()
    before = export_notices()
    version = read_version("default")
    document = json.loads(json.dumps(before))
    document["alerts"][0]["maybe_web_link"] = "http://example.com"
    document["alerts"][1]["visible_from"] = "2026-09-01 12:00"  # no zone
    document["app_renames"][0]["colour"] = "red"
    document["announcements"].append({"id": 999, "title": "", "body": "b"})
    err = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    with pytest.raises(
        CommandError, match=r"^Nothing imported: 4 problem\(s\) in standard input, listed above\.$"
    ):
        call_command("craft_apps_notices", "import", "-", stderr=err)
    lines = err.getvalue().splitlines()
    alert_ids = [a["id"] for a in document["alerts"]]
    assert lines == [
        f"app_renames[0] (id {document['app_renames'][0]['id']}): unknown fields colour",
        "announcements[1] (id 999): title: This field cannot be blank.",
        f"alerts[0] (id {alert_ids[0]}): maybe_web_link: Enter a full https:// address the launcher "
        "can open, such as https://example.com/notes (http and other schemes are refused).",
        f"alerts[1] (id {alert_ids[1]}): visible_from: '2026-09-01 12:00' is not an instant with its zone; "
        "write it like 2026-10-08T14:52:50Z.",
    ]
    assert export_notices() == before
    assert read_version("default") == version


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "Nothing imported: 1 problem(s) in standard input"),
        ("[]", "Nothing imported: 1 problem(s)"),
    ],
)
def test_what_is_not_an_export_is_refused(content: str, message: str, monkeypatch):
    announcement()
    monkeypatch.setattr("sys.stdin", io.StringIO(content))
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("craft_apps_notices", "import", "-", stderr=io.StringIO())
    assert Announcement.objects.count() == 1


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(CommandError, match=r"Can't read .*missing\.json: No such file or directory"):
        call_command("craft_apps_notices", "import", str(tmp_path / "missing.json"))


def test_export_to_standard_output_and_a_dry_run_writes_nothing(monkeypatch):
    some_items()
    out = io.StringIO()
    call_command("craft_apps_notices", "export", "-", stdout=out)
    document = json.loads(out.getvalue())
    document["alerts"] = []
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    said = io.StringIO()
    call_command("craft_apps_notices", "import", "-", "--dry-run", stdout=said)
    assert said.getvalue().startswith("Dry run, nothing written: ")
    assert "alerts: 0 added, 0 changed, 2 deleted" in said.getvalue()
    assert Alert.objects.count() == 2


def refused_lines(text: str, monkeypatch) -> list[str]:
    """The problems an import of ``text`` lists, one a line; it must be refused, with no traceback."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    with pytest.raises(CommandError, match=r"^Nothing imported: \d+ problem\(s\) in standard input"):
        call_command("craft_apps_notices", "import", "-", stderr=err)
    lines = err.getvalue().splitlines()
    assert lines and all(line.isprintable() for line in lines), lines
    return lines


def one_alert(**fields: object) -> str:
    row = {"id": 1, "title": "t", "body": "b", "published": True, "visible_from": "2026-10-08T14:52:50Z"}
    document = {"format": "craft_apps_notices", "version": 1, "alerts": [{**row, **fields}]}
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "the file nests arrays or objects too deep to be an export"),
        (
            one_alert(title=None).replace("null", "9" * 5000),
            "the file holds a number of 5000 digits; an export has none over 19",
        ),
        (
            one_alert(visible_from="2026-13-45T00:00:00Z"),
            "alerts[0] (id 1): visible_from: '2026-13-45T00:00:00Z' is not an instant with its zone",
        ),
        (
            one_alert(visible_until="9999-12-31T23:59:59-01:00"),
            "alerts[0] (id 1): visible_until: Pick an instant before the year 10000 in UTC.",
        ),
        (
            one_alert(title="a\ud800b"),
            "alerts[0] (id 1): title: Remove the character at position 2: a lone surrogate",
        ),
        (one_alert(title="a\x00b"), "alerts[0] (id 1): title: Null characters are not allowed."),
        (one_alert(body="a\x00b"), "alerts[0] (id 1): body: Null characters are not allowed."),
        (one_alert(created_at=[[["deep"]]]), "alerts[0] (id 1): created_at: a JSON array is not an instant"),
        (one_alert(id=2**31), "alerts[0]: id must be a whole number from 1 to 2147483647"),
        (one_alert().replace('"id": 1', '"id": -' + "9" * 5000), "the file holds a number of 5000 digits"),
        (one_alert().replace('"title"', '"ti\\ud800tle"'), "alerts[0] (id 1): unknown fields ti tle"),
    ],
    ids=[
        "deep nesting",
        "5000 digits",
        "no such date",
        "past 9999 in UTC",
        "lone surrogate",
        "NUL in a title",
        "NUL in a body",
        "an array for an instant",
        "an id past the column",
        "a 5000-digit id",
        "a surrogate in a key",
    ],
)
def test_whatever_the_file_holds_the_answer_is_a_list_of_one_line_problems(
    text: str, expected: str, monkeypatch
):
    announcement()
    before = export_notices()
    lines = refused_lines(text, monkeypatch)
    assert any(line.startswith(expected) for line in lines), lines
    assert export_notices() == before, "nothing written"


def test_the_import_and_the_admin_refuse_the_same_values_with_the_same_words():
    """One validation: the model's ``full_clean``, which the admin's form calls too."""
    from django.core.exceptions import ValidationError

    from craft_apps.content.transfer import ImportRefused, import_notices, parse_document

    for fields in (
        {"title": "a\x00b"},
        {"title": "a\ud800b"},
        {"visible_until": "9999-12-31T23:59:59-01:00"},
    ):
        with pytest.raises(ImportRefused) as refused:
            import_notices(parse_document(one_alert(**fields)))
        [name] = fields
        item = Alert(title="t", body="b", published=True)
        if name == "visible_until":
            from django.utils.dateparse import parse_datetime

            setattr(item, name, parse_datetime(fields[name]))
        else:
            setattr(item, name, fields[name])
        with pytest.raises(ValidationError) as invalid:
            item.full_clean()
        assert refused.value.problems == [
            f"alerts[0] (id 1): {name}: {' '.join(invalid.value.message_dict[name])}"
        ]


def test_the_channel_settings_travel_with_the_notices_all_or_nothing(tmp_path: Path):
    from craft_apps.content.models import AppChannel

    some_items()
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    AppChannel.objects.create(app_key="paintcraft", channels=[])
    path = export(tmp_path)
    document = json.loads(path.read_text())
    assert [(row["app_key"], row["channels"]) for row in document["app_channels"]] == [
        ("photocraft", ["beta"]),
        ("paintcraft", []),
    ]
    assert set(document["app_channels"][0]) == {"id", "app_key", "channels"}
    before = read_version("default")
    assert "app_channels: 0 added, 0 changed, 0 deleted, 2 unchanged" in run_import(str(path))
    assert read_version("default") == before, "an export imported again writes nothing"

    document["app_channels"][1]["channels"] = ["beta"]
    document["app_channels"].append({"id": 99, "app_key": "photo craft", "beta": "yes"})
    document["alerts"] = []
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError):
        run_import(str(path))
    assert on_beta() == {"photocraft"} and Alert.objects.exists(), "nothing written"

    document["app_channels"].pop()
    path.write_text(json.dumps(document))
    assert "app_channels: 0 added, 1 changed" in run_import(str(path))
    assert on_beta() == {"photocraft", "paintcraft"}

    del document["app_channels"]  # an export made before channels
    path.write_text(json.dumps(document))
    run_import(str(path))
    assert AppChannel.objects.count() == 2, "left as they are"


def on_beta() -> set[str]:
    from craft_apps.content.models import AppChannel

    return {row.app_key for row in AppChannel.objects.all() if row.channels == ["beta"]}


def test_an_export_made_when_beta_was_a_yes_or_no_still_imports(tmp_path: Path):
    """Before ``channels``, a row said ``"beta": true`` or false: it imports as the list, and
    imported again it changes nothing; a value that is no yes or no is refused in one line."""
    from craft_apps.content.models import AppChannel

    rows = [
        {"id": 1, "app_key": "photocraft", "beta": True},
        {"id": 2, "app_key": "paintcraft", "beta": False},
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": "craft_apps_notices", "version": 1, "app_channels": rows}))
    assert "app_channels: 2 added" in run_import(str(path))
    assert [(row.app_key, row.channels) for row in AppChannel.objects.all()] == [
        ("paintcraft", []),
        ("photocraft", ["beta"]),
    ]
    assert "app_channels: 0 added, 0 changed, 0 deleted, 2 unchanged" in run_import(str(path))
    rows[0]["beta"] = "yes"
    path.write_text(json.dumps({"format": "craft_apps_notices", "version": 1, "app_channels": rows}))
    with pytest.raises(CommandError):
        run_import(str(path))
    assert on_beta() == {"photocraft"}, "nothing written"


def one_row(kind: str, **fields: object) -> str:
    """An export of one valid item of ``kind`` (its fields changed by ``fields``)."""
    rows: dict[str, dict[str, object]] = {
        "alerts": {"title": "t", "body": "b", "published": True, "visible_from": "2026-10-08T14:52:50Z"},
        "announcements": {"title": "t", "body": "b", "visible_from": "2026-10-08T14:52:50Z"},
        "app_renames": {"old_name": "PdfCraft", "new_name": "DocuCraft", "description": "d"},
        "repo_renames": {"old_name": "storytold/pdfcraft", "new_name": "storytold/docucraft"},
        "app_channels": {"app_key": "photocraft", "channels": ["beta"]},
    }
    row = {"id": 1, **rows[kind], **fields}
    return json.dumps({"format": "craft_apps_notices", "version": 1, kind: [row]})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (one_row("alerts", published=1), "alerts[0] (id 1): published: Write true or false, not 1."),
        (one_row("alerts", title=5), "alerts[0] (id 1): title: Write a text, not 5."),
        (one_row("alerts", body=" \n "), "alerts[0] (id 1): body: This field cannot be blank."),
        (one_row("announcements", created_at=7), "announcements[0] (id 1): created_at: a JSON number is"),
        (
            one_row("app_renames", description="\t"),
            "app_renames[0] (id 1): description: This field cannot be blank.",
        ),
        (one_row("repo_renames", old_name=True), "repo_renames[0] (id 1): old_name: Write a text, not true."),
        (
            one_row("app_channels", channels="beta"),
            "app_channels[0] (id 1): channels: Write a list of channel names (beta), not 'beta'.",
        ),
        (one_row("app_channels", app_key=7), "app_channels[0] (id 1): app_key: Write a text, not 7."),
        (
            one_row("alerts").replace('"version": 1', '"version": true'),
            '"format" must be "craft_apps_notices"',
        ),
    ],
    ids=[
        "a number for a yes or no",
        "a number for a text",
        "a body of spaces",
        "a number for an instant",
        "a description of a tab",
        "a boolean for a repository",
        "a text for a list of channels",
        "a number for an app key",
        "true for the version",
    ],
)
def test_a_value_of_another_json_type_than_the_admins_is_refused_in_every_kind(
    text: str, expected: str, monkeypatch
):
    """Every kind's fields take JSON's types (a yes or no is a boolean, a text a string, an
    instant a text with its zone), and a required text of only spaces is empty, as the admin's
    form finds it; each problem one line, nothing written."""
    announcement()
    before = export_notices()
    lines = refused_lines(text, monkeypatch)
    assert [line for line in lines if line.startswith(expected)], lines
    assert export_notices() == before, "nothing written"


def test_two_channel_settings_of_one_app_are_refused_and_keys_may_move(tmp_path: Path):
    """The admin refuses a second setting of one app; the import said so with a traceback
    (the database's UNIQUE constraint) rather than a line. Two rows may swap their keys."""
    from craft_apps.content.models import AppChannel

    AppChannel.objects.create(pk=1, app_key="photocraft", channels=["beta"])
    AppChannel.objects.create(pk=2, app_key="paintcraft", channels=[])
    document = json.loads(export(tmp_path).read_text())
    document["app_channels"].append({"id": 3, "app_key": "PhotoCraft", "beta": False})
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(document))
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing imported: 1 problem"):
        call_command("craft_apps_notices", "import", str(path), stderr=err)
    assert err.getvalue().splitlines() == [
        "app_channels[2] (id 3): app_key: 'photocraft' is app_channels[0] (id 1)'s already; keep one of them."
    ]
    document["app_channels"] = [
        {"id": 1, "app_key": "paintcraft", "beta": True},
        {"id": 2, "app_key": "photocraft", "beta": False},
    ]
    path.write_text(json.dumps(document))
    assert "app_channels: 0 added, 2 changed, 0 deleted" in run_import(str(path))
    assert set(AppChannel.objects.values_list("pk", "app_key")) == {(1, "paintcraft"), (2, "photocraft")}
