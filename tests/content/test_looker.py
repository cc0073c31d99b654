"""The looker thread of a web process: started on the first look, again in a forked child
(threads don't survive a fork), and ended by ``stop`` (a test's or a benchmark's runtime)."""

from __future__ import annotations

import os
import select
import threading
import warnings

from craft_apps.content.feed import BackgroundLooker, NoticesFeed
from tests.content.support import WAIT_S, run_once


def test_looks_run_one_after_another_in_one_thread_of_their_own():
    looker = BackgroundLooker()
    first = run_once(looker)
    assert first is not threading.current_thread() and first.daemon and first.name == "craft-apps-notices"
    assert run_once(looker) is first
    looker.stop()


def test_stop_ends_the_thread_and_a_later_look_starts_another():
    looker = BackgroundLooker()
    first = run_once(looker)
    looker.stop()
    first.join(WAIT_S)
    assert not first.is_alive()
    second = run_once(looker)
    assert second is not first and second.is_alive()
    looker.stop()


def test_a_feed_closes_only_a_looker_of_its_own():
    looker = BackgroundLooker()
    thread = run_once(looker)
    NoticesFeed(runner=lambda look: look()).close()  # no thread of its own: nothing to end
    assert thread.is_alive()
    NoticesFeed(runner=looker).close()
    thread.join(WAIT_S)
    assert not thread.is_alive()


def test_a_forked_child_starts_a_looker_thread_of_its_own():
    looker = BackgroundLooker()
    parent_thread = run_once(looker)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, fork() may deadlock"
        pid = os.fork()
    if pid == 0:  # the child: its parent's thread is not here, so the next look starts one
        try:
            child_thread = run_once(looker)
            os.write(write_end, b"ran" if child_thread is not parent_thread else b"same")
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        readable, _, _ = select.select([read_end], [], [], WAIT_S)
        assert readable, "the child's look ran"
        assert os.read(read_end, 16) == b"ran"
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    assert run_once(looker) is parent_thread, "the parent's thread is untouched"
    looker.stop()
