"""The Tauri endpoint's kept answers: one per variant, body and release_info answer, bounded."""

from __future__ import annotations

from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.representation import EncodedAnswer
from craft_apps.kernel.domain import ReleaseInfo
from craft_apps.tauri.answers import TauriAnswers


def listed(cache_control: str = CACHEABLE, order_ms: int = 5) -> EncodedAnswer:
    return EncodedAnswer(b"{}", cache_control, 'W/"x"', ReleaseInfo(), order_ms=order_ms)


def test_the_same_request_and_body_is_the_same_answer():
    kept = TauriAnswers()
    first = kept.get("tauri/a", b'{"version":"1.0.0"}', listed())
    assert kept.get("tauri/a", b'{"version":"1.0.0"}', listed()) is first
    assert (first.variant, first.cache_control, first.order_ms) == ("tauri/a", CACHEABLE, 5)
    assert first.etag.startswith('W/"')
    # Another body, variant, Cache-Control or order: another answer.
    assert kept.get("tauri/a", b'{"version":"1.1.0"}', listed()) is not first
    assert kept.get("tauri/b", b'{"version":"1.0.0"}', listed()) is not first
    assert kept.get("tauri/a", b'{"version":"1.0.0"}', listed(NOT_CACHEABLE)) is not first
    assert kept.get("tauri/a", b'{"version":"1.0.0"}', listed(order_ms=6)) is not first


def test_the_etag_is_the_bodys():
    kept = TauriAnswers()
    assert kept.get("tauri/a", b"", listed()).etag == kept.get("tauri/b", b"", listed()).etag
    assert kept.get("tauri/a", b"", listed()).etag != kept.get("tauri/a", b"{}", listed()).etag


def test_the_least_recently_used_goes_first():
    kept = TauriAnswers(kept=2)
    a = kept.get("a", b"", listed())
    b = kept.get("b", b"", listed())
    assert kept.get("a", b"", listed()) is a  # a is now the most recent
    kept.get("c", b"", listed())
    assert kept.get("a", b"", listed()) is a
    assert kept.get("b", b"", listed()) is not b
