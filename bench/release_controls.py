"""The release controls ``bench.endpoint --controls`` puts in force, the check that an answer
really applies them, and the answers a process encodes per state version with them.

The controls: a staged rollout of one app's latest tag at 25 % with a step to 50 % a day
ahead (``ROLLOUT_APP``), and a yank of another app's latest tag (``YANK_APP``). Both apps get
the release before their latest in their history (``previous_release``), so the rollout's
``latest_release`` and the yank's fallback are real releases, as on a host that fetched the
app's history. The rows are written as an operator's are, checked by ``full_clean``, in the
benchmark site's database (``python -m bench.release_controls write``, in the site's
environment); every web process reads them through its notices feed.

``python -m bench.release_controls encoded --versions N`` (in the site's environment too) runs
a web process's runtime in this process on the benchmark's state: for each of N state versions
it asks every channel's answer a few times and prints, as JSON, how many answers it encoded
(``AnswerCache.encoded``) for each channel: one per state version and channel is the design.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

from craft_apps.kernel.domain import Release
from craft_apps.kernel.versions import tag_version

ROLLOUT_APP = "filmcraft"
YANK_APP = "wordcraft"
ROLLOUT_PERCENT = 25
NEXT_STEP_PERCENT = 50  # the schedule's step, a day after the run starts
OLDER_APPS = frozenset({ROLLOUT_APP, YANK_APP})  # their history holds the release before the latest
ASKS_PER_CHANNEL = 3  # each channel's answer asked this many times per state version
READY_TIMEOUT_S = 20.0


def previous_release(latest: Release) -> Release:
    """The patch release before ``latest``, a week earlier."""
    version = tag_version(latest.tag)
    if version is None or version.patch == 0:
        raise RuntimeError(f"the demo tag {latest.tag} has no patch release before it")
    older = str(version.replace(patch=version.patch - 1))

    def retag(text: str) -> str:
        """``text`` naming the older release: its assets' names and links, its notes."""
        return text.replace(latest.tag, f"v{older}").replace(latest.version, older)

    return replace(
        latest,
        tag=f"v{older}",
        version=older,
        name=retag(latest.name),
        published_at=None if latest.published_at is None else latest.published_at - timedelta(days=7),
        html_url=retag(latest.html_url),
        notes_markdown=retag(latest.notes_markdown),
        assets=tuple(
            replace(asset, name=retag(asset.name), download_url=retag(asset.download_url))
            for asset in latest.assets
        ),
    )


def problem(answer: dict[str, Any], latest_tags: dict[str, str], channel: str) -> str | None:
    """What is wrong with ``answer`` (the endpoint's JSON) under the benchmark's controls, or
    None: the rolled-out app must carry the rollout field (its latest tag at 25 %) and keep
    the release before it; the yanked app must serve the release before its latest tag and
    name the yanked tag nowhere. ``latest_tags``: each controlled app's latest tag on GitHub."""
    apps = answer["release_info"]["apps"]
    rolled, yanked = apps[ROLLOUT_APP], apps[YANK_APP]
    rollout = rolled.get("rollout")
    expected = {"release": latest_tags[ROLLOUT_APP], "percentage": ROLLOUT_PERCENT}
    if (
        rollout is None
        or {"release": rollout["release"]["tag"], "percentage": rollout["percentage"]} != expected
    ):
        return f"{channel}: {ROLLOUT_APP} has no rollout of {expected}: {rollout!r:.200}"
    before = str(previous_release_tag(latest_tags[ROLLOUT_APP]))
    if (rolled.get("latest_release") or {}).get("tag") != before:
        return f"{channel}: {ROLLOUT_APP}'s latest_release isn't {before}, the release before the rollout's"
    if latest_tags[YANK_APP] in json.dumps(yanked):
        return f"{channel}: {YANK_APP} still names its yanked tag {latest_tags[YANK_APP]}"
    fallback = previous_release_tag(latest_tags[YANK_APP])
    if (yanked.get("latest_release") or {}).get("tag") != fallback:
        return f"{channel}: {YANK_APP}'s latest_release isn't {fallback}, the release before the yanked one"
    if any("rollout" in app for key, app in apps.items() if key != ROLLOUT_APP):
        return f"{channel}: an app without a rollout has a rollout field"
    return None


