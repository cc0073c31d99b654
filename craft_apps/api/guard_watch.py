"""The guarded policies' watch in each web process: once a second, each guarded release is judged
on the fleet's install counts (``controls.guard.decide``); a step or a pause is written to the
policy's row by a compare-and-set (once, by the first process to see it), which every web
process serves within 2 s. The writer of a pause logs it and queues the webhook post
(``reports.notify``). See docs/controls.md#guarded-rollouts.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping

from django.db import close_old_connections
from django.utils import timezone

from craft_apps.api.answer import build_release_info
from craft_apps.conf import app_settings
from craft_apps.content.policy_models import GUARD_AUTHOR, ReleasePolicy
from craft_apps.controls.guard import FAILING, Decision, Health, decide
from craft_apps.controls.policies import policy_of, rollout_of
from craft_apps.controls.rules import GUARDED, Control
from craft_apps.host.store import StateSnapshot
from craft_apps.kernel.domain import ChannelApps
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.kernel.serving import HostReleases, WaitingRelease, waiting_releases
from craft_apps.kernel.text import one_line
from craft_apps.kernel.versions import version_text
from craft_apps.reports.counts import ReleaseCounts, ReportsUnavailable
from craft_apps.reports.notify import Notifier
from craft_apps.reports.stores import release_counts

logger = logging.getLogger(__name__)

CHECK_S = 1.0
Counts = Mapping[tuple[str, str], Health]


def health_of(found: Iterable[ReleaseCounts]) -> dict[tuple[str, str], Health]:
    """Each (app, version)'s distinct installs and the failing ones among them."""
    return {(c.app, c.version): Health(c.installs(), c.installs(FAILING)) for c in found}


class GuardWatch:
    """One web process's watch. ``check`` is one round; ``start`` runs it every ``period_s``
    in a thread of its own, whether or not requests come."""

    def __init__(
        self,
        snapshot: Callable[[], StateSnapshot],
        channel_apps: Callable[[], ChannelApps],
        controls: Callable[[], tuple[Control, ...]],
        now_ms: Callable[[], int],
        notifier: Notifier | None = None,
        counts: Callable[[list[str]], list[ReleaseCounts]] = release_counts,
        period_s: float = CHECK_S,
    ) -> None:
        self._snapshot, self._channel_apps, self._controls = snapshot, channel_apps, controls
        self._now_ms, self._counts, self.period_s = now_ms, counts, period_s
        self.notifier = notifier or Notifier()
        self._stop = threading.Event()
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._failing = False

    def start(self) -> None:
        """Starts the thread unless this process has one already (a cheap check, as the notices
        feed's beat, ``content.pacer``): a forked child starts its own."""
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid, self._stop = os.getpid(), threading.Event()
            thread = threading.Thread(target=self._run, args=(self._stop,), name="craft-apps-guard")
            thread.daemon = True
            thread.start()

    def running(self) -> bool:
        """Whether this process's thread is started (and not stopped)."""
        return self._pid == os.getpid()

    def stop(self) -> None:
        """Ends the thread after its round in progress; a later ``start`` starts another."""
        with self._lock:
            stop, self._pid = self._stop, None
        stop.set()

    def close(self) -> None:
        self.stop()
        self.notifier.close()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.period_s):
            try:
                self.check()
                self._failing = False
            except Exception as err:  # a round's trouble is one line; the next goes on
                if not self._failing:
                    logger.warning(
                        "Craft app releases: the guarded rollouts' check failed: %s", one_line(err)
                    )
                self._failing = True
            finally:
                close_old_connections()

    def check(self) -> list[Decision]:
        """One round: the decisions written (a step taken, a pause), none without a guarded release."""
        controls = self._controls()
        if not any(c.action == GUARDED for c in controls):
            return []
        now_ms = self._now_ms()
        waits = [w for w in self._waiting(controls, now_ms) if w.wait.kind == GUARDED and not w.wait.paused]
        if not waits:
            return []
        try:
            counts: Counts | None = health_of(self._counts(sorted({w.app_key for w in waits})))
        except ReportsUnavailable:
            counts = None
        rows = {(r.app_key, r.channel): r for r in ReleasePolicy.objects.filter(policy=GUARDED)}
        written = []
        for item in waits:
            row = rows.get((item.app_key, item.channel.value))
            decision = None if row is None else self._judge(row, item, counts, now_ms)
            if decision is not None:
                written.append(decision)
        return written

    def _waiting(self, controls: tuple[Control, ...], now_ms: int) -> list[WaitingRelease]:
        snapshot = self._snapshot()
        if snapshot.version == 0:
            return []
        apps, web_url = app_settings.APPS, app_settings.GITHUB_WEB_URL
        listed = build_release_info(apps, snapshot.apps, web_url)
        releases = HostReleases(apps, listed, web_url, snapshot.history, snapshot.history_fetches)
        return waiting_releases(releases, self._channel_apps(), controls, now_ms)

    def _judge(
        self, row: ReleasePolicy, item: WaitingRelease, counts: Counts | None, now_ms: int
    ) -> Decision | None:
        """Decides for one release; writes and tells what changed. None: nothing written."""
        release = item.wait.release
        policy = policy_of(row.to_controls(), row.channel)
        if policy is None or release.published_at is None:
            return None
        rollout = rollout_of(policy, release.tag, datetime_to_ms(release.published_at))
        version = version_text(release.tag) or release.tag
        health = None if counts is None else counts.get((row.app_key, version), Health(0, 0))
        decision = decide(rollout, row.marks().get(release.tag), row.rule(), health, now_ms)
        if decision.mark is None or not write_mark(row, decision):
            return None
        if decision.paused:
            self._paused(row, release.tag, decision)
        return decision

    def _paused(self, row: ReleasePolicy, tag: str, decision: Decision) -> None:
        seen = decision.mark.seen if decision.mark is not None else Health(0, 0)
        logger.warning(
            "Craft app releases: the guarded rollout of %s %s on %s paused itself at %d %% "
            "(%d installs, %.1f %% failing; threshold %.1f %%)",
            row.app_key,
            tag,
            row.channel,
            decision.percentage,
            seen.installs,
            seen.percent(),
            float(row.max_failing_percent),
        )
        text = (
            f"{row.app_key} {tag} on {row.channel}: the guarded rollout {decision.why}. "
            "Resume or yank it in the admin."
        )
        self.notifier.send(row.notify_url, f"Craft apps: {text}")


def write_mark(row: ReleasePolicy, decision: Decision) -> bool:
    """Keeps ``decision``'s mark on ``row`` unless another process changed its marks since
    ``row`` was read: True when this write is the one."""
    mark = decision.mark
    if mark is None:
        return False
    before = row.guard
    marks = row.marks()
    marks[mark.tag] = mark
    row.set_marks(marks)
    fields: dict[str, object] = {"guard": row.guard, "updated_at": timezone.now()}
    if mark.paused:
        fields["changed_by"] = GUARD_AUTHOR
    changed: int = ReleasePolicy.objects.filter(pk=row.pk, guard=before).update(**fields)
    return changed == 1
