"""Outside text made fit for one log line or one reason."""

from __future__ import annotations

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
