"""The answer's Ed25519 signature: keys, the signed message, signing and the reference verifier.

Pure functions over bytes and integers (no Django, settings or clock), so a launcher's author can
read this module alone. The key forms, the messages, the header and the time rules are specified
in docs/signed-feed.md, with test vectors the suite checks with ``verify``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

HEADER = "Craft-Apps-Signature"
CONTEXT = "craft-apps-release-info-signature-v1"
CONTEXT_V2 = "craft-apps-release-info-signature-v2"  # the message that also covers ``order``
DEFAULT_VALIDITY_SECS = 3 * 86_400
MAX_VALIDITY_SECS = 365 * 86_400  # a window longer than a year is a mistake (check E143)
PERIODS_PER_WINDOW = 3  # a fresh signature every third of the window
CLOCK_SKEW_SECS = 300  # how far a launcher's clock may be from ours, either way
KEY_ID_BYTES = 8

_SEED_BYTES = 32
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


class UnusableKey(ValueError):
    """A key that can't be used; ``problem`` names why (a ``checks`` code), never the key."""

    def __init__(self, problem: str, reason: str) -> None:
        super().__init__(reason)
        self.problem = problem


MALFORMED = "signing_key_malformed"
NOT_ED25519 = "signing_key_not_ed25519"


@dataclass(frozen=True)
class SigningKey:
    """A private key and what is derived from it. ``repr`` never shows the private key."""

    private: Ed25519PrivateKey = field(repr=False)
    public: Ed25519PublicKey = field(repr=False)
    key_id: str


@dataclass(frozen=True)
class SigningConfig:
    """The keys that sign (one, or two while rotating) and the validity window, in seconds."""

    keys: tuple[SigningKey, ...]
    window_s: int

    @property
    def fingerprint(self) -> tuple[int, tuple[str, ...]]:
        """What identifies the signatures this config makes (no secret in it)."""
        return self.window_s, tuple(key.key_id for key in self.keys)


def _b64decode(text: str) -> bytes:
    compact = "".join(text.split())
    padded = compact + "=" * (-len(compact) % 4)
    alphabet = {"altchars": b"-_"} if ("-" in compact or "_" in compact) else {}
    return base64.b64decode(padded, validate=True, **alphabet)


def parse_private_key(value: object) -> SigningKey:
    """The signing key ``value`` holds (see the module's forms). Raises ``UnusableKey``, which
    says what is wrong and never quotes the key."""
    if not isinstance(value, str):
        raise UnusableKey(MALFORMED, f"not text but {type(value).__name__}")
    text = value.strip()
    if text.startswith("-----BEGIN"):
        try:
            loaded = serialization.load_pem_private_key(text.encode("ascii"), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm, UnicodeEncodeError):
            raise UnusableKey(MALFORMED, "a PEM block that is not an unencrypted private key") from None
        if not isinstance(loaded, Ed25519PrivateKey):
            raise UnusableKey(NOT_ED25519, f"a PEM {type(loaded).__name__.lstrip('_')}, not Ed25519")
        return signing_key(loaded)
    try:
        raw = _b64decode(text)
    except (binascii.Error, ValueError):
        raise UnusableKey(MALFORMED, "neither base64 nor a PEM block") from None
    if len(raw) == 57:
        raise UnusableKey(NOT_ED25519, "57 bytes: an Ed448 key, not Ed25519")
    if len(raw) not in (_SEED_BYTES, 2 * _SEED_BYTES):
        raise UnusableKey(MALFORMED, f"{len(raw)} bytes once decoded, not an Ed25519 key's 32 (or 64)")
    private = Ed25519PrivateKey.from_private_bytes(raw[:_SEED_BYTES])
    if len(raw) == 2 * _SEED_BYTES and raw[_SEED_BYTES:] != public_bytes(private.public_key()):
        raise UnusableKey(MALFORMED, "64 bytes whose second half is not the first half's public key")
    return signing_key(private)


def signing_key(private: Ed25519PrivateKey) -> SigningKey:
    public = private.public_key()
    return SigningKey(private, public, key_id(public))


