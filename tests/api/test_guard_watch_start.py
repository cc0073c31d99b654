"""The guarded rollouts' watch (``api.guard_watch``) runs whether or not requests come: the
middleware ``api.startup`` starts it and the notices' beat when a server builds its handler,
else the first ``runtime()`` of a process does (no answer needed), its rounds go on with no
request, a forked child starts its own, and ``quiet`` ends it."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client

from craft_apps.api import runtime
from craft_apps.api.guard_watch import GuardWatch
from craft_apps.api.runtime import Runtime, use
from craft_apps.content.feed import NoticesFeed
from craft_apps.controls.rules import Control
from craft_apps.host.store import StateSnapshot
from craft_apps.kernel.domain import NO_CHANNEL_APPS


class Rounds:
    """The watch's ``controls``: counts its rounds and says when ``wanted`` have run."""

    def __init__(self, wanted: int) -> None:
        self.count, self.wanted = 0, wanted
        self.done = threading.Event()

    def __call__(self) -> tuple[Control, ...]:
        self.count += 1
        if self.count >= self.wanted:
            self.done.set()
        return ()


def idle_watch(rounds: Rounds) -> GuardWatch:
    def no_snapshot() -> StateSnapshot:
        raise AssertionError("no guarded control: the round reads nothing more")

    return GuardWatch(no_snapshot, lambda: NO_CHANNEL_APPS, rounds, lambda: 0, period_s=0.01)


def test_the_rounds_go_on_with_no_request_and_stop():
    rounds = Rounds(3)
    watch = idle_watch(rounds)
    watch.start()
    watch.start()  # once started, a cheap check
    assert rounds.done.wait(10), "three rounds, and nothing asked"
    assert [t.name for t in threading.enumerate()].count("craft-apps-guard") == 1
    watch.close()
    assert not watch.running()


def test_a_forked_child_starts_its_own(monkeypatch: pytest.MonkeyPatch):
    watch = idle_watch(Rounds(1))
    watch.start()
    parent = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)
    assert not watch.running(), "the parent's thread doesn't run in the child"
    rounds = Rounds(1)
    watch._controls = rounds  # the child's rounds
    watch.start()
    assert watch.running() and rounds.done.wait(10)
    watch.close()


def test_the_process_runtime_starts_it_at_its_first_call_and_quiet_ends_it():
    feed = NoticesFeed(runner=lambda look: None, pace=False)
    with use(Runtime(feed=feed, watch_guard=True)) as web:
        assert not web.guard.running()
        assert runtime.runtime() is web and web.guard.running(), "started with no answer asked"
        runtime.quiet()
        assert not web.guard.running()
        runtime.runtime()
        assert web.guard.running(), "the next request starts it again"
    assert not web.guard.running(), "closed with its runtime"


START = "craft_apps.api.startup.StartBackground"


def test_building_a_handler_starts_the_watch_and_the_beat_with_no_request(settings: Any):
    settings.MIDDLEWARE = [START]
    looked = threading.Event()
    feed = NoticesFeed(runner=lambda look: looked.set(), pace=True)
    with use(Runtime(feed=feed, watch_guard=True)) as web:
        WSGIHandler()  # what a server does when it starts
        assert web.guard.running(), "the watch, with no request"
        assert looked.wait(10), "the beat's first look, with no request"


def test_the_middleware_leaves_the_chain_and_the_answers_as_they_are(settings: Any):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, START]
    feed = NoticesFeed(runner=lambda look: None, pace=False)
    with use(Runtime(feed=feed, watch_guard=True)) as web:
        answer = Client().get("/v1/craft_apps/reports")
        assert answer.status_code == 405 and answer["Allow"] == "POST"
        assert web.guard.running()
