"""The test vectors of docs/signed-feed.md: two fixed test keys, a body, and the verdict the
reference verifier gives in each case. ``render`` writes them as the page shows them."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from craft_apps.kernel import signing

# Test keys only: their private halves are published on the spec page.
KEY_A = signing.parse_private_key(base64.b64encode(bytes(range(32))).decode())
KEY_B = signing.parse_private_key(base64.b64encode(bytes(range(32, 64))).decode())
WINDOW_S = signing.DEFAULT_VALIDITY_SECS
SIGNED_AT = signing.parse_rfc3339("2026-01-01T00:00:00Z")  # the start of a period
EXPIRES_AT = SIGNED_AT + WINDOW_S
PERIOD_S = WINDOW_S // signing.PERIODS_PER_WINDOW
BODY = (
    b'{"success":true,"release_info":{"apps":{"photocraft":{"name":"PhotoCraft",'
    b'"repo":"storytold/photocraft","latest_release":null,"app_last_fetched":null}},'
    b'"last_fetched":null}}'
)
TAMPERED = BODY.replace(b"true", b"trve")
ORDER = (SIGNED_AT + 1800) * 1000 + 250  # the answer reflects 2026-01-01T00:30:00.250Z
CONFIG_A = signing.SigningConfig((KEY_A,), WINDOW_S)
HEADER_A = signing.sign(CONFIG_A, BODY, SIGNED_AT, order=ORDER)
HEADER_AB = signing.sign(signing.SigningConfig((KEY_A, KEY_B), WINDOW_S), BODY, SIGNED_AT, order=ORDER)
HEADER_V1 = signing.sign(CONFIG_A, BODY, SIGNED_AT)  # a server before order: v1 alone
# Key B's member of an older answer of the same body first, then key A's of the newer one.
HEADER_B_OLDER_FIRST = ", ".join(
    (
        signing.sign(signing.SigningConfig((KEY_B,), WINDOW_S), BODY, SIGNED_AT, order=ORDER - 60_000),
        HEADER_A,
    )
)
_SIG2 = HEADER_A.rsplit("sig2=", 1)[1]
_SIG = HEADER_A.split("; sig=", 1)[1].split(";", 1)[0]
ORDER_19_DIGITS = str(ORDER) + "000000"  # fits in 64 bits, yet one digit too many


def _tabbed(header: str) -> str:
    """``header`` with tabs around every name and value (what is signed is the text without)."""
    pieces = (piece.partition("=") for piece in header.split("; "))
    return "\t;\t".join(f"{name}\t=\t{value}" for name, _, value in pieces)


def member_with(**changes: str) -> str:
    """Key A's member with its parameters changed, signed anew over what it then says."""
    signed, expires = signing.rfc3339(SIGNED_AT), signing.rfc3339(EXPIRES_AT)
    params = {"keyid": KEY_A.key_id, "signed": signed, "expires": expires, "order": str(ORDER)}
    params.update(changes)
    text = signing.ordered_message(
        params["keyid"], params["signed"], params["expires"], params["order"], "", BODY
    )
    sig2 = base64.b64encode(KEY_A.private.sign(text)).decode()
    member = HEADER_A.split("; order=")[0].replace(f"signed={signed}", f"signed={params['signed']}")
    return f"{member}; order={params['order']}; sig2={sig2}"


@dataclass(frozen=True)
class Vector:
    name: str
    body: bytes
    header: str
    pinned: tuple[str, ...]  # "A", "B"
    now: int
    last_accepted: int | None  # an order (v2), a signed time (v1)
    variant: str
    reason: str  # the verdict expected
    rules: str = "v2"  # "v1": a launcher built before order (``verify_v1``)

    def verdict(self) -> signing.Verdict:
        keys = [{"A": KEY_A, "B": KEY_B}[name].public for name in self.pinned]
        headers = [(signing.HEADER, self.header)]
        check = signing.verify if self.rules == "v2" else signing.verify_v1
        return check(self.body, headers, keys, self.now, self.last_accepted, self.variant)


