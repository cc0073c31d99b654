"""docs/signed-feed.md's test vectors: each verdict computed by the reference verifier, the
page showing them as they are, and a changed byte anywhere refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from craft_apps.kernel import signing
from tests.signing import vectors
from tests.signing.vectors import (
    BODY,
    HEADER_A,
    HEADER_AB,
    KEY_A,
    KEY_B,
    ORDER,
    ORDER_19_DIGITS,
    SIGNED_AT,
    VECTORS,
    Vector,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "signed-feed.md"


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_each_vector_gets_its_verdict(vector: Vector):
    verdict = vector.verdict()
    assert verdict.reason == vector.reason
    assert verdict.accepted is (vector.reason == "accepted")


def test_the_page_shows_the_vectors_as_they_are():
    assert vectors.render() in PAGE.read_text(encoding="utf-8")


def test_a_changed_byte_anywhere_in_the_body_is_refused():
    now = SIGNED_AT + 60
    headers = [(signing.HEADER, HEADER_A)]
    assert signing.verify(BODY, headers, [KEY_A.public], now).accepted
    for position in range(len(BODY)):
        for flip in (0x01, 0x80):
            changed = bytearray(BODY)
            changed[position] ^= flip
            verdict = signing.verify(bytes(changed), headers, [KEY_A.public], now)
            assert verdict.reason == "bad signature", (position, flip)
    assert signing.verify(BODY + b" ", headers, [KEY_A.public], now).reason == "bad signature"
    assert signing.verify(BODY[:-1], headers, [KEY_A.public], now).reason == "bad signature"


def test_a_changed_character_anywhere_in_the_header_is_refused():
    """Each character of the signed times and of the signature; a changed key id is unknown."""
    now = SIGNED_AT + 60
    for position, character in enumerate(HEADER_A):
        for replacement in {"0", "A", "9", "+"} - {character}:
            header = HEADER_A[:position] + replacement + HEADER_A[position + 1 :]
            verdict = signing.verify(BODY, [(signing.HEADER, header)], [KEY_A.public], now)
            # ``sig`` (v1) is not what this verifier checks; ``sig2``'s unused bits must be zero.
            if verdict.accepted:
                assert header.index("sig=") <= position < header.index("; order="), (position, header)
                continue
            assert verdict.reason in {"bad signature", "unknown key", "no signature", "no order"}, (
                position,
                header,
            )


def test_times_and_clock_skew():
    headers = [(signing.HEADER, HEADER_A)]
    expires = SIGNED_AT + vectors.WINDOW_S
    skew = signing.CLOCK_SKEW_SECS

    def reason(now: int, last: int | None = None) -> str:
        return signing.verify(BODY, headers, [KEY_A.public], now, last).reason

    assert reason(SIGNED_AT - skew) == "accepted"  # a launcher's clock a little behind
    assert reason(SIGNED_AT - skew - 1) == "not yet valid"
    assert reason(expires + skew) == "accepted"
    assert reason(expires + skew + 1) == "expired"
    assert reason(SIGNED_AT, last=ORDER) == "accepted"
    assert reason(SIGNED_AT, last=ORDER - 10**9) == "accepted"  # newer than last
    assert reason(SIGNED_AT, last=ORDER + 1) == "rollback"
    backwards = signing.sign(signing.SigningConfig((KEY_A,), -60), BODY, SIGNED_AT, order=ORDER)
    verdict = signing.verify(BODY, [(signing.HEADER, backwards)], [KEY_A.public], SIGNED_AT)
    assert verdict.reason == "bad times"


def test_an_older_answer_of_a_later_period_is_refused_by_order_alone():
    """The replay the v1 rule let through: an answer of an older order, signed in a later period
    (a host's answer kept by an attacker through a period's start), is refused; v1 accepts it."""
    config = signing.SigningConfig((KEY_A,), vectors.WINDOW_S)
    later = SIGNED_AT + vectors.PERIOD_S
    old = [(signing.HEADER, signing.sign(config, BODY, later, order=ORDER - 1))]
    assert signing.verify(BODY, old, [KEY_A.public], later + 60, ORDER).reason == "rollback"
    assert signing.verify_v1(BODY, old, [KEY_A.public], later + 60, SIGNED_AT).reason == "accepted"


def test_no_header_a_garbled_one_and_the_second_of_two_keys():
    now = SIGNED_AT + 60
    assert signing.verify(BODY, {}, [KEY_A.public], now).reason == "no signature"
    assert signing.verify(BODY, {"craft-apps-signature": "garbage"}, [KEY_A.public], now).reason == (
        "no signature"
    )
    two = signing.sign(signing.SigningConfig((KEY_A, KEY_B), vectors.WINDOW_S), BODY, SIGNED_AT, order=ORDER)
    # Names are compared case-insensitively, and a mapping works as well as a list of lines.
    for pinned in ([KEY_A.public], [KEY_B.public], [KEY_B.public, KEY_A.public]):
        assert signing.verify(BODY, {"CRAFT-APPS-SIGNATURE": two}, pinned, now).accepted
    # The two members as two field lines, as a proxy may split them.
    lines = [(signing.HEADER, member) for member in two.split(", ")]
    assert signing.verify(BODY, lines, [KEY_B.public], now).accepted


def test_a_refusal_says_only_what_it_knows():
    """``craft_apps_verify`` prints the verdict: no ``signed None`` on a refusal before the times."""
    now = SIGNED_AT + 60
    unknown = signing.verify(BODY, [(signing.HEADER, HEADER_A)], [KEY_B.public], now)
    assert str(unknown) == f"refused: unknown key (key {KEY_A.key_id})"
    assert str(signing.verify(BODY, {}, [KEY_A.public], now)) == "refused: no signature"
    good = str(signing.verify(BODY, [(signing.HEADER, HEADER_A)], [KEY_A.public], now))
    times = "signed 2026-01-01T00:00:00Z, expires 2026-01-04T00:00:00Z"
    assert good == f"accepted (key {KEY_A.key_id}, {times}, order {ORDER})"
    assert "None" not in "".join(str(vector.verdict()) for vector in VECTORS)


_MEMBER = re.compile(
    r"keyid=[0-9a-f]{16}; signed=\S+Z; expires=\S+Z; sig=[A-Za-z0-9+/]{86}==;"
    r" order=(?:0|[1-9][0-9]{0,17}); sig2=[A-Za-z0-9+/]{86}=="
)


def test_the_server_writes_the_documented_form():
    """Six parameters in order, ``; `` between them, ``, `` between members, no other whitespace,
    and an order without leading zeros (0 when the answer reflects nothing yet)."""
    for order in (ORDER, 0, 10**18 - 1):
        header = signing.sign(
            signing.SigningConfig((KEY_A, KEY_B), vectors.WINDOW_S), BODY, SIGNED_AT, "", order
        )
        members = header.split(", ")
        assert len(members) == 2
        assert all(_MEMBER.fullmatch(member) for member in members), header


def _reason(header: str, pinned: tuple[signing.SigningKey, ...] = (KEY_A,), last: int | None = None) -> str:
    keys = [key.public for key in pinned]
    return signing.verify(BODY, [(signing.HEADER, header)], keys, SIGNED_AT + 60, last).reason


def test_only_spaces_and_tabs_around_names_and_values_are_dropped():
    assert _reason(HEADER_A.replace("; ", " \t ;\t \t")) == "accepted"
    for other in ("\xa0", "\v", "\f", "\u2003"):
        assert _reason(HEADER_A.replace("keyid=", f"keyid={other}")) == "unknown key", repr(other)
        assert _reason(HEADER_A.replace("keyid=", f"{other}keyid=")) == "no signature", repr(other)


def test_empty_pieces_and_members_are_skipped():
    assert _reason(HEADER_A.replace("; order=", ";; ; order=")) == "accepted"
    assert _reason(", " + HEADER_A + ",") == "accepted"


def test_a_member_without_sig_counts_at_no_rule():
    """Key A's member without ``sig`` before key B's whole one: A pinned finds no member of its key."""
    without_sig = vectors.VECTORS[[v.name for v in vectors.VECTORS].index("no sig")].header
    b_member = HEADER_AB.split(", ")[1]
    assert _reason(f"{without_sig}, {b_member}") == "unknown key"
    assert _reason(f"{without_sig}, {b_member}", (KEY_A, KEY_B)) == "accepted"


def test_an_order_is_the_number_its_digits_write():
    """Leading zeros, which the server never writes, change nothing; 18 digits are the most."""
    padded = vectors.member_with(order=f"000{ORDER}")
    assert _reason(padded, last=ORDER) == "accepted"
    assert _reason(padded, last=ORDER + 1) == "rollback"
    assert _reason(vectors.member_with(order="9" * 18), last=ORDER) == "accepted"
    for bad in ("", "+1", "-1", "1e3", "0x10", "1 2"):
        assert _reason(vectors.member_with(order=bad)) == "bad times", bad


def test_a_v1_launcher_never_reads_order():
    for order in ("x", "", ORDER_19_DIGITS):
        header = vectors.member_with(order=order)
        assert signing.verify_v1(BODY, [(signing.HEADER, header)], [KEY_A.public], SIGNED_AT + 60).accepted