def previous_release_tag(tag: str) -> str:
    version = tag_version(tag)
    if version is None:
        raise RuntimeError(f"the demo tag {tag} is not a version")
    return f"v{version.replace(patch=version.patch - 1)}"


def describe(latest_tags: dict[str, str]) -> tuple[str, ...]:
    """The controls in force, as the report lists them."""
    return (
        f"{ROLLOUT_APP}: rollout of {latest_tags[ROLLOUT_APP]} at {ROLLOUT_PERCENT} %, "
        f"{NEXT_STEP_PERCENT} % a day later (every channel)",
        f"{YANK_APP}: yank of {latest_tags[YANK_APP]}",
    )


# --- In the benchmark site's environment (Django) ------------------------------------------------


def write_controls(latest_tags: dict[str, str]) -> None:
    """The two controls, as an operator's rows (``full_clean`` checks them as the admin does);
    each write bumps the notices' version."""
    from django.utils import timezone

    from craft_apps.content.models import ReleaseControl

    step_at = timezone.now() + timedelta(days=1)
    rows = [
        ReleaseControl(
            app_key=ROLLOUT_APP,
            action="rollout",
            tag=latest_tags[ROLLOUT_APP],
            percentage=ROLLOUT_PERCENT,
            schedule=f"{step_at.strftime('%Y-%m-%dT%H:%MZ')} {NEXT_STEP_PERCENT}",
            reason="bench: a staged rollout in force",
        ),
        ReleaseControl(
            app_key=YANK_APP, action="yank", tag=latest_tags[YANK_APP], reason="bench: a yank in force"
        ),
    ]
    for row in rows:
        row.full_clean()
        row.save()
    if not rows[0].steps():
        raise RuntimeError(f"the rollout's schedule reads as no step: {rows[0].schedule!r}")


def encoded_per_version(versions: int) -> dict[str, Any]:
    """For ``versions`` state versions, the answers a runtime encoded per channel."""
    from craft_apps.api.channels import CHANNELS
    from craft_apps.api.runtime import Runtime, use
    from craft_apps.conf import app_settings
    from craft_apps.host.lease import Lease
    from craft_apps.kernel.clock import SystemClock

    counts = dict.fromkeys(CHANNELS, 0)
    with use(Runtime(recheck_s=0.0)) as runtime:
        answers = runtime.answers
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not runtime.feed.controls():  # the feed's first look, in the background
            runtime.notices()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the notices feed left no controls within {READY_TIMEOUT_S:g} s")
            time.sleep(0.05)  # a background look, not a timer under test
        for channel in CHANNELS:
            answers.answer(channel)  # the controls' first answers: not counted
        store = runtime.state_store()
        lease = Lease(store, holder="bench-encoded", clock=SystemClock())
        if not lease.try_acquire() or lease.fence is None:
            raise RuntimeError(f"the lease of {store.path} is held by someone else")
        try:
            states = store.read().apps
            for number in range(versions):
                key = sorted(states)[number % len(states)]
                state = replace(states[key], fetched_ms=(states[key].fetched_ms or 0) + 1)
                if not store.put_app(key, state, fence=lease.fence):
                    raise RuntimeError("the state file refused a change")
                states[key] = state
                for channel in CHANNELS:
                    before = answers.encoded
                    for _ in range(ASKS_PER_CHANNEL):
                        body = answers.answer(channel).body
                    counts[channel] += answers.encoded - before
                    found = problem(json.loads(body), latest_tags(), channel)
                    if found is not None:
                        raise RuntimeError(found)
        finally:
            lease.release()
        controls = len(runtime.feed.controls())
        state_dir = str(app_settings.STATE_DIR)
    return {"versions": versions, "encoded": counts, "controls": controls, "state_dir": state_dir}


def latest_tags() -> dict[str, str]:
    """Each controlled app's latest tag, as the demo releases have it."""
    from craft_apps.conf import DEFAULT_APPS
    from craft_apps.testing.demo_releases import demo_releases

    releases = demo_releases()
    return {app.key: releases[app.repo]["tag_name"] for app in DEFAULT_APPS if app.key in OLDER_APPS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.release_controls", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["write", "encoded"])
    parser.add_argument("--versions", type=int, default=5, help="state versions (encoded)")
    args = parser.parse_args(argv)
    import django

    django.setup()
    if args.command == "write":
        write_controls(latest_tags())
    else:
        print(json.dumps(encoded_per_version(args.versions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
