"""The Tauri updater endpoint's answers as sent, kept per process (``tauri.views`` serves them).

An answer is its body (an update's JSON, or none: a 204), its weak ETag (a hash of the body,
``validators``), the variant its signature names and the release_info answer it was made from
(its ``Cache-Control`` and order). Only the signature costs anything to make again, so the
kept answers are those a signature may be kept on: once per answer, period and keys, as
``representation.signed_form`` does for release_info.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from craft_apps.api.representation import EncodedAnswer
from craft_apps.api.validators import weak_etag

MAX_KEPT = 1024  # answers kept per process, the least recently used going first


class TauriAnswers:
    """One process's Tauri answers as sent: per variant and body, the ETag and the signature
    slot, so a signature is made once per answer, period and keys. Bounded (``MAX_KEPT``, the
    least recently used goes); an answer costs nothing to make again but its signature."""

    def __init__(self, kept: int = MAX_KEPT) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, bytes, str, int], EncodedAnswer] = OrderedDict()

    def get(self, variant: str, body: bytes, listed: EncodedAnswer) -> EncodedAnswer:
        """The answer of ``variant`` with ``body`` (``b""``: no update), made from ``listed``
        (the channel's release_info answer: its Cache-Control and order)."""
        key = (variant, body, listed.cache_control, listed.order_ms)
        with self._lock:
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
                return found
        etag = weak_etag({"tauri_update": body.decode("utf-8")})
        made = EncodedAnswer(
            body=body,
            cache_control=listed.cache_control,
            etag=etag,
            release_info=listed.release_info,
            variant=variant,
            order_ms=listed.order_ms,
        )
        with self._lock:
            made = self._answers.setdefault(key, made)
            while len(self._answers) > self._kept:
                self._answers.popitem(last=False)
        return made

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()