def parse_public_key(value: str) -> Ed25519PublicKey:
    """A public key in base64 (32 raw bytes) or a SubjectPublicKeyInfo PEM; ``ValueError`` else."""
    text = value.strip()
    if text.startswith("-----BEGIN"):
        try:
            loaded = serialization.load_pem_public_key(text.encode("ascii"))
        except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError):
            raise ValueError("a PEM block that is not a public key") from None
        if not isinstance(loaded, Ed25519PublicKey):
            raise ValueError("a PEM public key that is not Ed25519")
        return loaded
    try:
        raw = _b64decode(text)
    except (binascii.Error, ValueError):
        raise ValueError("neither base64 nor a PEM block") from None
    if len(raw) != _SEED_BYTES:
        raise ValueError(f"{len(raw)} bytes once decoded, not an Ed25519 public key's 32")
    return Ed25519PublicKey.from_public_bytes(raw)


def generate() -> SigningKey:
    return signing_key(Ed25519PrivateKey.generate())


def public_bytes(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_text(public: Ed25519PublicKey) -> str:
    """The public key as launchers pin it: 32 raw bytes in base64."""
    return base64.b64encode(public_bytes(public)).decode("ascii")


def private_key_text(key: SigningKey) -> str:
    """The private key as ``SIGNING_KEY`` takes it: the 32-byte seed in base64."""
    raw = key.private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode("ascii")


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(public_bytes(public)).digest()[:KEY_ID_BYTES].hex()


def period_start(now_s: float, window_s: int) -> int:
    """The start of the period holding ``now_s``: periods are a third of the window, from 1970."""
    period = max(1, window_s // PERIODS_PER_WINDOW)
    now = int(now_s)
    return now - now % period


def rfc3339(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> int:
    """Unix seconds of ``YYYY-MM-DDTHH:MM:SSZ`` (the one form we send); ``ValueError`` else."""
    if not _RFC3339.fullmatch(text):
        raise ValueError(text)
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def message(key_id: str, signed: str, expires: str, variant: str, body: bytes) -> bytes:
    """The bytes one key signs for ``sig`` (v1: no order; see the module's rules). Raises
    ``ValueError`` (``UnicodeEncodeError``) for text that isn't ASCII."""
    return _lines(CONTEXT, (f"keyid:{key_id}", f"signed:{signed}", f"expires:{expires}"), variant, body)


def ordered_message(key_id: str, signed: str, expires: str, order: str, variant: str, body: bytes) -> bytes:
    """The bytes one key signs for ``sig2``: the v1 lines with ``order`` after ``expires``."""
    head = (f"keyid:{key_id}", f"signed:{signed}", f"expires:{expires}", f"order:{order}")
    return _lines(CONTEXT_V2, head, variant, body)


def _lines(context: str, head: tuple[str, ...], variant: str, body: bytes) -> bytes:
    lines = (context, *head, f"variant:{variant}", f"sha256:{hashlib.sha256(body).hexdigest()}")
    return "".join(line + "\n" for line in lines).encode("ascii")


def sign(
    config: SigningConfig, body: bytes, signed_at: int, variant: str = "", order: int | None = None
) -> str:
    """The ``Craft-Apps-Signature`` value for ``body`` signed at ``signed_at`` by every key:
    each member carries ``sig`` (v1), and ``order`` and ``sig2`` (v2) unless ``order`` is None."""
    signed, expires = rfc3339(signed_at), rfc3339(signed_at + config.window_s)
    members = []
    for key in config.keys:
        sig = _b64(key.private.sign(message(key.key_id, signed, expires, variant, body)))
        member = f"keyid={key.key_id}; signed={signed}; expires={expires}; sig={sig}"
        if order is not None:
            text = str(order)
            sig2 = _b64(key.private.sign(ordered_message(key.key_id, signed, expires, text, variant, body)))
            member += f"; order={text}; sig2={sig2}"
        members.append(member)
    return ", ".join(members)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class Member:
    """One key's signature as the header carries it (``order``, ``sig2``: None when absent)."""

    key_id: str
    signed: str
    expires: str
    sig: str
    order: str | None = None
    sig2: str | None = None


_REQUIRED = ("keyid", "signed", "expires", "sig")


def parse_header(values: Iterable[str]) -> list[Member]:
    """Every well-formed member of the header's field lines, in order; ``ValueError`` when none
    is. Names are taken as written (lowercase), values as written (no quoting), spaces and tabs
    around both trimmed; a member naming any parameter twice (an unknown one included), or
    missing one of ``_REQUIRED`` (``sig`` too, which ``verify`` never checks), is none."""
    members: list[Member] = []
    for value in values:
        for text in value.split(","):
            params = _params(text)
            if params is not None and all(name in params for name in _REQUIRED):
                members.append(
                    Member(
                        params["keyid"],
                        params["signed"],
                        params["expires"],
                        params["sig"],
                        params.get("order"),
                        params.get("sig2"),
                    )
                )
    if not members:
        raise ValueError("no member with keyid, signed, expires and sig")
    return members


def _params(text: str) -> dict[str, str] | None:
    """One member's parameters, trimmed of ``_OWS``; None when one is named twice (readers would
    disagree on it). A piece without ``=`` names nothing and is skipped."""
    params: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, item = part.partition("=")
        if not sep:
            continue
        name = name.strip(_OWS)
        if name in params:
            return None
        params[name] = item.strip(_OWS)
    return params


_OWS = " \t"  # HTTP's optional whitespace, and nothing else: a no-break space is text


@dataclass(frozen=True)
class Verdict:
    """What a launcher decides about one answer: accepted, or refused and why, with what it
    knows of the member it judged (None: not known at that rule)."""

    accepted: bool
    reason: str  # "accepted", or why it was refused (see ``verify``)
    key_id: str | None = None  # the key whose signature was checked
    signed: str | None = None
    expires: str | None = None
    order: str | None = None

    def __str__(self) -> str:
        head = "accepted" if self.accepted else f"refused: {self.reason}"
        known = [
            f"{name} {value}"
            for name, value in (
                ("key", self.key_id),
                ("signed", self.signed),
                ("expires", self.expires),
                ("order", self.order),
            )
            if value is not None
        ]
        return f"{head} ({', '.join(known)})" if known else head


def header_values(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[str]:
    """Every field line of ``HEADER`` in ``headers`` (names compared case-insensitively)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [value for name, value in items if name.lower() == HEADER.lower()]


def verify(
    body: bytes,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    public_keys: Sequence[Ed25519PublicKey],
    now: int,
    last_accepted_order: int | None = None,
    variant: str = "",
    skew_s: int = CLOCK_SKEW_SECS,
) -> Verdict:
    """The launcher's rules (docs/signed-feed.md), in order, on ``body`` as decoded.

    1. ``no signature``: no ``Craft-Apps-Signature`` member is well formed.
    2. ``unknown key``: no member names a pinned key's id.
    3. ``no order``: no member of a pinned key carries ``order`` and ``sig2``.
    4. ``bad signature``: no such member's ``sig2`` verifies over this body (a changed byte of
       the body, of ``signed``, ``expires`` or ``order``, or another ``variant``); the first
       member, in the header's order, whose ``sig2`` verifies is the one judged below.
    5. ``bad times``: ``signed`` or ``expires`` not ``YYYY-MM-DDTHH:MM:SSZ``, ``order`` not 1 to
       18 ASCII digits, or ``expires`` not after ``signed``.
    6. ``not yet valid``: ``signed`` is more than ``skew_s`` after ``now``.
    7. ``expired``: ``now`` is more than ``skew_s`` after ``expires``.
    8. ``rollback``: ``order`` is below ``last_accepted_order``, the highest order accepted before
       for this ``variant`` (orders of different variants are not compared).
    """
    try:
        members = parse_header(header_values(headers))
    except ValueError:
        return Verdict(False, "no signature")
    pinned = {key_id(public): public for public in public_keys}
    candidates = [member for member in members if member.key_id in pinned]
    if not candidates:
        return Verdict(False, "unknown key", key_id=members[0].key_id)
    ordered = [member for member in candidates if member.order is not None and member.sig2 is not None]
    if not ordered:
        return Verdict(False, "no order", key_id=candidates[0].key_id)
    good = next((m for m in ordered if _verifies_ordered(pinned[m.key_id], m, variant, body)), None)
    if good is None:
        return Verdict(False, "bad signature", key_id=ordered[0].key_id)
    found = (good.key_id, good.signed, good.expires, good.order)
    times = _times(good)
    if times is None or good.order is None or not _ORDER.fullmatch(good.order):
        return Verdict(False, "bad times", *found)
    refused = _refused_by_clock(times, now, skew_s)
    if refused is not None:
        return Verdict(False, refused, *found)
    if last_accepted_order is not None and int(good.order) < last_accepted_order:
        return Verdict(False, "rollback", *found)
    return Verdict(True, "accepted", *found)


def verify_v1(
    body: bytes,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    public_keys: Sequence[Ed25519PublicKey],
    now: int,
    last_accepted_signed: int | None = None,
    variant: str = "",
    skew_s: int = CLOCK_SKEW_SECS,
) -> Verdict:
    """The rules of a launcher built before ``order`` (v1, ``sig`` only), kept to show what it
    sees: as ``verify`` without rule 3, ``sig`` over ``message``, ``order`` never read, and rule 8
    by ``signed``: a ``rollback`` when it is more than one period (a third of ``expires -
    signed``) before ``last_accepted_signed``, the newest ``signed`` accepted before."""
    try:
        members = parse_header(header_values(headers))
    except ValueError:
        return Verdict(False, "no signature")
    pinned = {key_id(public): public for public in public_keys}
    candidates = [member for member in members if member.key_id in pinned]
    if not candidates:
        return Verdict(False, "unknown key", key_id=members[0].key_id)
    good = next((m for m in candidates if _verifies(pinned[m.key_id], m, variant, body)), None)
    if good is None:
        return Verdict(False, "bad signature", key_id=candidates[0].key_id)
    found = (good.key_id, good.signed, good.expires)
    times = _times(good)
    if times is None:
        return Verdict(False, "bad times", *found)
    refused = _refused_by_clock(times, now, skew_s)
    if refused is not None:
        return Verdict(False, refused, *found)
    signed, expires = times
    period = (expires - signed) // PERIODS_PER_WINDOW
    if last_accepted_signed is not None and signed < last_accepted_signed - period:
        return Verdict(False, "rollback", *found)
    return Verdict(True, "accepted", *found)


_ORDER = re.compile(r"[0-9]{1,18}")


def _times(member: Member) -> tuple[int, int] | None:
    """``signed`` and ``expires`` in Unix seconds; None when malformed or not in order."""
    try:
        signed, expires = parse_rfc3339(member.signed), parse_rfc3339(member.expires)
    except ValueError:
        return None
    return (signed, expires) if expires > signed else None


def _refused_by_clock(times: tuple[int, int], now: int, skew_s: int) -> str | None:
    signed, expires = times
    if signed > now + skew_s:
        return "not yet valid"
    if now > expires + skew_s:
        return "expired"
    return None


def _strict_b64(text: str) -> bytes:
    """Standard base64 with its padding and unused bits zero, nothing else (the documented
    form, the one every encoder writes): every reader then takes the same texts."""
    raw = base64.b64decode(text, validate=True) if _BASE64.fullmatch(text) else b""
    if not raw or base64.b64encode(raw).decode("ascii") != text:
        raise ValueError("not standard padded base64")
    return raw


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _verifies(public: Ed25519PublicKey, member: Member, variant: str, body: bytes) -> bool:
    return _check(
        public, member.sig, lambda: message(member.key_id, member.signed, member.expires, variant, body)
    )


def _verifies_ordered(public: Ed25519PublicKey, member: Member, variant: str, body: bytes) -> bool:
    order = member.order or ""
    return _check(
        public,
        member.sig2 or "",
        lambda: ordered_message(member.key_id, member.signed, member.expires, order, variant, body),
    )


def _check(public: Ed25519PublicKey, sig: str, signed_bytes: Callable[[], bytes]) -> bool:
    try:
        public.verify(_strict_b64(sig), signed_bytes())
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True
