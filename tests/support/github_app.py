"""A GitHub App's RSA key for the tests: the key object and its PKCS#8 PEM, as GitHub hands
one out (made once per test session; 2048 bits, as GitHub's)."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

APP_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
APP_PEM = APP_KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
).decode()
