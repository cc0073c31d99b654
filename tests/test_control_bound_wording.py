"""The admin and the docs give one bound for a change reaching every web worker: 2 s."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "craft_apps" / "admin").glob("*.py")),
    ROOT / "docs" / "controls.md",
    ROOT / "docs" / "channels.md",
]


def test_every_admin_message_and_control_page_says_within_2_s():
    texts = {path.name: path.read_text() for path in SOURCES}
    admin = [name for name in texts if name.endswith(".py")]
    assert [name for name in admin if "within a second" in texts[name]] == []
    assert "within 2 s" in texts["controls.md"]
    assert "within 2 s" in texts["channels.md"]
    assert sum("within 2 s" in texts[name] for name in admin) == 2
