"""The answer as sent: its JSON bytes, their gzip and brotli forms, its ETag and its signature.

``encode_answer(release_info, notices, channel, order_ms)`` returns an ``EncodedAnswer`` holding
every form, made once per answer key by the first request that sees it; ``Refiner`` later recompresses
its brotli form at the best quality, off the request path; ``signed_form(answer, config, now_s)``
returns the ETag and ``Craft-Apps-Signature`` header to send it with. Each one's docstring holds
its rules and figures. See docs/endpoint.md and docs/signed-feed.md.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import brotli

from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.channels import STABLE, variant
from craft_apps.api.negotiation import BROTLI, GZIP
from craft_apps.api.private_links import served_privately
from craft_apps.api.serializers import GetCraftAppsReleaseInfoResponseSerializer
from craft_apps.api.validators import folded_etag, weak_etag
from craft_apps.conf import app_settings
from craft_apps.content.items import NO_NOTICES, Notices
from craft_apps.controls.rules import Control
from craft_apps.kernel import signing
from craft_apps.kernel.domain import HistoryFetch, ReleaseInfo
from craft_apps.kernel.instants import datetime_to_ms

logger = logging.getLogger(__name__)

GZIP_LEVEL = 9
BROTLI_FAST_QUALITY = 5  # on the request path
BROTLI_BEST_QUALITY = 11  # off it, by the Refiner
REFINE_AFTER_S = 1.0  # how long a version must stay current to be refined


MakeHeaders = Callable[[], tuple[tuple[str, str], ...]]


class SignedForm:
    """What a request adds to an answer's bytes: its ETag, and the signature's header, made on
    the first 200 that needs it (a 304 only needs the ETag, which costs no signature)."""

    def __init__(self, etag: str, made_for: object = None, make: MakeHeaders | None = None) -> None:
        self.etag = etag
        self.made_for = made_for  # (period start, signing config's fingerprint); None: unsigned
        self._make = make
        self._headers: tuple[tuple[str, str], ...] | None = None if make else ()
        self._lock = threading.Lock()

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        headers = self._headers
        if headers is None:
            with self._lock:  # one signature per period, whatever the number of threads
                if self._headers is None and self._make is not None:
                    self._headers = self._make()
                headers = self._headers or ()
        return headers


@dataclass(eq=False)
class SignatureSlot:
    """An answer's signed form for the current period: one per answer, shared by its refined
    copies (the body is the same), replaced when the period or the keys change."""

    form: SignedForm | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, made_for: object, make: Callable[[], SignedForm]) -> SignedForm:
        form = self.form
        if form is not None and form.made_for == made_for:
            return form
        with self._lock:
            form = self.form
            if form is None or form.made_for != made_for:
                form = self.form = make()
            return form


@dataclass(frozen=True)
class EncodedAnswer:
    body: bytes  # the JSON, as sent to a client that accepts no coding
    cache_control: str
    etag: str
    release_info: ReleaseInfo  # what it encodes: the downloads read it (downloads, pages)
    gzip: bytes = b""
    br: bytes = b""
    refined: bool = False  # whether ``br`` is at its best quality
    variant: str = ""  # which variant of the answer it is (signed over); "" the default one
    order_ms: int = 0  # the latest instant its content reflects (``answer_order``; signed over)
    signature: SignatureSlot = field(default_factory=SignatureSlot, compare=False, repr=False)

    def content(self, coding: str) -> bytes:
        """The bytes to send in ``coding`` (``identity`` or one ``negotiation`` picked)."""
        if coding == BROTLI:
            return self.br
        if coding == GZIP:
            return self.gzip
        return self.body


def encode_answer(
    release_info: ReleaseInfo, notices: Notices = NO_NOTICES, channel: str = STABLE, order_ms: int = 0
) -> EncodedAnswer:
    """Every form of ``channel``'s answer listing ``release_info`` with ``notices``, whose content
    reflects ``order_ms`` (``answer_order``), a private app's links pointing at this server.

    The JSON, its weak ETag (``validators``), gzip at level 9 (~4 ms for the 92 KB answer) and
    brotli at quality 5 (~5 ms), made on the request that first sees a state version: each request
    after it, in any coding, is served at once. Every form is deterministic (gzip's header carries
    no time), so every worker and every host sends the same bytes for the same state. No zstd: at
    its highest level the answer is 10% larger than brotli's (13.0 KB against 11.8 KB), its speed
    is of no use for bytes made once per version, and it would add a compiled dependency; every
    client we expect (browsers, curl, Rust's and Python's HTTP stacks) decodes brotli or gzip.
    """
    release_info = served_privately(release_info, app_settings.APPS)
    response: dict[str, Any] = {"success": True, "release_info": release_info, **notices.contract()}
    data = GetCraftAppsReleaseInfoResponseSerializer(response).data
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return EncodedAnswer(
        body=body,
        cache_control=CACHEABLE if release_info.last_fetched is not None else NOT_CACHEABLE,
        etag=weak_etag(data),
        gzip=gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0),
        br=bytes(brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_FAST_QUALITY)),
        release_info=release_info,
        variant="" if channel == STABLE else variant(channel),
        order_ms=order_ms,
    )


def signed_form(answer: EncodedAnswer, config: signing.SigningConfig | None, now_s: float) -> SignedForm:
    """The ETag and headers to send ``answer`` with at ``now_s`` (Unix seconds), signed by
    ``config``'s keys (``app_settings.SIGNING``, which the caller reads with the other settings).

    With a key, the Ed25519 signature (``craft_apps.kernel.signing``) is made once per answer
    (state version and variant), signing period and keys, and kept on the answer, so the requests
    of a period only pick it; a 304 needs none. It carries the answer's ``order_ms`` (what the
    answer cache worked out when it made it), which launchers order answers by. Without a key it
    is the answer's own ETag and no header: byte for byte what is sent unsigned.
    """
    if config is None:
        return SignedForm(answer.etag)
    start = signing.period_start(now_s, config.window_s)
    made_for = (start, config.fingerprint)
    return answer.signature.get(made_for, lambda: _signed(answer, config, start, made_for))


def _signed(answer: EncodedAnswer, config: signing.SigningConfig, start: int, made_for: object) -> SignedForm:
    # The stable answer's tag is as before channels; another channel's also covers its name,
    # which its signature covers.
    channel = (answer.variant,) if answer.variant else ()
    keys = config.fingerprint[1]
    etag = folded_etag(answer.etag, "signed", *channel, start, config.window_s, *keys, answer.order_ms)

    def make() -> tuple[tuple[str, str], ...]:
        value = signing.sign(config, answer.body, start, answer.variant, answer.order_ms)
        return ((signing.HEADER, value),)

    return SignedForm(etag, made_for, make)


def answer_order(
    info: ReleaseInfo,
    controls: Iterable[Control],
    now_ms: int,
    changed_ms: int | None = None,
    history: Iterable[HistoryFetch] = (),
) -> int:
    """The latest instant (Unix ms) the answer made of ``info`` with ``controls`` at ``now_ms``
    reflects; 0 when it reflects nothing yet (no fetch, no control, no known edit)."""
    instants = [changed_ms or 0]
    instants.extend(
        datetime_to_ms(app.app_last_fetched) for app in info.apps.values() if app.app_last_fetched
    )
    instants.extend(fetch.fetched_ms for fetch in history if fetch.fetched_ms is not None)
    instants.extend(_steps_reached(control, now_ms) for control in controls)
    return max(instants)


def _steps_reached(control: Control, now_ms: int) -> int:
    """When a rollout's percentage last changed on its own by ``now_ms``: its last step reached
    (a paused one stops at its pause, which is an edit); 0 for none."""
    if not control.kind.scheduled:
        return 0
    until = now_ms if control.paused_at_ms is None else min(now_ms, control.paused_at_ms)
    return max((step.at_ms for step in control.steps if step.at_ms <= until), default=0)


def refine(answer: EncodedAnswer) -> EncodedAnswer:
    """The same answer with its brotli form at the best quality."""
    if answer.refined:
        return answer
    return replace(answer, br=best_brotli(answer.body), refined=True)


def best_brotli(body: bytes) -> bytes:
    """``body`` in brotli at the best quality: what every worker ends up sending."""
    return bytes(brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_BEST_QUALITY))


Install = Callable[[EncodedAnswer, EncodedAnswer], None]  # (the answer refined, its better form)


def start_thread(job: Callable[[], None]) -> None:
    threading.Thread(target=job, name="craft-apps-refine", daemon=True).start()


class Refiner:
    """Refines an answer that stayed current for ``after_s`` seconds, once, off the request path.

    Refining remakes the brotli form at quality 11 (brotli releases the GIL meanwhile), and the
    kept answer takes it when it is still the current one: a launcher that fetches after a release
    gets the smallest answer, and a request never waits for it.

    The endpoint offers its current answer at each read of the state file. A version replaced
    within ``after_s`` (1 s) is never refined: a host sees a new version every ~9 s (13 apps
    revalidated every 120 s), and under faster churn the work would be thrown away. At most
    one job runs; answers of a variant due meanwhile replace each other, so only the newest is
    refined. Each variant (channel) is refined on its own, and an answer whose bytes are those
    of the one refined last takes that brotli form without compressing again. ``start`` runs a
    job (a thread by default; tests and the benchmark pass one that runs it at once, or later).
    A failure is logged in one line and the answer keeps its quick form.

    It pays for itself: on the demo answer (91.7 KB of JSON) quality 11 is 11.8 KB against 13.7
    KB at quality 5, 14% (1.9 KB) less in every brotli response, for about 80 ms of CPU once per
    version, against 1 ms at quality 5; made on the request path, those 80 ms would be the
    first request's wait (``python -m bench.refine``: Python 3.11, brotli 1.2, a 2-core VM).
    """

    def __init__(
        self,
        start: Callable[[Callable[[], None]], None] = start_thread,
        after_s: float = REFINE_AFTER_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._start = start
        self.after_s = after_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # Per variant (each channel's answer is refined on its own): the newest answer offered
        # and since when, and the last one given to a job (never twice).
        self._candidate: dict[str, tuple[EncodedAnswer, float]] = {}
        self._submitted: dict[str, EncodedAnswer] = {}
        self._pending: dict[str, tuple[EncodedAnswer, Install]] = {}
        self._busy = False
        self._last: tuple[bytes, bytes] | None = None  # the last body refined and its brotli form

    def offer(self, answer: EncodedAnswer, install: Install) -> None:
        """``answer`` is current; refine it (then ``install``) once it has been for ``after_s``."""
        if answer.refined:
            return
        now = self._monotonic()
        slot = answer.variant
        with self._lock:
            candidate = self._candidate.get(slot)
            if candidate is None or answer is not candidate[0]:
                candidate = self._candidate[slot] = (answer, now)
            if now - candidate[1] < self.after_s or answer is self._submitted.get(slot):
                return
            self._submitted[slot], self._pending[slot] = answer, (answer, install)
            if self._busy:
                return
            self._busy = True
        try:
            self._start(self._drain)
        except Exception as err:  # no thread to be had: the quick form stays
            with self._lock:
                self._busy, self._pending = False, {}
            logger.warning("Craft apps release info: brotli refinement not started: %s", err)

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._busy = False
                    return
                answer, install = self._pending.pop(next(iter(self._pending)))
                last = self._last
            try:
                if last is not None and last[0] == answer.body:
                    # Another channel's answer with the same bytes: its brotli form as it is.
                    better = replace(answer, br=last[1], refined=True)
                else:
                    better = refine(answer)
                    with self._lock:
                        self._last = (answer.body, better.br)
                install(answer, better)
            except Exception as err:  # brotli or memory trouble: the quick form stays
                logger.warning("Craft apps release info: brotli refinement failed: %s", err)
