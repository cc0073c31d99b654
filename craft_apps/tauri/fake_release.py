"""A GitHub release as tauri-action publishes one, for the tests and the fake GitHub.

``tauri_action_release(repo, product, version, published_at)`` returns a ``TauriRelease``: the
JSON ``GET /repos/{repo}/releases/latest`` answers for a Tauri 2 app built as ArtCraft's
workflows build it (``createUpdaterArtifacts: true``, ``includeUpdaterJson``), and in ``files``
the bytes of its ``.sig`` files and ``latest.json``. A signature is a placeholder, not minisign,
unless ``signatures`` gives it. ``SecretKey`` signs as Tauri's signer does: its ``.sig`` is what
``minisign -S`` writes, byte for byte, so ``minisign -V`` checks it. Same arguments, same release.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from craft_apps.conf import DEFAULT_GITHUB_API_URL, DEFAULT_GITHUB_WEB_URL
from craft_apps.kernel.compat import UTC

_MIB = 1024 * 1024
# (file name pattern, bytes); {p} the product as GitHub names the file, {v} the version, {w}
# WiX's version (tauri-action's ``wixAppVersion``: "-" and "+" become "."), {p} the Linux name.
INSTALLERS: tuple[tuple[str, int], ...] = (
    ("{p}_{w}_x64_en-US.msi", 141 * _MIB),
    ("{p}_{v}_x64-setup.exe", 96 * _MIB),
    ("{p}_{v}_universal.dmg", 233 * _MIB),
    ("{p}_universal.app.tar.gz", 228 * _MIB),
    ("{p}_{v}_amd64.AppImage", 172 * _MIB),
    ("{p}_{v}_amd64.deb", 118 * _MIB),
    ("{p}-{v}-1.x86_64.rpm", 119 * _MIB),
)
SIGNED = (
    "{p}_{w}_x64_en-US.msi",
    "{p}_{v}_x64-setup.exe",
    "{p}_universal.app.tar.gz",
    "{p}_{v}_amd64.AppImage",
)
# latest.json's platform keys (the updater's ``<os>-<arch>[-<bundle>]``) and the file each names.
UPDATER_KEYS: tuple[tuple[str, str], ...] = (
    ("windows-x86_64", "{p}_{w}_x64_en-US.msi"),
    ("windows-x86_64-msi", "{p}_{w}_x64_en-US.msi"),
    ("windows-x86_64-nsis", "{p}_{v}_x64-setup.exe"),
    ("darwin-aarch64", "{p}_universal.app.tar.gz"),
    ("darwin-aarch64-app", "{p}_universal.app.tar.gz"),
    ("darwin-x86_64", "{p}_universal.app.tar.gz"),
    ("darwin-x86_64-app", "{p}_universal.app.tar.gz"),
    ("linux-x86_64", "{p}_{v}_amd64.AppImage"),
    ("linux-x86_64-appimage", "{p}_{v}_amd64.AppImage"),
)
_BODY = "See the assets below to download this version and install."
_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot", "site_admin": False}


@dataclass(frozen=True)
class TauriRelease:
    """GitHub's release JSON, and the bytes of its small files by name."""

    release: dict[str, Any]
    files: dict[str, bytes]


def tauri_action_release(
    repo: str,
    product: str,
    version: str,
    published_at: datetime,
    *,
    tag_prefix: str = "artcraft-v",
    signatures: Mapping[str, str] | None = None,
    contents: Mapping[str, bytes] | None = None,
    web_url: str = DEFAULT_GITHUB_WEB_URL,
    api_url: str = DEFAULT_GITHUB_API_URL,
) -> TauriRelease:
    """The release of ``product`` (its ``productName``) at ``version`` in ``repo``;
    ``signatures`` maps a signed file's name to its ``.sig`` text, ``contents`` an installer's
    name to its bytes."""
    web_url, api_url = web_url.rstrip("/"), api_url.rstrip("/")
    tag = f"{tag_prefix}{version}"
    names = TauriNames(product, version)
    release_id = _number(repo, tag, "release", 150_000_000, 260_000_000)
    created = published_at - timedelta(minutes=41)
    downloads = f"{web_url}/{repo}/releases/download/{tag}/"
    files = _small_files(names, created, downloads, signatures or {})
    sized = [
        _installer(names.of(p), size + _number(repo, tag, p, 0, _MIB), contents) for p, size in INSTALLERS
    ]
    sized += [(name, len(content), content) for name, content in files.items()]
    assets = [
        _asset(repo, tag, name, size, content, created, downloads, api_url) for name, size, content in sized
    ]
    api_release = f"{api_url}/repos/{repo}/releases/{release_id}"
    release = {
        "url": api_release,
        "assets_url": f"{api_release}/assets",
        "html_url": f"{web_url}/{repo}/releases/tag/{tag}",
        "id": release_id,
        "author": _BOT,
        "tag_name": tag,
        "target_commitish": "release",
        "name": f"{product} v{version}",
        "draft": False,
        "prerelease": False,
        "created_at": _timestamp(created),
        "published_at": _timestamp(published_at),
        "assets": assets,
        "tarball_url": f"{api_url}/repos/{repo}/tarball/{tag}",
        "zipball_url": f"{api_url}/repos/{repo}/zipball/{tag}",
        "body": _BODY,
    }
    return TauriRelease(release, {**files, **(contents or {})})


