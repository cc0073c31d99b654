"""``craft_apps_status`` shows the release controls (from the site's database, a real SQLite
file) and what each channel serves with them (from the host's real state file, by the
endpoint's own answer cache), at a fake clock's instant; and says so when the database can't
be read, printing the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.content.support import database_unreachable
from tests.ops.controls_support import at, create_controls, publish_releases, status
from tests.support import apps_setting


@pytest.fixture
def host(settings, state_dir: Path) -> Path:
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting()}
    publish_releases(state_dir)
    return state_dir


def control(app: str, action: str, tag: str, **fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "app": app,
        "action": action,
        "tag": tag,
        "channel": None,
        "percentage": None,
        "next_step": None,
        "paused": False,
        "paused_at": None,
        "in_force": True,
        "app_configured": True,
        "tag_known": True,
    }
    return {**base, **fields}


@pytest.mark.django_db
def test_each_control_and_what_each_channel_serves_show_in_the_json(host: Path):
    create_controls()
    doc = json.loads(status("--json"))
    assert doc["release_controls_problem"] is None
    assert doc["release_controls"] == [
        control("artcraft-launcher", "hold", "v0.4.0", channel="stable"),
        control(
            "artcraft-launcher",
            "rollout",
            "v0.5.0",
            channel="beta",
            percentage=20,  # paused before the second step
            paused=True,
            paused_at=at(minutes=-30),
        ),
        control("artcraft-launcher", "yank", "v9.9.9", tag_known=False),
        control("oldcraft", "yank", "v1.0.0", app_configured=False, tag_known=False),
        control("photocraft", "yank", "v0.5.0"),
        control(
            "photocraft",
            "rollout",
            "v0.6.0",
            percentage=25,
            next_step={"at": at(hours=2), "percentage": 50},
        ),
    ]
    served = {app["key"]: app["served"] for app in doc["apps"]}
    rollout = {"tag": "v0.6.0", "percentage": 25}
    assert served == {
        "artcraft-launcher": {
            "stable": {"tag": "v0.4.0", "rollout": None},  # held
            "beta": {"tag": "v0.4.0", "rollout": {"tag": "v0.5.0", "percentage": 20}},
        },
        # v0.6.0 to a quarter; the rest keep the newest release below it that isn't yanked
        "photocraft": {
            "stable": {"tag": "v0.4.0", "rollout": rollout},
            "beta": {"tag": "v0.4.0", "rollout": rollout},
        },
    }
    assert [app["tag"] for app in doc["apps"]] == ["v0.5.0", "v0.6.0"], "the TAG column: GitHub's latest"


@pytest.mark.django_db
def test_each_control_and_what_each_channel_serves_show_in_the_text(host: Path):
    create_controls()
    text = status()
    assert "controls         6 in force, 2 waiting for their release (below)\n" in text
    block = text[text.index("\nrelease controls\n") :].splitlines()[2:]
    assert block == [
        "  artcraft-launcher  hold v0.4.0 (on stable)",
        "  artcraft-launcher  rollout v0.5.0 (on beta) at 20 % now, paused 30 min ago",
        "  artcraft-launcher  yank v9.9.9 (every channel); not known on this host yet: kept, applied when "
        "the release appears",
        "  oldcraft           yank v1.0.0 (every channel); no app oldcraft in APPS: kept, applied when it "
        "appears",
        "  photocraft         yank v0.5.0 (every channel)",
        f"  photocraft         rollout v0.6.0 (every channel) at 25 % now, 50 % from {at(hours=2)} (in 2 h)",
        "",
        "served now",
        "  artcraft-launcher  stable v0.4.0; beta v0.4.0 + rollout v0.5.0 to 20 %",
        "  photocraft         stable v0.4.0 + rollout v0.6.0 to 25 %; beta v0.4.0 + rollout v0.6.0 to 25 %",
    ]


@pytest.mark.django_db
def test_without_controls_the_answer_is_as_before_and_the_text_says_none(host: Path):
    doc = json.loads(status("--json"))
    assert doc["release_controls"] == []
    plain = {"stable": {"tag": "v0.6.0", "rollout": None}, "beta": {"tag": "v0.6.0", "rollout": None}}
    assert {app["key"]: app["served"] for app in doc["apps"]}["photocraft"] == plain
    text = status()
    assert "controls         none\n" in text and "\nrelease controls\n" not in text
    assert "\nserved now\n" not in text


@pytest.mark.django_db
def test_a_rollout_at_100_is_shown_complete_and_changes_nothing(host: Path):
    from craft_apps.content.models import ReleaseControl

    ReleaseControl.objects.create(
        app_key="photocraft", action="rollout", tag="v0.6.0", percentage=50, schedule=f"{at(hours=-1)} 100"
    )
    doc = json.loads(status("--json"))
    assert doc["release_controls"] == [
        control("photocraft", "rollout", "v0.6.0", percentage=100, in_force=False)
    ]
    served = {app["key"]: app["served"] for app in doc["apps"]}
    assert served["photocraft"]["stable"] == {"tag": "v0.6.0", "rollout": None}
    text = status()
    assert "controls         0 in force, 1 complete (below)\n" in text
    assert (
        "  photocraft  rollout v0.6.0 (every channel) at 100 % now: complete, changes nothing now "
        "(delete it when done)\n" in text
    )
    assert "  (every other app: its TAG on every channel)\n" in text


@pytest.mark.django_db(transaction=True)
def test_a_database_that_cant_be_read_is_one_line_and_the_rest_is_printed(host: Path):
    create_controls()
    with database_unreachable():
        doc = json.loads(status("--json"))
        text = status()
    assert doc["release_controls"] is None and "OperationalError" in doc["release_controls_problem"]
    assert all(app["served"] is None for app in doc["apps"])
    assert doc["apps"][1]["tag"] == "v0.6.0" and doc["health"]["status"] == "unhealthy"  # no poller
    lines = [line for line in text.splitlines() if line.startswith(("controls", "release controls"))]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "controls         unknown (the site's database can't be read: OperationalError"
    )
    assert lines[0].endswith("; the web processes apply the last they read")
    assert "health           unhealthy" in text and "photocraft" in text.splitlines()[2]


@pytest.mark.django_db
def test_a_state_file_that_cant_be_read_leaves_the_tags_unknown(settings, state_dir: Path):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "APPS": apps_setting()}
    state_dir.mkdir()
    (state_dir / "craft_apps_state.sqlite3").write_bytes(b"not SQLite at all" * 300)
    create_controls()
    doc = json.loads(status("--json"))
    assert {c["tag_known"] for c in doc["release_controls"]} == {None}
    assert all(app["served"] is None for app in doc["apps"])
    assert "unknown whether the host knows the tag (the state file can't be read)" in status()


@pytest.mark.django_db
def test_the_controls_kept_for_a_web_process_show_and_whether_they_are_the_databases(host: Path):
    from craft_apps.content.channels import read_controls
    from craft_apps.controls.kept import FILE_NAME, KeptControls

    create_controls()
    doc = json.loads(status("--json"))
    assert doc["kept_controls"] == {
        "path": str(host / FILE_NAME),
        "exists": False,
        "controls": None,
        "matches_database": None,
        "problem": None,
    }
    assert "kept controls    no file yet (a web process writes one when it reads a control" in status()

    KeptControls(host).save(read_controls()[1:])  # a web process's last look, one control ago
    doc = json.loads(status("--json"))
    assert (doc["kept_controls"]["controls"], doc["kept_controls"]["matches_database"]) == (5, False)
    assert f"kept controls    5 in {host / FILE_NAME}; not the database's yet" in status()

    KeptControls(host).save(read_controls())
    assert json.loads(status("--json"))["kept_controls"]["matches_database"] is True
    assert f"kept controls    6 in {host / FILE_NAME}\n" in status()


@pytest.mark.django_db
def test_a_kept_file_that_isnt_ours_is_one_line_in_the_status(host: Path):
    from craft_apps.controls.kept import FILE_NAME

    (host / FILE_NAME).write_text('{"v": 1, "controls": [{"app_key": "photocraft"}]}')
    doc = json.loads(status("--json"))
    kept = doc["kept_controls"]
    assert (kept["exists"], kept["controls"], kept["matches_database"]) == (True, None, None)
    assert kept["problem"] == "ValueError: a control without its key, action, tag or channel"
    [line] = [line for line in status().splitlines() if line.startswith("kept controls")]
    assert line == (
        "kept controls    refused (ValueError: a control without its key, action, tag or channel); "
        "a web process started while the database can't be read serves without controls until it can"
    )


@pytest.mark.django_db
def test_what_operators_typed_is_printed_with_its_control_characters_escaped(host: Path):
    """Rows an older version stored (the admin and the import now refuse such tags): the text
    prints each control character as its escape, so a tag can't clear the operator's screen,
    ring its bell or forge a line; the JSON keeps them as JSON escapes them."""
    from craft_apps.content.models import ReleaseControl

    tag = "v0.5.0\x1b[2J\x07\nforged"
    ReleaseControl.objects.create(app_key="photocraft", action="yank", tag=tag, reason="r")
    ReleaseControl.objects.create(app_key="old\x1b[31mcraft", action="yank", tag="v1.0.0", reason="r")
    text = status()
    assert "\x1b" not in text and "\x07" not in text
    assert all(line.isprintable() for line in text.splitlines()), "one line each, nothing a terminal acts on"
    assert "  photocraft     yank v0.5.0\\x1b[2J\\x07\\nforged (every channel); not known" in text
    assert "  old\\x1b[31mcraft  yank v1.0.0 (every channel); no app old\\x1b[31mcraft in APPS" in text
    doc = json.loads(status("--json"))
    assert [c["tag"] for c in doc["release_controls"]] == ["v1.0.0", tag]
