"""Which content coding an answer is sent in, from the request's ``Accept-Encoding`` field.

Pure functions. ``choose_encoding(header, available)`` takes the field (None when absent) and the
codings kept, smallest first, and returns the one to send: ``br``, ``gzip`` or ``identity``.
Its docstring holds the rules (RFC 9110 §12.5.3); docs/endpoint.md the contract.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

IDENTITY = "identity"
BROTLI = "br"
GZIP = "gzip"

# The codings the endpoint keeps, smallest first: the tie-break of rule 5 (``choose_encoding``).
PREFERENCE: tuple[str, ...] = (BROTLI, GZIP, IDENTITY)

_ALIASES = {"x-gzip": GZIP}
_QVALUE = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

# An acceptable coding that is not listed ranks below every listed one (rule 4).
_UNLISTED = 1e-9


def parse_accept_encoding(header: str) -> dict[str, float]:
    """The weight of each coding the field names (rule 2); ``*`` is kept as ``"*"``."""
    weights: dict[str, float] = {}
    for element in header.split(","):
        coding, *parameters = (part.strip() for part in element.split(";"))
        coding = coding.lower()
        if not _TOKEN.fullmatch(coding):
            continue
        coding = _ALIASES.get(coding, coding)
        weight = _weight(parameters)
        if weight is not None and coding not in weights:
            weights[coding] = weight
    return weights


def _weight(parameters: Sequence[str]) -> float | None:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            value = value.strip()
            return float(value) if _QVALUE.fullmatch(value) else None
    return 1.0


def acceptable_weight(coding: str, weights: dict[str, float]) -> float:
    """How much the client wants ``coding`` (rules 3 and 4); 0 means not at all."""
    if coding in weights:
        return weights[coding]
    if "*" in weights:
        return weights["*"]
    return _UNLISTED if coding == IDENTITY else 0.0


@functools.lru_cache(maxsize=256)  # launchers send a handful of distinct values
def choose_encoding(header: str | None, available: tuple[str, ...] = PREFERENCE) -> str:
    """The coding to send, one of ``available`` (ordered smallest first) or ``identity``.

    The rules (RFC 9110 §12.5.3), in the order they apply:

    1. No ``Accept-Encoding`` field, or an empty one: ``identity``. RFC 9110 lets a server send any
       coding to a request without the field, but a client that names none (``curl`` without
       ``--compressed``, a script) usually can't decode one, so it gets the plain bytes.
    2. The field is a comma-separated list of ``coding[;q=value]``; codings are case-insensitive,
       ``x-gzip`` is ``gzip`` (§8.4.1.3), other parameters are ignored. A ``q`` outside the grammar
       (``0`` to ``1`` with at most three decimals) makes that element count as not listed; the first
       element that names a coding is the one that counts.
    3. A coding's weight is its own ``q`` (1 when it has none); a coding not listed takes the weight
       of ``*`` when ``*`` is listed, else 0 (not acceptable).
    4. ``identity`` is acceptable when not listed and ``*`` isn't either (§12.5.3: only
       ``identity;q=0`` or ``*;q=0`` exclude it), but ranks below any listed coding.
    5. The acceptable coding (weight above 0) with the highest weight wins; on a tie, the smaller
       answer wins (``br``, then ``gzip``, then ``identity``).
    6. When nothing is acceptable (``identity;q=0`` with no coding we have): ``identity`` all the
       same. The endpoint never fails; a 406 would leave a launcher with nothing.
    """
    if header is None or not header.strip():
        return IDENTITY
    weights = parse_accept_encoding(header)
    best, best_weight = IDENTITY, 0.0
    for coding in available:  # strictly greater: an earlier (smaller) coding wins a tie
        weight = acceptable_weight(coding, weights)
        if weight > best_weight:
            best, best_weight = coding, weight
    return best
