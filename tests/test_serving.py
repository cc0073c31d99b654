"""The one serving rule (craft_apps.kernel.serving) on plain data: what each channel lists for each
app, from the host's releases and history, the apps with beta on, the controls and the clock."""

from __future__ import annotations

import ast
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from craft_apps.api.answer import build_release_info
from craft_apps.controls.policies import parse_offsets, policy_control
from craft_apps.controls.rules import STAGED, YANK, Control
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import NO_CHANNEL_APPS, AppState, Channel, ChannelApps, Release, ReleaseInfo
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.kernel.serving import (
    HostReleases,
    next_policy_change_ms,
    policy_steps_reached_ms,
    serve,
    waiting_releases,
)
from tests.support import PHOTOCRAFT, release

PACKAGE = Path(__file__).resolve().parents[1] / "craft_apps"
WEB = "https://github.com"
NOW = datetime_to_ms(datetime(2026, 11, 1, tzinfo=UTC))


def tagged(version: str, *, prerelease: bool = False) -> Release:
    return replace(release(version), prerelease=prerelease)


V1_2, V1_3 = tagged("1.2.0"), tagged("1.3.0")
V1_3_RC, V1_4_BETA = tagged("1.3.0-rc.1", prerelease=True), tagged("1.4.0-beta.1", prerelease=True)


def host(latest: Release, *history: Release, fetched: bool = True) -> HostReleases:
    state = AppState(latest_release=latest, fetched_ms=NOW if fetched else None)
    listed = build_release_info((PHOTOCRAFT,), {PHOTOCRAFT.key: state}, WEB)
    return HostReleases((PHOTOCRAFT,), listed, WEB, {PHOTOCRAFT.key: history})


def tag(served: ReleaseInfo) -> str | None:
    latest = served.apps[PHOTOCRAFT.key].latest_release
    return None if latest is None else latest.tag


def test_stable_serves_githubs_latest_and_beta_the_newest_of_the_history_to_apps_on_beta() -> None:
    releases = host(V1_3, V1_4_BETA, V1_3, V1_2)
    on = ChannelApps({Channel.BETA: {PHOTOCRAFT.key}})
    assert serve(Channel.STABLE, releases, on, (), NOW) is releases.listed
    assert tag(serve(Channel.BETA, releases, on, (), NOW)) == "v1.4.0-beta.1"
    assert serve(Channel.BETA, releases, NO_CHANNEL_APPS, (), NOW) is releases.listed


def test_a_yank_falls_back_to_a_stable_release_on_stable_and_may_to_a_prerelease_on_beta() -> None:
    releases = host(V1_3, V1_3, V1_3_RC, V1_2)
    yanked = (Control(PHOTOCRAFT.key, YANK, "v1.3.0"),)
    assert tag(serve(Channel.STABLE, releases, NO_CHANNEL_APPS, yanked, NOW)) == "v1.2.0"
    assert tag(serve(Channel.BETA, releases, NO_CHANNEL_APPS, yanked, NOW)) == "v1.3.0-rc.1"


def test_an_app_not_fetched_yet_is_served_nothing_on_every_channel_whatever_the_controls() -> None:
    releases = host(V1_3, V1_4_BETA, V1_3, fetched=False)
    yanked = (Control(PHOTOCRAFT.key, YANK, "v1.3.0"),)
    for channel in Channel:
        served = serve(
            channel,
            releases,
            ChannelApps({c: {PHOTOCRAFT.key} for c in Channel.chosen_per_app()}),
            yanked,
            NOW,
        )
        assert served is releases.listed and tag(served) is None


def imports(module: str) -> set[str | None]:
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return found | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def test_the_rule_is_pure_it_imports_no_django_cache_store_or_io() -> None:
    allowed = {"__future__", "collections.abc", "dataclasses"}
    pure = {
        "craft_apps.controls.rules",
        "craft_apps.controls.policies",
        "craft_apps.kernel.domain",
        "craft_apps.kernel.versions",
    }
    assert imports("craft_apps.kernel.serving") - allowed <= pure


def test_the_endpoint_and_the_status_both_call_the_rule_and_the_status_builds_no_cache() -> None:
    assert "craft_apps.kernel.serving" in imports("craft_apps.api.answer")
    assert "craft_apps.kernel.serving" in imports("craft_apps.ops.status_read")
    assert "AnswerCache" not in PACKAGE.joinpath("ops", "status_read.py").read_text(encoding="utf-8")


def test_every_channel_is_one_member_of_one_type_and_a_string_where_one_is_written() -> None:
    """Logs, labels, JSON keys and the signature's variant take a channel as its name."""
    assert [str(channel) for channel in Channel] == ["stable", "beta"]
    by_name: dict[str, int] = {Channel.BETA: 1}
    assert by_name["beta"] == 1 and f"{Channel.BETA}" == "beta"
    assert not Channel.STABLE.serves_history and Channel.BETA.serves_history
    assert not Channel.STABLE.prereleases and Channel.BETA.prereleases


def test_a_staged_policy_says_when_the_answer_changes_next_and_which_step_it_reflects() -> None:
    since = datetime(2026, 10, 1, tzinfo=UTC)
    old = replace(tagged("1.0.0"), published_at=since - timedelta(days=1))
    new = replace(tagged("1.1.0"), published_at=since + timedelta(hours=1))
    policy = policy_control(
        PHOTOCRAFT.key, "stable", STAGED, parse_offsets("+0h 5, +1d 100"), datetime_to_ms(since)
    )
    assert policy is not None
    releases = host(new, new, old)
    published_ms = datetime_to_ms(since + timedelta(hours=1))
    now_ms = published_ms + 3_600_000
    assert next_policy_change_ms(releases, (policy,), now_ms) == published_ms + 86_400_000
    assert policy_steps_reached_ms(releases, (policy,), now_ms) == published_ms
    [waiting] = waiting_releases(releases, NO_CHANNEL_APPS, (policy,), now_ms)
    assert (waiting.app_key, waiting.channel, waiting.wait.release.tag) == (
        PHOTOCRAFT.key,
        Channel.STABLE,
        "v1.1.0",
    )
    assert tag(serve(Channel.STABLE, releases, NO_CHANNEL_APPS, (policy,), now_ms)) == "v1.0.0"
    done_ms = published_ms + 86_400_000
    assert next_policy_change_ms(releases, (policy,), done_ms) is None
    assert policy_steps_reached_ms(releases, (policy,), done_ms) == done_ms
    assert tag(serve(Channel.STABLE, releases, NO_CHANNEL_APPS, (policy,), done_ms)) == "v1.1.0"


def test_the_apps_on_each_channel_chosen_per_app_are_one_value_and_stable_is_on_for_every_app() -> None:
    on = ChannelApps({Channel.BETA: ["photocraft"]})
    assert on == ChannelApps({Channel.BETA: frozenset({"photocraft"})})
    assert hash(on) == hash(ChannelApps({Channel.BETA: {"photocraft"}}))
    assert ChannelApps({Channel.BETA: ()}) == NO_CHANNEL_APPS == ChannelApps()
    assert on.apps_on(Channel.BETA) == {"photocraft"} and NO_CHANNEL_APPS.apps_on(Channel.BETA) == frozenset()
    assert on.is_on(Channel.STABLE, "gonecraft") and not on.is_on(Channel.BETA, "gonecraft")
    with pytest.raises(ValueError):
        ChannelApps({Channel.STABLE: ["photocraft"]})
    with pytest.raises(ValueError):
        on.apps_on(Channel.STABLE)
