"""The release policies and the releases they keep back, as ``craft_apps_status`` shows them
(``--json``'s ``release_policies`` and ``waiting_releases``): plain JSON-ready data, no I/O.
What waits is ``kernel.serving.waiting_releases``, the rule the endpoint serves by.
See docs/operations.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from craft_apps.controls.policies import Offset, format_offsets
from craft_apps.controls.rules import APPROVAL, APPROVED, GUARDED, STAGED, Control
from craft_apps.kernel.instants import datetime_to_ms, format_ms
from craft_apps.kernel.serving import WaitingRelease


def policies_document(
    controls: Iterable[Control], waiting: Sequence[WaitingRelease] | None
) -> dict[str, Any]:
    """Each app's policy per channel (``immediate`` ones have no row: they change nothing) with
    its approvals, and each release waiting (None: the state file can't be read)."""
    listed = list(controls)
    policies = [
        {
            "app": c.app_key,
            "channel": c.channel,
            "policy": c.action,
            "schedule": _schedule(c) if c.action in (STAGED, GUARDED) else None,
            "since": format_ms(c.since_ms or 0),
            "approved": [
                a.tag
                for a in listed
                if a.action == APPROVED and (a.app_key, a.channel) == (c.app_key, c.channel)
            ],
        }
        for c in listed
        if c.action in (STAGED, GUARDED, APPROVAL)
    ]
    return {
        "release_policies": policies,
        "waiting_releases": None if waiting is None else [_waiting(w) for w in waiting],
    }


def _schedule(policy: Control) -> str:
    since = policy.since_ms or 0
    return format_offsets([Offset(step.at_ms - since, step.percentage) for step in policy.steps])


def _waiting(found: WaitingRelease) -> dict[str, Any]:
    wait = found.wait
    published = wait.release.published_at
    guarded = {"paused": wait.paused} if wait.kind == GUARDED else {}
    return {
        "app": found.app_key,
        "channel": found.channel.value,
        "tag": wait.release.tag,
        "published_at": None if published is None else format_ms(datetime_to_ms(published)),
        "policy": wait.kind,
        "percentage": wait.percentage,
        "waits_for": "approval" if wait.kind == APPROVAL else "schedule",
        "next_step": None
        if wait.next_ms is None
        else {"at": format_ms(wait.next_ms), "percentage": wait.next_percentage},
        **guarded,
    }
