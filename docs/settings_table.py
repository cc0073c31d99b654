"""The settings page's table, generated from ``craft_apps.conf.SETTINGS`` and committed into
docs/settings.md, so the page reads whole on GitHub too (a Sphinx directive showed nothing there).

    python docs/settings_table.py      rewrites the table in docs/settings.md

``tests/test_settings_table.py`` regenerates it and fails, naming this command, when the
committed table differs from what the code declares.
"""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().with_name("settings.md")
BEGIN = (
    "<!-- Generated from craft_apps.conf.SETTINGS by `python docs/settings_table.py`, which"
    " rewrites it; tests/test_settings_table.py keeps it current. -->"
)
END = "<!-- End of the generated table. -->"


def table() -> str:
    """Every setting in ``SETTINGS``' order: key, type, default, environment variable."""
    from craft_apps.conf import SETTINGS

    return "\n".join(
        [
            "| `CRAFT_APPS` key | type | default | environment variable |",
            "|---|---|---|---|",
            *(f"| `{s.key}` | {s.type_doc} | {s.default_doc} | `{s.env}` |" for s in SETTINGS),
        ]
    )


def with_table(page: str) -> str:
    """``page`` with the text between its two markers replaced by the current table."""
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{PAGE.name} lacks the table's markers: {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n\n{table()}\n\n{END}{tail}"


def main() -> None:
    sys.path.insert(0, str(PAGE.parents[1]))  # craft_apps from this checkout, installed or not
    PAGE.write_text(with_table(PAGE.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
