"""Logging filters of the demo site (``LOGGING`` in ``config/settings.py``)."""

from __future__ import annotations

import logging

MAX_MESSAGE_CHARS = 300


class OneLineWarning(logging.Filter):
    """Turns every record of the logger it is attached to into one warning line.

    For ``django.security.DisallowedHost``: Django logs a request whose ``Host`` is not in
    ``ALLOWED_HOSTS`` at ERROR with a full traceback, yet it is a client's mistake or a scan,
    already answered 400, and nothing for the site to fix. The message (which quotes the client's
    ``Host``) is kept on one line and shortened; the traceback is dropped.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = " ".join(record.getMessage().split())
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 1] + "…"
        record.msg, record.args = message, ()
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True
