"""The documentation site (``docs/``) as CI builds it: Sphinx with warnings as errors, so a broken
link, a heading anchor that doesn't exist, a page left out of the table of contents or a malformed
page fails the suite on every Python/Django pair. Also pinned here: the settings page lists every
setting of ``conf.SETTINGS`` (it is generated from it) and the log lines page lists every line
the code logs (``tests/test_install.py`` pins the install page's script).
"""

from __future__ import annotations

import ast
import html
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.conf import SETTINGS
from tests.support import ONE_AT_A_TIME

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = (
    "index",
    "quickstart",
    "installation",
    "settings",
    "endpoint",
    "signed-feed",
    "renames-and-notices",
    "channels",
    "controls",
    "downloads",
    "reports",
    "tauri",
    "poller",
    "webhook",
    "fleet",
    "state-file",
    "operations",
    "logs",
    "deployment",
    "architecture",
    "benchmarks",
    "cdn",
    "private",
    "changelog",
    "contributing",
    "security",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("docs-html")
    doctrees = tmp_path_factory.mktemp("docs-doctrees")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(doctrees)]
    built = subprocess.run(
        [*command, str(DOCS), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert built.returncode == 0, f"sphinx-build failed:\n{built.stdout}\n{built.stderr}"
    yield out


def text_of_html(markup: str) -> str:
    """Text: tags dropped, entities decoded, whitespace made single spaces."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def text_of(page: Path) -> str:
    return text_of_html(page.read_text(encoding="utf-8"))


@ONE_AT_A_TIME
@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors_and_has_every_page(site: Path):
    built = sorted(path.stem for path in site.glob("*.html") if path.stem not in {"genindex", "search"})
    assert built == sorted(PAGES)
    index = (site / "index.html").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f'href="{page}.html"' in index, f"{page} is not in the index's table of contents"


@ONE_AT_A_TIME
@pytest.mark.slow
def test_the_settings_page_lists_every_setting_in_the_order_of_conf_settings(site: Path):
    page = (site / "settings.html").read_text(encoding="utf-8")
    # The table committed in settings.md (docs/settings_table.py), rendered.
    [table] = [t for t in re.findall(r"<table.*?</table>", page, re.DOTALL) if "environment variable" in t]
    rows = [text_of_html(row) for row in re.findall(r"<tr.*?</tr>", table, re.DOTALL)]
    assert rows[0] == "CRAFT_APPS key type default environment variable"
    assert [(row.split()[0], row.split()[-1]) for row in rows[1:]] == [(s.key, s.env) for s in SETTINGS]


@ONE_AT_A_TIME
@pytest.mark.slow
def test_the_pages_that_include_files_show_them(site: Path):
    assert "GetCraftAppsReleaseInfoResponse" in text_of(site / "endpoint.html")  # the OpenAPI schema
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first_release = re.search(r"^## (.+)$", changelog, re.MULTILINE)
    assert first_release is not None
    assert first_release[1] in text_of(site / "changelog.html")
    assert "Reporting a vulnerability" in text_of(site / "security.html")
    assert "The standards, in short" in text_of(site / "contributing.html")
    assert "Fleet simulation" in text_of(site / "benchmarks.html")


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub (and MyST, ``myst_heading_anchors``) gives a Markdown page's headings."""
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            words = heading[1].replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", words).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md", "SECURITY.md"])
def test_the_root_pages_link_to_files_and_headings_that_exist(name: str):
    """Sphinx checks the links of the pages it builds; README.md is not one of them, and the other
    two are included from docs/, where a link that works on GitHub could still miss."""
    text = (ROOT / name).read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue
        path, _, heading = target.partition("#")
        assert (ROOT / path).exists(), f"{name} links to {path}, which doesn't exist"
        if heading:
            assert heading in heading_anchors(ROOT / path), f"{name}: no heading {target}"


LEVELS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
PLACEHOLDER = re.compile(r"%(?:\.\d+)?[sdrgfo]")


def logged_formats() -> list[tuple[str, str]]:
    """Every ``logger.<level>(format, ...)`` in craft_apps and the demo site (but the GitHub
    stand-in's, a test tool), as (where, format)."""
    found = []
    sources = [*sorted((ROOT / "craft_apps").rglob("*.py")), *sorted((ROOT / "config").rglob("*.py"))]
    for path in sources:
        if "testing" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LEVELS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "logger"
            ):
                continue
            args = node.args[1:] if node.func.attr == "log" else node.args
            assert args and isinstance(args[0], ast.Constant), f"{path}:{node.lineno}: not a literal format"
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", str(args[0].value)))
    return found


def test_the_log_lines_page_lists_every_line_the_code_logs():
    """The longest literal run of each format must be on the page; a format made only of
    placeholders (a round's summary, a check's text) is shown there by example."""
    page = " ".join((DOCS / "logs.md").read_text(encoding="utf-8").split())
    formats = logged_formats()
    assert len(formats) > 50
    missing = []
    for where, fmt in formats:
        longest = max((" ".join(piece.split()) for piece in PLACEHOLDER.split(fmt)), key=len)
        if len(longest.strip()) >= 8 and longest not in page:
            missing.append(f"{where}: {fmt!r} (looked for {longest!r})")
    assert not missing, "docs/logs.md lacks:\n" + "\n".join(missing)
