"""The answer's Ed25519 signature: keys, the signed message, signing and the reference verifier.

Pure functions over bytes and integers (no Django, no settings, no clock), so that a launcher's
author can read this module alone; ``docs/signed-feed.md`` is its specification, with test
vectors the suite computes with ``verify``. The primitives are pyca ``cryptography``'s.

- **Keys.** A private key is the 32-byte Ed25519 seed in base64 (the form ``craft_apps_keys
  generate`` prints), the 64-byte seed-and-public-key form libsodium and ed25519-dalek write,
  or a PKCS#8 PEM (``openssl genpkey -algorithm ed25519``). A public key is its 32 raw bytes in
  base64, or a SubjectPublicKeyInfo PEM. A key's id is the first 8 bytes of the SHA-256 of the
  raw public key, in hex. Errors never quote the key: they name what is wrong with it.
- **The message** signed for one key is ASCII lines, each ending in ``\\n``: the context
  ``craft-apps-release-info-signature-v1``, then ``keyid:``, ``signed:``, ``expires:``,
  ``variant:`` (empty for the default answer) and ``sha256:`` (the hex SHA-256 of the JSON body
  as sent before any content coding), each followed by its value.
- **The header** ``Craft-Apps-Signature`` holds one member per signing key, separated by
  commas; a member is ``keyid=…; signed=…; expires=…; sig=…`` (``sig``: the 64-byte signature
  in base64). Instants are RFC 3339 UTC to the second.
- **Time.** ``signed`` is the start of the current period, a third of the validity window
  (``period_start``), and ``expires`` is ``signed`` plus the window: every host holding the same
  answer in the same period sends the same header (Ed25519 is deterministic), and an answer
  always has at least two thirds of the window left when it is sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

HEADER = "Craft-Apps-Signature"
CONTEXT = "craft-apps-release-info-signature-v1"
DEFAULT_VALIDITY_SECS = 3 * 86_400
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
    """The bytes one key signs (see the module's rules)."""
    lines = (
        CONTEXT,
        f"keyid:{key_id}",
        f"signed:{signed}",
        f"expires:{expires}",
        f"variant:{variant}",
        f"sha256:{hashlib.sha256(body).hexdigest()}",
    )
    return "".join(line + "\n" for line in lines).encode("ascii")


def sign(config: SigningConfig, body: bytes, signed_at: int, variant: str = "") -> str:
    """The ``Craft-Apps-Signature`` value for ``body`` signed at ``signed_at`` by every key."""
    signed, expires = rfc3339(signed_at), rfc3339(signed_at + config.window_s)
    members = []
    for key in config.keys:
        signature = key.private.sign(message(key.key_id, signed, expires, variant, body))
        sig = base64.b64encode(signature).decode("ascii")
        members.append(f"keyid={key.key_id}; signed={signed}; expires={expires}; sig={sig}")
    return ", ".join(members)


@dataclass(frozen=True)
class Member:
    """One key's signature as the header carries it."""

    key_id: str
    signed: str
    expires: str
    sig: str


def parse_header(values: Iterable[str]) -> list[Member]:
    """Every well-formed member of the header's field lines; ``ValueError`` when none is."""
    members: list[Member] = []
    for value in values:
        for text in value.split(","):
            params: dict[str, str] = {}
            for part in text.split(";"):
                name, sep, item = part.strip().partition("=")
                if sep:
                    params.setdefault(name.strip().lower(), item.strip().strip('"'))
            if all(name in params for name in ("keyid", "signed", "expires", "sig")):
                members.append(Member(params["keyid"], params["signed"], params["expires"], params["sig"]))
    if not members:
        raise ValueError("no member with keyid, signed, expires and sig")
    return members


@dataclass(frozen=True)
class Verdict:
    """What a launcher decides about one answer: accepted, or refused and why."""

    accepted: bool
    reason: str  # "accepted", or why it was refused (see ``verify``)
    key_id: str | None = None  # the key whose signature was checked
    signed: str | None = None
    expires: str | None = None

    def __str__(self) -> str:
        head = "accepted" if self.accepted else f"refused: {self.reason}"
        if self.key_id is None:
            return head
        return f"{head} (key {self.key_id}, signed {self.signed}, expires {self.expires})"


def header_values(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[str]:
    """Every field line of ``HEADER`` in ``headers`` (names compared case-insensitively)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [value for name, value in items if name.lower() == HEADER.lower()]


def verify(
    body: bytes,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    public_keys: Sequence[Ed25519PublicKey],
    now: int,
    last_accepted_signed: int | None = None,
    variant: str = "",
    skew_s: int = CLOCK_SKEW_SECS,
) -> Verdict:
    """The launcher's rules (docs/signed-feed.md), in order, on ``body`` as decoded.

    1. ``no signature``: no ``Craft-Apps-Signature`` member is well formed.
    2. ``unknown key``: no member names a pinned key's id.
    3. ``bad signature``: no member of a pinned key verifies over this body (a changed byte of
       the body, of ``signed`` or ``expires``, or another ``variant`` than the one asked for).
    4. ``bad times``: ``expires`` is not after ``signed``.
    5. ``not yet valid``: ``signed`` is more than ``skew_s`` after ``now``.
    6. ``expired``: ``now`` is more than ``skew_s`` after ``expires``.
    7. ``rollback``: ``signed`` is more than one period (a third of ``expires - signed``) before
       ``last_accepted_signed``, the newest ``signed`` this launcher accepted before.
    """
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
        first = candidates[0]
        return Verdict(False, "bad signature", first.key_id, first.signed, first.expires)
    found = (good.key_id, good.signed, good.expires)
    signed, expires = parse_rfc3339(good.signed), parse_rfc3339(good.expires)  # verified: well formed
    if expires <= signed:
        return Verdict(False, "bad times", *found)
    if signed > now + skew_s:
        return Verdict(False, "not yet valid", *found)
    if now > expires + skew_s:
        return Verdict(False, "expired", *found)
    period = (expires - signed) // PERIODS_PER_WINDOW
    if last_accepted_signed is not None and signed < last_accepted_signed - period:
        return Verdict(False, "rollback", *found)
    return Verdict(True, "accepted", *found)


def _verifies(public: Ed25519PublicKey, member: Member, variant: str, body: bytes) -> bool:
    try:
        parse_rfc3339(member.signed), parse_rfc3339(member.expires)
        signature = _b64decode(member.sig)
        public.verify(signature, message(member.key_id, member.signed, member.expires, variant, body))
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True
