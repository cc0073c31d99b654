"""What the poller and its steps share: its settings, a tick's report and the apps' state.

``PollState`` holds each app's state, release history and list fetch, the backoff, whether
another poller took the state directory over, and what changed that the host's state file
hasn't taken yet. The poller makes one (``PollState.of(config, still_leader)``) and hands it to
each step. ``TickReport`` is what a tick returns; ``count`` adds an answer to a round's counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from craft_apps.conf import DEFAULT_GITHUB_WEB_URL
from craft_apps.kernel.domain import AppSpec, AppState, Backoff, HistoryFetch, PollMode, Release
from craft_apps.kernel.source import Failed, Fetched, FetchOutcome, ListFetched, ListOutcome, NotModified
from craft_apps.polling import history
from craft_apps.polling.schedule import RoundResult

# Every step logs as the poller did before it was split: operators filter on this name.
POLLER_LOG = "craft_apps.polling.poller"


@dataclass(frozen=True)
class PollConfig:
    apps: tuple[AppSpec, ...]
    interval_ms: int
    max_backoff_ms: int
    web_url: str = DEFAULT_GITHUB_WEB_URL  # where release pages and files must be (``GITHUB_WEB_URL``)
    history_depth: int = history.DEFAULT_DEPTH  # releases kept per app; the list's per_page
    # Every app's release list, once per new release and at start-up (``history.ListsOwed``);
    # off, only the apps that need history have it.
    history_for_every_app: bool = False


@dataclass
class TickReport:
    mode: PollMode
    round: RoundResult = field(default_factory=RoundResult)  # what GitHub answered
    saved: RoundResult = field(default_factory=RoundResult)  # of those, what the state file took
    backing_off: bool = False

    def unsaved(self) -> int:
        """Answers the host's state file did not take (they stay in memory, written later)."""
        answered = self.round.fetched + self.round.unchanged + self.round.failed
        return answered - self.saved.requests()


@dataclass
class PollState:
    """What this poller knows, shared by the poller and its steps (one object, no copies)."""

    repos: dict[str, str]  # app key -> its repository
    memory: dict[str, AppState]
    still_leader: Callable[[], bool] = lambda: True
    history: dict[str, tuple[Release, ...]] = field(default_factory=dict)
    history_fetch: dict[str, HistoryFetch] = field(default_factory=dict)
    backoff: Backoff = field(default_factory=Backoff)
    fence_lost: bool = False  # another poller took the state directory over: stop writing
    # Changed, not written to the host's state file yet (``publish.Publisher`` writes them).
    unwritten: set[str] = field(default_factory=set)
    unwritten_histories: set[str] = field(default_factory=set)
    backoff_unwritten: bool = False
    # Apps whose updater files are read after the round (True: with history), then shared;
    # and the answers shared with the fleet once their updater files are read.
    updater_owed: dict[str, bool] = field(default_factory=dict)
    share_owed: dict[str, Fetched | NotModified] = field(default_factory=dict)

    @classmethod
    def of(cls, config: PollConfig, still_leader: Callable[[], bool]) -> PollState:
        return cls(
            repos={app.key: app.repo for app in config.apps},
            memory={app.key: AppState(repo=app.repo) for app in config.apps},
            still_leader=still_leader,
        )

    def stopped(self) -> bool:
        """Whether to stop the round: another poller took over, or the lease is gone."""
        return self.fence_lost or not self.still_leader()


def count(result: RoundResult, outcome: FetchOutcome | ListOutcome) -> None:
    """Adds an answer to a round's counts (a rate limit is counted by its caller)."""
    if isinstance(outcome, Fetched | ListFetched):
        result.fetched += 1
    elif isinstance(outcome, NotModified):
        result.unchanged += 1
    elif isinstance(outcome, Failed):
        result.failed += 1
