"""What Python 3.11 added and this app uses, for Python 3.10 too.

``UTC``, ``StrEnum``, ``fromisoformat`` (which reads a trailing ``Z``) and ``sqlite_errorname``,
each as 3.11 has it. The CI matrix runs the tests on 3.10. See docs/installation.md.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from datetime import datetime, timezone

UTC = timezone.utc

if sys.version_info >= (3, 11):
    from enum import StrEnum

    fromisoformat = datetime.fromisoformat

    def sqlite_errorname(err: sqlite3.Error) -> str:
        return getattr(err, "sqlite_errorname", "") or ""

else:
    from enum import Enum

    _FRACTION = re.compile(r"(\d\d:\d\d:\d\d)[.,](\d+)")

    def fromisoformat(text: str) -> datetime:
        # 3.10 reads only isoformat()'s own output: a zone of +00:00, not Z, and a fraction of
        # exactly 3 or 6 digits (padded or cut to microseconds here, as 3.11 does). ISO 8601's
        # compact form (20261008T145250Z), which RFC 3339 doesn't allow, stays unreadable.
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        text = _FRACTION.sub(lambda m: f"{m[1]}.{(m[2] + '000000')[:6]}", text, count=1)
        return datetime.fromisoformat(text)

    # SQLite's fixed message of each result code (sqlite3_errstr) that this app tells apart;
    # SQLITE_ERROR's message names the problem instead ("no such table: ...").
    _SQLITE_MESSAGES = {
        "database is locked": "SQLITE_BUSY",
        "database table is locked": "SQLITE_LOCKED",
        "database disk image is malformed": "SQLITE_CORRUPT",
        "file is not a database": "SQLITE_NOTADB",
        "attempt to write a readonly database": "SQLITE_READONLY",
        "disk I/O error": "SQLITE_IOERR",
        "database or disk is full": "SQLITE_FULL",
        "unable to open database file": "SQLITE_CANTOPEN",
        "access permission denied": "SQLITE_PERM",
        "out of memory": "SQLITE_NOMEM",
        "interrupted": "SQLITE_INTERRUPT",
    }

    def sqlite_errorname(err: sqlite3.Error) -> str:
        # 3.10's exceptions carry only the message: known messages map to their code; any other
        # OperationalError is a statement's error (SQLITE_ERROR).
        message = str(err)
        if message in _SQLITE_MESSAGES:
            return _SQLITE_MESSAGES[message]
        return "SQLITE_ERROR" if type(err) is sqlite3.OperationalError else ""

    class StrEnum(str, Enum):
        _value_: str

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, format_spec: str) -> str:
            return str(self.value).__format__(format_spec)


__all__ = ["UTC", "StrEnum", "fromisoformat", "sqlite_errorname"]
