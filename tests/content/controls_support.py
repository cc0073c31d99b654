"""The host the release controls' tests check tags against: photocraft fetched with its release
list (v0.4.0, v0.5.0), artcraft-launcher fetched without one (its tags can't be checked); and
tags no control may have."""

from __future__ import annotations

from pathlib import Path

from craft_apps.content.models import ReleaseControl
from craft_apps.kernel.domain import AppState
from tests.support import publish, publish_history, release

T0 = 1_790_000_000_000

# Tags git refuses, which the admin and the import refuse alike, each with the start of the
# words both say (``domain.tag_problem``, the rule GitHub's tags pass).
BAD_TAGS = {
    "v0.5.0\x1b[31m": "The tag holds spaces or control characters: write the tag as git names it",
    "v0.5.0\x07": "The tag holds spaces or control characters: write the tag as git names it",
    "v0..5": "The tag is not a name git allows ('..', a part starting with '.', ...): write the tag",
    "v0.5.lock": "The tag is not a name git allows",
    "v0.5^": "The tag is not a name git allows",
}


def publish_host(state_dir: Path) -> None:
    publish(
        state_dir,
        {
            "photocraft": AppState(latest_release=release("0.5.0"), fetched_ms=T0),
            "artcraft-launcher": AppState(latest_release=release("1.0.0"), fetched_ms=T0),
        },
    )
    publish_history(state_dir, "photocraft", (release("0.5.0"), release("0.4.0")), fetched_ms=T0)


def control(**fields: object) -> ReleaseControl:
    """A control of photocraft (a yank of v0.5.0 unless ``fields`` say otherwise); with
    ``cleaned=True``, through ``full_clean`` first, as the admin's form (the schedule written as
    the model writes it)."""
    cleaned = fields.pop("cleaned", False)
    values: dict[str, object] = {
        "app_key": "photocraft",
        "action": "yank",
        "tag": "v0.5.0",
        "reason": "Loses layers on save.",
        **fields,
    }
    made = ReleaseControl(**values)
    if cleaned:
        made.full_clean()
    made.save()
    return made
