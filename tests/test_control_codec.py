"""A release control's one codec (``controls.as_data``/``from_data``): every field carried, the
kept file's bytes as they were, untrusted data refused with what is off; and the two other
faces of a control, the model's row and the admin's fields, following the model."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from craft_apps.content.models import ReleaseControl
from craft_apps.controls.kept import decode, encode
from craft_apps.controls.rules import (
    CONTROL_FIELDS,
    ROLLOUT,
    STAGED,
    YANK,
    Control,
    Step,
    as_data,
    from_data,
)
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.instants import datetime_to_ms

PAUSED = datetime(2026, 9, 20, 11, 0, tzinfo=UTC)
ROLLING = Control(
    "photocraft",
    ROLLOUT,
    "v1.3.0",
    "beta",
    5,
    (Step(1790000000000, 25), Step(1790086400000, 100)),
    datetime_to_ms(PAUSED),
)
YANKED = Control("docucraft", YANK, "v0.9.0")

# The kept file as the release before the codec wrote it: the format must not change.
KEPT_TEXT = (
    '{"controls":[{"action":"rollout","app_key":"photocraft","channel":"beta",'
    '"paused_at_ms":1789902000000,"percentage":5,"steps":[[1790000000000,25],[1790086400000,100]],'
    '"tag":"v1.3.0"},{"action":"yank","app_key":"docucraft","channel":"","paused_at_ms":null,'
    '"percentage":0,"steps":[],"tag":"v0.9.0"}],"v":1}'
)


def test_every_field_of_a_control_goes_through_the_codec_and_back() -> None:
    assert set(as_data(ROLLING)) == set(CONTROL_FIELDS) - {"since_ms"}  # only a policy's
    assert from_data(json.loads(json.dumps(as_data(ROLLING)))) == ROLLING
    assert from_data(as_data(YANKED)) == YANKED
    assert set(as_data(STAGED_POLICY)) == set(CONTROL_FIELDS)
    assert from_data(json.loads(json.dumps(as_data(STAGED_POLICY)))) == STAGED_POLICY


STAGED_POLICY = Control(
    "photocraft",
    STAGED,
    "",
    "stable",
    steps=(Step(1790000000000, 5), Step(1790086400000, 25)),
    since_ms=1790000000000,
)


def test_policies_are_kept_apart_so_a_version_before_them_still_reads_the_controls() -> None:
    text = encode((ROLLING, STAGED_POLICY, YANKED))
    document = json.loads(text)
    assert [row["action"] for row in document["controls"]] == ["rollout", "yank"]
    assert [row["action"] for row in document["policies"]] == ["staged"]
    assert decode(text) == (ROLLING, YANKED, STAGED_POLICY)


def test_a_policy_among_the_controls_or_a_control_among_the_policies_is_refused() -> None:
    mixed = json.dumps({"v": 1, "controls": [as_data(STAGED_POLICY)]})
    with pytest.raises(ValueError, match="policy among"):
        decode(mixed)
    swapped = json.dumps({"v": 1, "controls": [], "policies": [as_data(YANKED)]})
    with pytest.raises(ValueError, match="control among"):
        decode(swapped)


def test_the_kept_file_holds_the_same_bytes_for_the_same_controls() -> None:
    assert encode((ROLLING, YANKED)) == KEPT_TEXT
    assert decode(KEPT_TEXT) == (ROLLING, YANKED)


GOOD = as_data(YANKED)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a control that isn't an object"),
        ({**GOOD, "tag": 7}, "a control without its key, action, tag or channel"),
        ({**GOOD, "action": "freeze"}, "a control without its key, action, tag or channel"),
        ({k: v for k, v in GOOD.items() if k != "channel"}, "without its key, action, tag or channel"),
        ({**GOOD, "percentage": True}, "a control with a percentage or steps of another shape"),
        ({**GOOD, "percentage": 101}, "a control with a percentage or steps of another shape"),
        ({**GOOD, "steps": {}}, "a control with a percentage or steps of another shape"),
        ({**GOOD, "paused_at_ms": 0}, "a control paused at no instant"),
        ({**GOOD, "steps": [[1790000000000, 25, 1]]}, "a schedule step of another shape"),
        ({**GOOD, "steps": [[1790000000000, -1]]}, "a schedule step of another shape"),
        ({**GOOD, "steps": [[True, 25]]}, "a schedule step of another shape"),
    ],
)
def test_data_of_another_shape_is_refused_saying_what_is_off(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_data(data)


def test_a_model_row_reads_as_the_control_it_holds() -> None:
    row = ReleaseControl(
        app_key="PhotoCraft",
        action=ROLLOUT,
        tag="v1.3.0",
        channel="beta",
        percentage=5,
        schedule="2026-09-21T14:13:20Z 25\n2026-09-22T14:13:20Z 100",
        paused=True,
        paused_at=PAUSED,
    )
    assert row.to_control() == ROLLING
    hold = ReleaseControl(app_key="docucraft", action=YANK, tag="v0.9.0", percentage=None)
    assert hold.to_control() == YANKED


def test_the_admin_shows_every_field_the_operators_edit_in_the_models_order() -> None:
    from django.contrib import admin
    from django.http import HttpRequest

    from craft_apps.admin import ReleaseControlAdmin
    from craft_apps.controls.form import ReleaseControlForm

    edited = [f.name for f in ReleaseControl._meta.concrete_fields if f.editable and not f.primary_key]
    assert list(ReleaseControlForm().fields) == edited
    fieldsets = ReleaseControlAdmin(ReleaseControl, admin.site).get_fieldsets(HttpRequest(), ReleaseControl())
    shown = [name for _, group in fieldsets for name in group["fields"]]
    assert [name for name in shown if name in edited] == edited
    assert shown == [
        "served_now",  # first: what is served now, in an incident
        *("app_key", "action", "tag", "channel"),
        *("percentage", "schedule", "paused", "percentage_now"),
        *("reason", "changed_by", "updated_at"),
    ]
