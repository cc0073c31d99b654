"""The test vectors of docs/signed-feed.md: two fixed test keys, a body, and the verdict the
reference verifier gives in each case. ``render`` writes them as the page shows them."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from craft_apps import signing

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
HEADER_A = signing.sign(signing.SigningConfig((KEY_A,), WINDOW_S), BODY, SIGNED_AT)
HEADER_AB = signing.sign(signing.SigningConfig((KEY_A, KEY_B), WINDOW_S), BODY, SIGNED_AT)


@dataclass(frozen=True)
class Vector:
    name: str
    body: bytes
    header: str
    pinned: tuple[str, ...]  # "A", "B"
    now: int
    last_accepted: int | None
    variant: str
    reason: str  # the verdict expected

    def verdict(self) -> signing.Verdict:
        keys = [{"A": KEY_A, "B": KEY_B}[name].public for name in self.pinned]
        headers = [(signing.HEADER, self.header)]
        return signing.verify(self.body, headers, keys, self.now, self.last_accepted, self.variant)


HOUR = 3600
VECTORS = (
    Vector("good", BODY, HEADER_A, ("A",), SIGNED_AT + HOUR, None, "", "accepted"),
    Vector("tampered byte", TAMPERED, HEADER_A, ("A",), SIGNED_AT + HOUR, None, "", "bad signature"),
    Vector("unknown key", BODY, HEADER_A, ("B",), SIGNED_AT + HOUR, None, "", "unknown key"),
    Vector("expired", BODY, HEADER_A, ("A",), EXPIRES_AT + signing.CLOCK_SKEW_SECS + 1, None, "", "expired"),
    Vector("rollback", BODY, HEADER_A, ("A",), SIGNED_AT + HOUR, SIGNED_AT + 2 * PERIOD_S, "", "rollback"),
    Vector("one period back", BODY, HEADER_A, ("A",), SIGNED_AT + HOUR, SIGNED_AT + PERIOD_S, "", "accepted"),
    Vector("two keys, B pinned", BODY, HEADER_AB, ("B",), SIGNED_AT + HOUR, None, "", "accepted"),
    Vector("another variant", BODY, HEADER_A, ("A",), SIGNED_AT + HOUR, None, "beta", "bad signature"),
)


def _when(unix_s: int | None) -> str:
    return "none" if unix_s is None else signing.rfc3339(unix_s)


def render_keys() -> str:
    lines = []
    for name, key in (("A", KEY_A), ("B", KEY_B)):
        lines += [
            f"key {name} private: {signing.private_key_text(key)}",
            f"key {name} public:  {signing.public_key_text(key.public)}",
            f"key {name} id:      {key.key_id}",
        ]
    return "\n".join(lines)


def render_message() -> str:
    """What key A signs for the body (vector "good"), one line each."""
    signed, expires = signing.rfc3339(SIGNED_AT), signing.rfc3339(EXPIRES_AT)
    return signing.message(KEY_A.key_id, signed, expires, "", BODY).decode("ascii").rstrip("\n")


def render_vector(vector: Vector) -> str:
    body = "body" if vector.body == BODY else "tampered body"
    return "\n".join(
        (
            f"vector:        {vector.name}",
            f"body:          {body}",
            f"header:        {signing.HEADER}: {vector.header}",
            f"pinned:        {', '.join(vector.pinned)}",
            f"now:           {_when(vector.now)}",
            f"last accepted: {_when(vector.last_accepted)}",
            f"variant:       {vector.variant or '(default)'}",
            f"verdict:       {vector.verdict().reason}",
        )
    )


def render() -> str:
    """The vectors as docs/signed-feed.md shows them (each a ```text block)."""
    blocks = [render_keys(), "body:\n" + BODY.decode(), "tampered body:\n" + TAMPERED.decode()]
    blocks.append(render_message())
    blocks += [render_vector(vector) for vector in VECTORS]
    return "\n\n".join(f"```text\n{block}\n```" for block in blocks)


if __name__ == "__main__":
    print(render())
