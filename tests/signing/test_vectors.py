"""docs/signed-feed.md's test vectors: each verdict computed by the reference verifier, the
page showing them as they are, and a changed byte anywhere refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from craft_apps import signing
from tests.signing import vectors
from tests.signing.vectors import BODY, HEADER_A, KEY_A, KEY_B, SIGNED_AT, VECTORS, Vector

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
            # base64's last character carries padding bits a decoder may ignore: the same bytes.
            if verdict.accepted:
                assert signing._b64decode(header.rsplit("sig=", 1)[1]) == signing._b64decode(
                    HEADER_A.rsplit("sig=", 1)[1]
                ), (position, replacement)
                continue
            assert verdict.reason in {"bad signature", "unknown key", "no signature"}, (position, header)


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
    assert reason(SIGNED_AT, last=SIGNED_AT) == "accepted"
    assert reason(SIGNED_AT, last=SIGNED_AT - 10 * vectors.PERIOD_S) == "accepted"  # newer than last
    assert reason(SIGNED_AT, last=SIGNED_AT + vectors.PERIOD_S + 1) == "rollback"
    backwards = signing.sign(signing.SigningConfig((KEY_A,), -60), BODY, SIGNED_AT)
    verdict = signing.verify(BODY, [(signing.HEADER, backwards)], [KEY_A.public], SIGNED_AT)
    assert verdict.reason == "bad times"


def test_no_header_a_garbled_one_and_the_second_of_two_keys():
    now = SIGNED_AT + 60
    assert signing.verify(BODY, {}, [KEY_A.public], now).reason == "no signature"
    assert signing.verify(BODY, {"craft-apps-signature": "garbage"}, [KEY_A.public], now).reason == (
        "no signature"
    )
    two = signing.sign(signing.SigningConfig((KEY_A, KEY_B), vectors.WINDOW_S), BODY, SIGNED_AT)
    # Names are compared case-insensitively, and a mapping works as well as a list of lines.
    for pinned in ([KEY_A.public], [KEY_B.public], [KEY_B.public, KEY_A.public]):
        assert signing.verify(BODY, {"CRAFT-APPS-SIGNATURE": two}, pinned, now).accepted
    # The two members as two field lines, as a proxy may split them.
    lines = [(signing.HEADER, member) for member in two.split(", ")]
    assert signing.verify(BODY, lines, [KEY_B.public], now).accepted