def _installer(name: str, size: int, contents: Mapping[str, bytes] | None) -> tuple[str, int, bytes | None]:
    """An installer's name, size and bytes (None: not served, a realistic size)."""
    content = (contents or {}).get(name)
    return (name, size, None) if content is None else (name, len(content), content)


def _small_files(
    names: TauriNames, created: datetime, downloads: str, signatures: Mapping[str, str]
) -> dict[str, bytes]:
    """The ``.sig`` of each file the updater uses, and ``latest.json`` naming them."""
    files: dict[str, bytes] = {}
    for pattern in SIGNED:
        name = names.of(pattern)
        text = signatures.get(name) or _stand_in_signature(name)
        files[f"{name}.sig"] = text.encode()
    manifest = {
        "version": names.version,
        "notes": _BODY,
        "pub_date": _timestamp(created + timedelta(minutes=38)),
        "platforms": {
            key: {"signature": files[f"{names.of(p)}.sig"].decode(), "url": downloads + names.of(p)}
            for key, p in UPDATER_KEYS
        },
    }
    files["latest.json"] = json.dumps(manifest, indent=2).encode()
    return files


@dataclass(frozen=True)
class TauriNames:
    """The names tauri-action uploads a product's files under, at one version."""

    product: str
    version: str

    def of(self, pattern: str) -> str:
        # GitHub renames spaces (tauri-action brackets too) to dots in uploaded names.
        shown = self.product.replace(" ", ".")
        wix = self.version.replace("-", ".").replace("+", ".")
        return pattern.format(p=shown, v=self.version, w=wix)


def _stand_in_signature(name: str) -> str:
    """Base64 text shaped like a Tauri ``.sig`` (minisign's two comments and two lines)."""
    digest = hashlib.sha256(name.encode()).digest()
    text = (
        "untrusted comment: stand-in signature, not minisign\n"
        f"{base64.b64encode(b'Ed' + digest).decode()}\n"
        f"trusted comment: file:{name}\n"
        f"{base64.b64encode(digest + digest).decode()}\n"
    )
    return base64.b64encode(text.encode()).decode()


def _asset(
    repo: str,
    tag: str,
    name: str,
    size: int,
    content: bytes | None,
    created: datetime,
    downloads: str,
    api_url: str,
) -> dict[str, Any]:
    asset_id = _number(repo, tag, name, 280_000_000, 320_000_000)
    digest = hashlib.sha256(content if content is not None else f"{repo}/{tag}/{name}".encode())
    uploaded = _timestamp(created + timedelta(seconds=_number(repo, tag, name, 20, 900)))
    return {
        "url": f"{api_url}/repos/{repo}/releases/assets/{asset_id}",
        "id": asset_id,
        "name": name,
        "label": "",
        "uploader": _BOT,
        "content_type": "application/zip",  # what tauri-action uploads every file as
        "state": "uploaded",
        "size": size,
        "digest": f"sha256:{digest.hexdigest()}",
        "download_count": _number(repo, tag, name, 0, 5000) if content is None else 0,
        "created_at": uploaded,
        "updated_at": uploaded,
        "browser_download_url": downloads + name,
    }


def _number(repo: str, tag: str, part: str, low: int, high: int) -> int:
    seed = int.from_bytes(hashlib.sha256(f"{repo}\x1f{tag}\x1f{part}".encode()).digest()[:8], "big")
    return low + seed % (high - low + 1)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


UNTRUSTED_COMMENT = "signature from tauri secret key"
_KEY_BYTES = 158  # algorithm, KDF, checksum algorithm, salt, limits, key id, key, checksum


@dataclass(frozen=True)
class SecretKey:
    """A minisign secret key stored without a password."""

    key_id: bytes  # 8 bytes, as the public key and every signature name it
    private: Ed25519PrivateKey

    @classmethod
    def from_text(cls, text: str) -> SecretKey:
        """Reads the text of a secret key file written by ``minisign -G -W``."""
        raw = base64.b64decode(text.splitlines()[1], validate=True)
        if len(raw) != _KEY_BYTES or raw[:2] != b"Ed" or raw[2:4] != b"\0\0":
            raise ValueError("not a minisign Ed25519 secret key stored without a password")
        return cls(raw[54:62], Ed25519PrivateKey.from_private_bytes(raw[62:94]))

    def public_key(self) -> str:
        """The public key as ``minisign -P`` takes it (the second line of the ``.pub`` file)."""
        public = self.private.public_key().public_bytes_raw()
        return base64.b64encode(b"Ed" + self.key_id + public).decode("ascii")

    def signature_file(self, data: bytes, trusted_comment: str, untrusted_comment: str) -> str:
        """The text of the ``.minisig`` file ``minisign -S`` writes for ``data``."""
        signature = self.private.sign(hashlib.blake2b(data, digest_size=64).digest())
        trusted = self.private.sign(signature + trusted_comment.encode())
        return (
            f"untrusted comment: {untrusted_comment}\n"
            f"{base64.b64encode(b'ED' + self.key_id + signature).decode('ascii')}\n"
            f"trusted comment: {trusted_comment}\n"
            f"{base64.b64encode(trusted).decode('ascii')}\n"
        )

    def tauri_signature(self, data: bytes, name: str, timestamp: int) -> str:
        """The ``.sig`` text Tauri writes for ``data`` uploaded as ``name``."""
        text = self.signature_file(data, f"timestamp:{timestamp}\tfile:{name}", UNTRUSTED_COMMENT)
        return base64.b64encode(text.encode()).decode("ascii")
