"""The operators' release controls in the fleet's Redis, so a host that can't read the site's
database when it starts still applies them.

One hash, ``<prefix>controls`` (``controls_key``; no app key can make it collide: entries are
``app:…``, histories ``history:…``). Its fields: ``v`` (this format, "1"), ``controls`` (the
controls as text, opaque here: ``content.kept_controls`` encodes them, and its decoder is
passed in to read them) and
``read_ms`` (when the poller that wrote them read them from the site's database). It is written
whole by the entries' guarded write, the later read winning (``domain.newer_wins``), by every
poller whose read found controls other than its last; it expires after the entries' TTL (7
days, ``entry.APP_TTL_MS``). Read as untrusted input: a hash that doesn't decode reads as none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from craft_apps.fleet.entry import FORMAT_VERSION, text_fields
from craft_apps.kernel.domain import is_stored_time

FIELD_CONTROLS = "controls"
FIELD_READ_MS = "read_ms"
FIELD_VERSION = "v"
MAX_TEXT = 1 << 20  # as the kept file's bound: far above any real set of controls

T = TypeVar("T")


def controls_key(prefix: str) -> str:
    return f"{prefix}controls"


def controls_fields(text: str, read_ms: int) -> dict[str, str]:
    """The hash's fields for controls read from the site's database at ``read_ms``."""
    if not is_stored_time(read_ms):
        raise ValueError("shared controls need the time they were read")
    return {FIELD_VERSION: FORMAT_VERSION, FIELD_CONTROLS: text, FIELD_READ_MS: str(read_ms)}


def decode_controls(raw: Mapping[str | bytes, str | bytes], decode: Callable[[str], T]) -> tuple[T, int]:
    """The controls a hash holds, as ``decode`` reads their text, and when they were read (Unix
    ms). Raises ValueError for a hash of another format or shape, or text ``decode`` refuses."""
    fields = text_fields(raw)
    if fields.get(FIELD_VERSION) != FORMAT_VERSION:
        raise ValueError(f"controls of format {fields.get(FIELD_VERSION)!r}, not {FORMAT_VERSION!r}")
    read = fields.get(FIELD_READ_MS, "")
    if not read.isdigit() or not is_stored_time(int(read)):
        raise ValueError("the controls' read_ms is not a time in Unix ms")
    text = fields.get(FIELD_CONTROLS)
    if text is None or len(text) > MAX_TEXT:
        raise ValueError("no controls, or more than their bound")
    try:
        return decode(text), int(read)
    except ValueError as err:
        raise ValueError(f"they don't read as controls: {err}") from err
