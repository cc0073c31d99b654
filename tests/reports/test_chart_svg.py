"""The install reports' charts as SVG text: well-formed, the bars' sizes follow the counts, the
threshold is a line, a release over it is drawn in the warning colour, and text is escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from craft_apps.admin.chart_svg import (
    OVER,
    UNDER,
    ReleaseShare,
    Series,
    adoption_svg,
    colour,
    failure_svg,
)

SVG = "{http://www.w3.org/2000/svg}"
DAYS = ["2026-12-01", "2026-12-02", "2026-12-03"]


def parsed(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    return root


def bars(root: ET.Element, css: str) -> list[ET.Element]:
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == css]


def size(rect: ET.Element, name: str) -> float:
    return float(rect.get(name) or 0)


def test_the_adoption_bars_stack_each_days_installs_in_proportion() -> None:
    series = [Series("0.6.0", [0, 30, 60]), Series("0.5.0", [20, 10, 0])]
    root = parsed(adoption_svg("photocraft", DAYS, series))
    drawn = bars(root, "adoption-bar")
    assert len(drawn) == 4, "a bar per version and day with installs, none for a zero"
    by_tip = {r.findtext(f"{SVG}title"): r for r in drawn}
    tallest = by_tip["photocraft 0.6.0 on 2026-12-03: 60 new installs"]
    assert size(tallest, "height") == pytest.approx(
        2 * size(by_tip["photocraft 0.6.0 on 2026-12-02: 30 new installs"], "height")
    )
    assert size(by_tip["photocraft 0.5.0 on 2026-12-01: 20 new installs"], "height") == pytest.approx(
        size(tallest, "height") / 3
    )
    assert all(size(r, "width") > 0 for r in drawn)
    assert tallest.get("fill") == colour(0)
    legend = [t.text for t in root.iter(f"{SVG}text")]
    assert "0.6.0" in legend and "0.5.0" in legend and "12-03" in legend


def test_no_install_yet_draws_an_empty_chart() -> None:
    root = parsed(adoption_svg("photocraft", DAYS, []))
    assert bars(root, "adoption-bar") == []


def test_the_failure_share_is_a_bar_against_its_threshold_line() -> None:
    releases = [
        ReleaseShare("0.6.0", 400, 0.05, 2.0),
        ReleaseShare("0.5.0", 1000, 0.01, 2.0),
        ReleaseShare("0.7.0-beta.1", 0, None, None),
    ]
    root = parsed(failure_svg("photocraft", releases))
    over, under = bars(root, "share-bar")
    assert (over.get("fill"), under.get("fill")) == (OVER, UNDER)
    assert size(over, "width") == pytest.approx(5 * size(under, "width"))
    lines = [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "threshold"]
    assert len(lines) == 2, "no line for a release without a guarded policy"
    x = float(lines[0].get("x1") or 0)
    start = size(over, "x")
    assert start < x < start + size(over, "width"), "2 % falls inside the 5 % bar"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "no installs yet" in texts and "5.0 %" in texts and "0.6.0 (400)" in texts


def test_text_is_escaped() -> None:
    text = failure_svg('<script>"', [ReleaseShare("1.0.0&<b>", 1, 0.0, 1.0)])
    root = parsed(text)
    assert "<script>" not in text and "<b>" not in text
    assert root.find(f"{SVG}title") is not None
