"""The key forms ``SIGNING_KEY`` takes, the checks naming a bad one (never its value), and
``craft_apps_keys``."""

from __future__ import annotations

import base64
import io
import logging
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519
from django.core.management import CommandError, call_command

from craft_apps.checks import configuration_problems
from craft_apps.conf import app_settings
from craft_apps.kernel import signing
from tests.signing.vectors import KEY_A, KEY_B

SEED_A = bytes(range(32))


def pem(private: ec.EllipticCurvePrivateKey | ed448.Ed448PrivateKey | ed25519.Ed25519PrivateKey) -> str:
    return private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_every_form_of_a_key_reads_as_the_same_key():
    raw = ed25519.Ed25519PrivateKey.from_private_bytes(SEED_A)
    public = raw.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    forms = [
        base64.b64encode(SEED_A).decode(),
        base64.urlsafe_b64encode(SEED_A).decode().rstrip("="),
        " " + base64.b64encode(SEED_A).decode() + "\n",
        base64.b64encode(SEED_A + public).decode(),  # libsodium's and dalek's 64 bytes
        pem(raw),
    ]
    assert {signing.parse_private_key(form).key_id for form in forms} == {KEY_A.key_id}
    assert signing.parse_public_key(signing.public_key_text(KEY_A.public)) == KEY_A.public
    spki = KEY_A.public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert signing.parse_public_key(spki.decode()) == KEY_A.public
    assert repr(KEY_A) == f"SigningKey(key_id='{KEY_A.key_id}')"  # no private key in a repr


BAD_KEYS = [
    ("not base64 !", signing.MALFORMED),
    (base64.b64encode(b"x" * 31).decode(), signing.MALFORMED),
    (base64.b64encode(SEED_A + bytes(32)).decode(), signing.MALFORMED),  # a wrong public half
    ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", signing.MALFORMED),
    (pem(ec.generate_private_key(ec.SECP256R1())), signing.NOT_ED25519),
    (pem(ed448.Ed448PrivateKey.generate()), signing.NOT_ED25519),
    (base64.b64encode(bytes(57)).decode(), signing.NOT_ED25519),
]


@pytest.mark.parametrize(("value", "problem"), BAD_KEYS)
def test_a_bad_key_says_what_is_wrong_without_quoting_it(value: str, problem: str):
    with pytest.raises(signing.UnusableKey) as raised:
        signing.parse_private_key(value)
    assert raised.value.problem == problem
    error = raised.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    body = value.strip().splitlines()[1 if value.startswith("-----") else 0]
    assert body not in str(raised.value)


def test_the_checks_name_each_setting_and_never_the_value(settings, state_dir: Path, caplog):
    secret_looking = base64.b64encode(b"s3cret-but-31-bytes-long-......").decode()
    ec_pem = pem(ec.generate_private_key(ec.SECP256R1()))
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "SIGNING_KEY": secret_looking,
        "SIGNING_KEY_PREVIOUS": ec_pem,
        "SIGNING_VALIDITY_SECS": 600,
    }
    with caplog.at_level(logging.DEBUG):
        found = {f.id: f for f in configuration_problems()}
    assert app_settings.SIGNING is None  # neither key signs
    assert "SIGNING_KEY'" in found["craft_apps.E141"].msg and "31 bytes" in found["craft_apps.E141"].msg
    assert "SIGNING_KEY_PREVIOUS" in found["craft_apps.E142"].msg
    assert "ECPrivateKey, not Ed25519" in found["craft_apps.E142"].msg
    assert "SIGNING_VALIDITY_SECS" in found["craft_apps.W141"].msg and "1800" in found["craft_apps.W141"].msg
    everything = " ".join(f"{f.msg} {f.hint}" for f in found.values()) + caplog.text
    assert secret_looking not in everything
    assert not any(line in everything for line in ec_pem.splitlines()[1:-1])
    # The window is raised to the interval; a good previous key alone signs.
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY_PREVIOUS": signing.private_key_text(KEY_B)}
    config = app_settings.SIGNING
    assert config is not None and config.fingerprint == (1800, (KEY_B.key_id,))


def test_a_key_given_twice_signs_once_and_blank_means_none(settings, state_dir: Path):
    text = signing.private_key_text(KEY_A)
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "SIGNING_KEY": text, "SIGNING_KEY_PREVIOUS": text}
    config = app_settings.SIGNING
    assert config is not None and config.fingerprint == (signing.DEFAULT_VALIDITY_SECS, (KEY_A.key_id,))
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "SIGNING_KEY": "  "}
    assert app_settings.SIGNING is None and configuration_problems() == []


def test_the_environment_variables(settings, state_dir: Path, monkeypatch):
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir)}
    monkeypatch.setenv("CRAFT_APPS_SIGNING_KEY", signing.private_key_text(KEY_B))
    monkeypatch.setenv("CRAFT_APPS_SIGNING_KEY_PREVIOUS", signing.private_key_text(KEY_A))
    monkeypatch.setenv("CRAFT_APPS_SIGNING_VALIDITY_SECS", "7200")
    config = app_settings.SIGNING
    assert config is not None and config.fingerprint == (7200, (KEY_B.key_id, KEY_A.key_id))


def test_generate_prints_a_new_key_once_to_stdout_only(tmp_path: Path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.DEBUG):
        call_command("craft_apps_keys", "generate", stdout=out, stderr=err)
    lines = dict(line.split(":", 1) for line in out.getvalue().splitlines() if ":" in line)
    key = signing.parse_private_key(lines["private key"].strip())
    assert signing.public_key_text(key.public) == lines["public key"].strip()
    assert key.key_id == lines["key id"].strip()
    assert out.getvalue().count(lines["private key"].strip()) == 1
    assert err.getvalue() == "" and list(tmp_path.iterdir()) == []
    assert lines["private key"].strip() not in caplog.text


def test_show_prints_the_public_keys_and_ids_never_the_private_ones(settings, state_dir: Path):
    private_a, private_b = signing.private_key_text(KEY_A), signing.private_key_text(KEY_B)
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "SIGNING_KEY": private_b,
        "SIGNING_KEY_PREVIOUS": private_a,
    }
    out = io.StringIO()
    call_command("craft_apps_keys", "show", stdout=out)
    text = out.getvalue()
    assert f"SIGNING_KEY: key id {KEY_B.key_id}, public key {signing.public_key_text(KEY_B.public)}" in text
    assert f"SIGNING_KEY_PREVIOUS: key id {KEY_A.key_id}" in text
    assert private_a not in text and private_b not in text
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir)}
    out = io.StringIO()
    call_command("craft_apps_keys", "show", stdout=out)
    assert "No signing key is set" in out.getvalue()
    settings.CRAFT_APPS = {"STATE_DIR": str(state_dir), "SIGNING_KEY": private_a[:-8]}
    with pytest.raises(CommandError) as raised:
        call_command("craft_apps_keys", "show", stdout=io.StringIO())
    assert "is not a usable Ed25519 private key" in str(raised.value)
    assert private_a[:-8] not in str(raised.value)
