"""The docs stay short enough to read through: at most 25,000 words in ``docs/*.md`` and no
page over 3,000, words counted as ``wc -w`` counts them."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
MAX_TOTAL = 25_000
MAX_PAGE = 3_000


def words() -> dict[str, int]:
    return {page.name: len(page.read_text(encoding="utf-8").split()) for page in sorted(DOCS.glob("*.md"))}


def test_the_docs_hold_at_most_25000_words():
    counts = words()
    assert len(counts) > 10
    assert sum(counts.values()) <= MAX_TOTAL, f"docs/*.md hold {sum(counts.values())} words"


def test_no_page_is_over_3000_words():
    assert {name: n for name, n in words().items() if n > MAX_PAGE} == {}
