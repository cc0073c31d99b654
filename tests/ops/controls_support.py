"""One host with release controls of every kind, for the status and the metrics: a yank, a
hold on one channel, a rollout with a schedule at a fake clock's instant, a paused rollout, a
yank of a tag the host doesn't know and one of an app not configured; and ``status``, the
command's output at that instant."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from craft_apps.kernel.instants import datetime_to_ms, format_rfc3339
from craft_apps.management.commands.craft_apps_status import Command
from craft_apps.testing.clock import FakeClock
from tests.support import publish, publish_history, release

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NOW_MS = datetime_to_ms(NOW)
LAUNCHER_REPO = "storytold/craft-launcher"


def at(**delta: float) -> str:
    return format_rfc3339(NOW + timedelta(**delta))


def publish_releases(state_dir: Path) -> None:
    """photocraft: v0.6.0 latest, v0.5.0 and v0.4.0 before; the launcher: v0.5.0, v0.4.0, v0.3.0."""
    fetched_ms = NOW_MS - 60_000
    publish(
        state_dir,
        {
            "photocraft": AppState(latest_release=release("0.6.0"), fetched_ms=fetched_ms),
            "artcraft-launcher": AppState(
                latest_release=release("0.5.0", repo=LAUNCHER_REPO), fetched_ms=fetched_ms
            ),
        },
    )
    publish_history(state_dir, "photocraft", [release(v) for v in ("0.6.0", "0.5.0", "0.4.0")])
    publish_history(
        state_dir, "artcraft-launcher", [release(v, repo=LAUNCHER_REPO) for v in ("0.5.0", "0.4.0", "0.3.0")]
    )


def create_controls() -> None:
    """photocraft: v0.5.0 yanked, v0.6.0 rolled out (25 % since an hour ago, 50 % in two hours);
    the launcher: held at v0.4.0 on stable, v0.5.0 rolled out on beta and paused at 20 %, v9.9.9
    (no such release) yanked; oldcraft (not in APPS): v1.0.0 yanked."""
    from craft_apps.content.models import ReleaseControl

    def create(app_key: str, action: str, tag: str, **fields: object) -> None:
        ReleaseControl.objects.create(app_key=app_key, action=action, tag=tag, reason="test", **fields)

    create("photocraft", "yank", "v0.5.0")
    create("photocraft", "rollout", "v0.6.0", percentage=10, schedule=f"{at(hours=-1)} 25\n{at(hours=2)} 50")
    create("artcraft-launcher", "hold", "v0.4.0", channel="stable")
    create(
        "artcraft-launcher",
        "rollout",
        "v0.5.0",
        channel="beta",
        percentage=0,
        schedule=f"{at(hours=-1)} 20\n{at(minutes=-10)} 40",
        paused=True,
        paused_at=NOW - timedelta(minutes=30),
    )
    create("artcraft-launcher", "yank", "v9.9.9")
    create("oldcraft", "yank", "v1.0.0")


def status(*args: str) -> str:
    """``craft_apps_status`` with ``args``, its clock at ``NOW``."""
    command = Command()
    command.clock = FakeClock(NOW_MS)
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()
