"""One runtime per web process: the one store of a state directory every endpoint shares, what a
change of settings forgets, and a runtime put in place for a block (tests, benchmarks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client, override_settings

from craft_apps.api import runtime as runtime_module
from craft_apps.api.runtime import Runtime, reset, runtime, use
from craft_apps.content.feed import BackgroundLooker, NoticesFeed
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState
from tests.content.support import WAIT_S, run_once
from tests.support import publish

URL = "/v1/craft_apps/release_info"
TOKEN = "s3cret-metrics-token-0123456789"
FETCHED_MS = 1_790_000_000_000


def inline_feed() -> NoticesFeed:
    """Looks in the test's thread, which holds the test's database."""
    return NoticesFeed(runner=lambda look: look())


@pytest.fixture
def site(state_dir: Path, settings) -> Path:
    settings.CRAFT_APPS = {
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "STATE_DIR": str(state_dir),
        "METRICS_TOKEN": TOKEN,
    }
    publish(state_dir, {"photocraft": AppState(fetched_ms=FETCHED_MS)})
    return state_dir


@pytest.mark.django_db
def test_the_endpoints_share_one_store_per_state_directory(site: Path, install_runtime, monkeypatch):
    opened: list[Path] = []

    class CountingStore(StateStore):
        def __init__(self, state_dir: Path) -> None:
            opened.append(state_dir)
            super().__init__(state_dir)

    monkeypatch.setattr(runtime_module, "StateStore", CountingStore)
    web = install_runtime(recheck_s=0.0, feed=inline_feed())
    client = Client()
    assert client.get(URL).status_code == 200
    assert client.get("/v1/craft_apps/health").status_code == 503, "no poller: an answer all the same"
    assert client.get("/craft_apps/downloads/").status_code == 200
    assert client.get("/v1/craft_apps/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert opened == [site]
    assert web.state_store() is web.store(site)


@pytest.mark.django_db
def test_a_change_of_settings_forgets_the_kept_answer_and_pages(site: Path, install_runtime):
    # Without a reset, the first answer would stand an hour.
    web = install_runtime(recheck_s=3600.0, feed=inline_feed())
    client = Client()
    first = client.get(URL)
    client.get("/craft_apps/downloads/")
    assert len(web.pages)
    publish(site, {"photocraft": AppState(fetched_ms=FETCHED_MS + 1000)})
    assert client.get(URL).content == first.content, "kept within the reuse window"
    with override_settings(USE_TZ=True):
        assert not len(web.pages)
        assert client.get(URL).content != first.content, "looked at the state file again"


@pytest.mark.django_db
def test_reset_forgets_what_the_process_runtime_kept(site: Path, monkeypatch):
    monkeypatch.setattr(runtime(), "feed", inline_feed())  # the process's own runtime, patched
    monkeypatch.setattr(runtime().answers, "recheck_s", 3600.0)
    client = Client()
    first = client.get(URL).content
    publish(site, {"photocraft": AppState(fetched_ms=FETCHED_MS + 1000)})
    reset()
    assert client.get(URL).content != first


def test_use_puts_a_runtime_in_place_for_a_block_then_the_one_before_and_ends_its_thread():
    before = runtime()
    assert runtime() is before, "built once"
    looker = BackgroundLooker()
    with use(Runtime(feed=NoticesFeed(runner=looker))) as web:
        assert runtime() is web
        thread = run_once(looker)
    assert runtime() is before
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the block's runtime was closed"


def test_a_features_cache_is_made_once_per_runtime_and_cleared_by_reset():
    class Kept:
        def __init__(self) -> None:
            self.items = ["an answer"]

        def clear(self) -> None:
            self.items.clear()

    with use(Runtime(feed=inline_feed())) as web:
        kept = web.part(Kept)
        assert web.part(Kept) is kept and kept.items == ["an answer"]
        web.reset()
        assert web.part(Kept) is kept and kept.items == []
