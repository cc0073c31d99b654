"""Real minisign signatures made as Tauri makes them, with Debian's ``minisign`` (``.ci/setup``
installs it for development).

Tauri's signer (``tauri signer sign``, and the bundler with ``createUpdaterArtifacts``) writes
a minisign signature of the file, prehashed (algorithm ``ED``), with the untrusted comment
``signature from tauri secret key`` and the trusted comment ``timestamp:<unix s>\\tfile:<name>``;
the ``.sig`` file is that signature file's text in base64, and ``tauri.conf.json``'s ``pubkey``
is the public key file's text in base64. The updater decodes both and verifies with minisign's
rules, as ``verify`` here does with the ``minisign`` command.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

UNTRUSTED_COMMENT = "signature from tauri secret key"


def minisign() -> str:
    """The ``minisign`` command; its absence fails the test that needs it, saying what to do."""
    found = shutil.which("minisign")
    assert found is not None, "minisign is missing: run 'bash .ci/setup' (or 'apt-get install minisign')"
    return found


@dataclass(frozen=True)
class MinisignKey:
    """A key pair without a password, in ``directory``."""

    directory: Path

    @property
    def public_file(self) -> Path:
        return self.directory / "updater.key.pub"

    @property
    def secret_file(self) -> Path:
        return self.directory / "updater.key"

    @classmethod
    def generate(cls, directory: Path) -> MinisignKey:
        directory.mkdir(parents=True, exist_ok=True)
        key = cls(directory)
        command = [minisign(), "-G", "-W", "-p", str(key.public_file), "-s", str(key.secret_file)]
        subprocess.run(command, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        return key

    def tauri_pubkey(self) -> str:
        """What ``plugins.updater.pubkey`` holds: the public key file's text in base64."""
        return base64.b64encode(self.public_file.read_bytes()).decode("ascii")

    def tauri_signature(self, data: bytes, name: str, timestamp: int) -> str:
        """The ``.sig`` text Tauri writes for ``data`` uploaded as ``name``."""
        signed, signature = self.directory / "signed.bin", self.directory / "signed.minisig"
        signed.write_bytes(data)
        command = [minisign(), "-S", "-s", str(self.secret_file), "-m", str(signed), "-x", str(signature)]
        command += ["-c", UNTRUSTED_COMMENT, "-t", f"timestamp:{timestamp}\tfile:{name}"]
        subprocess.run(command, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        return base64.b64encode(signature.read_bytes()).decode("ascii")

    def verify(self, data: bytes, tauri_signature: str) -> subprocess.CompletedProcess[str]:
        """``minisign -V`` of ``data`` against a ``.sig`` text (as the updater reads it)."""
        checked, signature = self.directory / "checked.bin", self.directory / "checked.minisig"
        checked.write_bytes(data)
        signature.write_bytes(base64.b64decode(tauri_signature, validate=True))
        command = [minisign(), "-V", "-p", str(self.public_file), "-m", str(checked), "-x", str(signature)]
        return subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
