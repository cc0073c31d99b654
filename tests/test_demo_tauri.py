"""The demo's Tauri app: LightCraft's release as tauri-action publishes one, each updater bundle
signed with the demo's minisign key (``minisign -V`` accepts it; the Python signer writes what
``minisign -S`` writes), and the demo's landing page linking every feature and the docs."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.github.parsing import parse_release
from craft_apps.tauri.fake_release import UNTRUSTED_COMMENT, SecretKey
from craft_apps.testing.demo_releases import DEMO_PUBLIC_KEY, DEMO_SECRET_KEY, demo_files, demo_releases
from tests.api.minisign_support import minisign
from tests.support.demo_site import FEATURES, LIGHTCRAFT

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = (ROOT / "docs" / "quickstart.md").read_text()
WEB = "http://127.0.0.1:8765"


def verify(directory: Path, data: bytes, tauri_signature: str) -> subprocess.CompletedProcess[str]:
    """``minisign -V -P <the demo's key>`` of ``data``, as the quickstart runs it."""
    (directory / "bundle").write_bytes(data)
    (directory / "bundle.minisig").write_bytes(base64.b64decode(tauri_signature, validate=True))
    command = [minisign(), "-V", "-P", DEMO_PUBLIC_KEY, "-m", "bundle", "-x", "bundle.minisig"]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=30)


def test_the_tauri_app_is_released_as_tauri_action_releases_it() -> None:
    release = demo_releases(web_url=WEB)[LIGHTCRAFT.repo]
    files = demo_files(web_url=WEB)[LIGHTCRAFT.repo]
    assert release["tag_name"] == "lightcraft-v2.0.0"
    names = {asset["name"] for asset in release["assets"]}
    assert {"latest.json", "LightCraft_2.0.0_amd64.AppImage.sig", "LightCraft_universal.app.tar.gz"} <= names
    assert names == set(files), "the stand-in serves the bytes of every file"
    for asset in release["assets"]:
        assert asset["size"] == len(files[asset["name"]])
    assert [repo for repo, r in demo_releases().items() if "latest.json" in str(r)] == [LIGHTCRAFT.repo]
    parsed = parse_release(json.dumps(demo_releases()[LIGHTCRAFT.repo]).encode(), LIGHTCRAFT.repo)
    assert len(parsed.assets) == 12 and all(a.sha256 for a in parsed.assets), "none dropped"


def test_every_signature_verifies_with_the_demo_key_and_fails_for_another_file(tmp_path: Path) -> None:
    files = demo_files(web_url=WEB)[LIGHTCRAFT.repo]
    platforms = json.loads(files["latest.json"])["platforms"]
    assert len(platforms) == 9
    for key, entry in platforms.items():
        name = entry["url"].removeprefix(f"{WEB}/storytold/lightcraft/releases/download/lightcraft-v2.0.0/")
        assert entry["signature"].encode() == files[f"{name}.sig"], key
        checked = verify(tmp_path, files[name], entry["signature"])
        assert checked.returncode == 0, (key, checked.stdout, checked.stderr)
        assert f"file:{name}" in checked.stdout
        assert verify(tmp_path, files[name] + b"!", entry["signature"]).returncode != 0


def test_the_python_signer_writes_what_minisign_writes(tmp_path: Path) -> None:
    (tmp_path / "demo.key").write_text(DEMO_SECRET_KEY)
    (tmp_path / "file").write_bytes(b"some bundle\n" * 50)
    trusted = "timestamp:1787137320\tfile:file"
    command = [minisign(), "-S", "-s", "demo.key", "-m", "file", "-x", "file.minisig"]
    command += ["-c", UNTRUSTED_COMMENT, "-t", trusted]
    subprocess.run(command, cwd=tmp_path, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    key = SecretKey.from_text(DEMO_SECRET_KEY)
    written = key.signature_file(b"some bundle\n" * 50, trusted, UNTRUSTED_COMMENT)
    assert written == (tmp_path / "file.minisig").read_text()
    assert key.public_key() == DEMO_PUBLIC_KEY


def test_a_key_with_a_password_is_refused() -> None:
    encrypted = DEMO_SECRET_KEY.replace("RWQAAEIy", "RWRTY0Iy")  # KDF "Sc": scrypt
    with pytest.raises(ValueError, match="without a password"):
        SecretKey.from_text(encrypted)


def test_the_quickstart_names_the_demo_key_the_tauri_url_and_the_bundle() -> None:
    files = demo_files(web_url=WEB)[LIGHTCRAFT.repo]
    assert f"minisign -V -P {DEMO_PUBLIC_KEY} -m LightCraft_2.0.0_amd64.AppImage" in QUICKSTART
    assert "| base64 -d >" in QUICKSTART
    url = f"{WEB}/storytold/lightcraft/releases/download/lightcraft-v2.0.0/LightCraft_2.0.0_amd64.AppImage"
    assert f'"url": "{url}"' in QUICKSTART and f"curl -sO {url}\n" in QUICKSTART
    assert "http://127.0.0.1:8000/v1/craft_apps/updates/tauri/lightcraft/linux/x86_64/1.9.0" in QUICKSTART
    signature = base64.b64decode(files["LightCraft_2.0.0_amd64.AppImage.sig"]).decode()
    [trusted] = re.findall(r"^trusted comment: (.*)$", signature, re.M)
    assert trusted == "timestamp:1787137320\tfile:LightCraft_2.0.0_amd64.AppImage"
    assert "(`timestamp:1787137320` and `file:LightCraft_2.0.0_amd64.AppImage`, a tab apart)" in QUICKSTART
    public_file = f"untrusted comment: minisign public key B9A4F8E86CCD146C\n{DEMO_PUBLIC_KEY}\n"
    assert f"`{base64.b64encode(public_file.encode()).decode()}`" in QUICKSTART


@pytest.mark.django_db
def test_the_landing_page_links_every_feature() -> None:
    landing = Client().get("/").content.decode()
    missing = [name for name, link in FEATURES.items() if f'href="{link}"' not in landing]
    assert missing == []


@pytest.mark.django_db
def test_the_docs_pages_are_served_as_markdown_and_nothing_else() -> None:
    client = Client()
    page = client.get("/docs/signed-feed.md")
    assert page.status_code == 200 and page["Content-Type"] == "text/plain; charset=utf-8"
    assert b"".join(page.streaming_content) == (ROOT / "docs" / "signed-feed.md").read_bytes()  # type: ignore[attr-defined]
    for missing in ("/docs/nothing.md", "/docs/..%2Fconfig%2Fsettings.md", "/docs/conf.md"):
        assert client.get(missing).status_code == 404, missing
