"""Outside text made fit for one log line or one reason.

GitHub's and the database's messages are cut and made one line before they are logged or shown.
See docs/logs.md.
"""

from __future__ import annotations

from urllib.parse import urlsplit

ELLIPSIS = "…"


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` on one line: every run of white space and unprintable characters (newlines,
    escapes, NULs) becomes one space and the ends are trimmed, so a log line can't be split or
    forged by what it quotes. Past ``limit`` characters it is cut and ends with an ellipsis."""
    raw = str(text)
    if limit is not None:
        raw = raw[: limit * 2 + 2]  # folding never lengthens: no need to look further
    line = " ".join("".join(c if c.isprintable() else " " for c in raw).split())
    if limit is not None and len(line) > limit:
        return line[:limit] + ELLIPSIS
    return line


QUOTED_MAX = 40


def quoted(value: str, limit: int = QUOTED_MAX) -> str:
    """``value`` quoted for a one-line reason sent back to its sender: each unprintable
    character a ``?``, at most ``limit`` characters."""
    printable = "".join(c if c.isprintable() else "?" for c in value)
    if len(printable) > limit:
        printable = printable[:limit] + ELLIPSIS
    return f"'{printable}'"


def escaped(text: str) -> str:
    """``text`` with each character a terminal could act on or that would hide the text
    (every one ``str.isprintable`` refuses but the space: a newline, ESC, BEL, a right-to-left
    override) written as its escape (``\\n``, ``\\x1b``, ``\\x07``, ``\\u202e``): what an
    operator typed, printed to a terminal as what it holds, never as what it would do."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def url_for_log(url: str) -> str:
    """``url`` without what a log line must not hold: a user and password, the query."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"