HOUR = 3600
NOW = SIGNED_AT + HOUR
VECTORS = (
    Vector("good", BODY, HEADER_A, ("A",), NOW, None, "", "accepted"),
    Vector("tampered byte", TAMPERED, HEADER_A, ("A",), NOW, None, "", "bad signature"),
    Vector("unknown key", BODY, HEADER_A, ("B",), NOW, None, "", "unknown key"),
    Vector("expired", BODY, HEADER_A, ("A",), EXPIRES_AT + signing.CLOCK_SKEW_SECS + 1, None, "", "expired"),
    Vector("lower order", BODY, HEADER_A, ("A",), NOW, ORDER + 1, "", "rollback"),
    Vector("same order", BODY, HEADER_A, ("A",), NOW, ORDER, "", "accepted"),
    Vector("two keys, B pinned", BODY, HEADER_AB, ("B",), NOW, None, "", "accepted"),
    Vector("another variant", BODY, HEADER_A, ("A",), NOW, None, "beta", "bad signature"),
    Vector(
        "order changed", BODY, HEADER_A.replace(f"order={ORDER}", f"order={ORDER + 1}"),
        ("A",), NOW, None, "", "bad signature",
    ),
    Vector("no order (v1 alone)", BODY, HEADER_V1, ("A",), NOW, None, "", "no order"),
    Vector("v1 rules, new header", BODY, HEADER_A, ("A",), NOW, None, "", "accepted", "v1"),
    Vector(
        "v1 rules, two periods back", BODY, HEADER_A,
        ("A",), NOW, SIGNED_AT + 2 * PERIOD_S, "", "rollback", "v1",
    ),
    Vector(
        "two pinned keys: the first counts", BODY, HEADER_B_OLDER_FIRST,
        ("A", "B"), NOW, ORDER, "", "rollback",
    ),
    Vector(
        "a parameter twice", BODY, HEADER_A.replace("; sig=", f"; order={ORDER}; sig=", 1),
        ("A",), NOW, None, "", "no signature",
    ),
    Vector(
        "upper-case name", BODY, HEADER_A.replace("keyid=", "KEYID="),
        ("A",), NOW, None, "", "no signature",
    ),
    Vector(
        "quoted value", BODY, HEADER_A.replace(f"sig2={_SIG2}", f'sig2="{_SIG2}"'),
        ("A",), NOW, None, "", "bad signature",
    ),
    Vector(
        "unpadded base64", BODY, HEADER_A.replace(f"sig2={_SIG2}", f"sig2={_SIG2.rstrip('=')}"),
        ("A",), NOW, None, "", "bad signature",
    ),
    Vector(
        "URL-safe base64", BODY,
        HEADER_A.replace(f"sig2={_SIG2}", "sig2=" + _SIG2.translate(str.maketrans("+/", "-_"))),
        ("A",), NOW, None, "", "bad signature",
    ),
    Vector(
        "malformed time", BODY, member_with(signed="2026-01-01 00:00:00Z"),
        ("A",), NOW, None, "", "bad times",
    ),
    Vector(
        "no sig", BODY, HEADER_A.replace(f"; sig={_SIG}", ""),
        ("A",), NOW, None, "", "no signature",
    ),
    Vector(
        "19-digit order", BODY, member_with(order=ORDER_19_DIGITS),
        ("A",), NOW, None, "", "bad times",
    ),
    Vector(
        "v1 rules, 19-digit order", BODY, member_with(order=ORDER_19_DIGITS),
        ("A",), NOW, None, "", "accepted", "v1",
    ),
    Vector("tabs", BODY, _tabbed(HEADER_A), ("A",), NOW, None, "", "accepted"),
    Vector(
        "a piece without =", BODY, HEADER_A.replace("; order=", "; draft; order="),
        ("A",), NOW, None, "", "accepted",
    ),
    Vector(
        "an unknown parameter twice", BODY, HEADER_A + "; note=a; note=b",
        ("A",), NOW, None, "", "no signature",
    ),
)  # fmt: skip


def _when(unix_s: int | None) -> str:
    return "none" if unix_s is None else signing.rfc3339(unix_s)


def _last(vector: Vector) -> str:
    if vector.last_accepted is None:
        return "none"
    if vector.rules == "v1":
        return f"signed {signing.rfc3339(vector.last_accepted)}"
    return f"order {vector.last_accepted}"


def render_keys() -> str:
    lines = []
    for name, key in (("A", KEY_A), ("B", KEY_B)):
        lines += [
            f"key {name} private: {signing.private_key_text(key)}",
            f"key {name} public:  {signing.public_key_text(key.public)}",
            f"key {name} id:      {key.key_id}",
        ]
    return "\n".join(lines)


def render_messages() -> tuple[str, str]:
    """What key A signs for the body (vector "good"), one line each: for ``sig2``, for ``sig``."""
    signed, expires = signing.rfc3339(SIGNED_AT), signing.rfc3339(EXPIRES_AT)
    v2 = signing.ordered_message(KEY_A.key_id, signed, expires, str(ORDER), "", BODY)
    v1 = signing.message(KEY_A.key_id, signed, expires, "", BODY)
    return v2.decode("ascii").rstrip("\n"), v1.decode("ascii").rstrip("\n")


def render_vector(vector: Vector) -> str:
    """One vector as the page shows it: a line left out has the value ``DEFAULTS`` gives it."""
    lines = [
        ("vector", vector.name),
        ("body", "body" if vector.body == BODY else "tampered body"),
        ("header", f"{signing.HEADER}: {vector.header}".replace("\t", "\\t")),
        ("pinned", ", ".join(vector.pinned)),
        ("now", _when(vector.now)),
        ("rules", vector.rules),
        ("last accepted", _last(vector)),
        ("variant", vector.variant or "(default)"),
        ("verdict", vector.verdict().reason),
    ]
    return "\n".join(_line(name, value) for name, value in lines if DEFAULTS.get(name) != value)


def _line(name: str, value: str) -> str:
    return f"{name + ':':<15}{value}"


DEFAULTS = {
    "body": "body",
    "pinned": "A",
    "now": _when(NOW),
    "rules": "v2",
    "last accepted": "none",
    "variant": "(default)",
}


def render() -> str:
    """The vectors as docs/signed-feed.md shows them (each a ```text block)."""
    blocks = [render_keys(), "body:\n" + BODY.decode(), "tampered body:\n" + TAMPERED.decode()]
    blocks.extend(render_messages())
    blocks.append("\n".join(["defaults:", *(_line(name, value) for name, value in DEFAULTS.items())]))
    blocks += [render_vector(vector) for vector in VECTORS]
    return "\n\n".join(f"```text\n{block}\n```" for block in blocks)


if __name__ == "__main__":
    print(render())
