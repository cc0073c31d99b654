"""The operators' release controls in the fleet's Redis, for a host that can't read the
site's database when it starts.

One hash, ``<prefix>controls``: ``v`` ("1"), ``controls`` (their text, decoded by the caller's
decoder) and ``read_ms`` (when a poller read them from the database). Written whole, the later
read winning, with the entries' 7-day TTL. ``SharedControls.read(decode)`` returns the
controls and ``read_ms``, or None when absent or unreadable; ``write`` returns whether written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from craft_apps.fleet.entry import FORMAT_VERSION, text_fields
from craft_apps.fleet.guarded_writes import GuardedWrite, GuardedWriter
from craft_apps.fleet.key_reads import KeyReader
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


class SharedControls:
    """The release controls key on the fleet's Redis."""

    def __init__(self, reads: KeyReader, writes: GuardedWriter, *, key_prefix: str) -> None:
        self._reads = reads
        self._writes = writes
        self.key = controls_key(key_prefix)

    def read(self, decode: Callable[[str], T]) -> tuple[T, int] | None:
        """The release controls a poller shared last, as ``decode`` reads their text (a
        ValueError: unreadable), and when it read them; None when absent or unreadable (logged
        once, as every key)."""
        [found] = self._reads.read_hashes(
            f"reading {self.key}", [self.key], lambda fields: decode_controls(fields, decode)
        )
        return found

    def present(self) -> bool:
        """Whether Redis holds the shared controls key at all (one EXISTS): a flush or a lapse
        is put right by the next poller that read the database."""
        [reply] = self._reads.pipelined(f"looking for {self.key}", [("EXISTS", self.key)])
        return reply == 1

    def write(self, text: str, read_ms: int) -> bool:
        """Shares the release controls read from the site's database at ``read_ms``, unless
        Redis holds a later read; False then."""
        write = GuardedWrite(
            key=self.key,
            time_field=FIELD_READ_MS,
            time_ms=read_ms,
            fields=controls_fields(text, read_ms),
            full=True,
        )
        return self._writes.apply(write)
