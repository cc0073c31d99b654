"""The install reports' charts as SVG text, pure (data in, text out; no Django, no I/O): the
adoption of each version per day as stacked bars, and each release's failure share as a bar
against its threshold. The admin's ``reports_chart`` puts them inline in its page, so the
browser loads nothing for them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 720
BAR_HEIGHT = 180  # the adoption chart's plot
LEFT, TOP, BOTTOM = 48, 12, 40
ROW = 28  # a release's row in the failure chart
LABEL_W = 150
# Colours a person with a colour vision deficiency tells apart (Okabe and Ito), then grey.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")
OTHER = "#999999"
OVER, UNDER, LINE = "#d55e00", "#009e73", "#222222"


@dataclass(frozen=True, slots=True)
class Series:
    """One version's new installs on each of the chart's days."""

    version: str
    per_day: Sequence[int]


@dataclass(frozen=True, slots=True)
class ReleaseShare:
    """One release's distinct installs, its failure share (0..1, None: none counted) and its
    threshold (a percentage, None: no guarded policy)."""

    version: str
    installs: int
    share: float | None
    threshold_percent: float | None


def colour(index: int) -> str:
    return PALETTE[index] if index < len(PALETTE) else OTHER


def _svg(height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}" '
        'font-family="sans-serif" font-size="11">'
        f"<title>{escape(label)}</title>" + "".join(body) + "</svg>"
    )


def _rect(x: float, y: float, w: float, h: float, fill: str, css: str, tip: str) -> str:
    return (
        f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
        f'fill="{fill}"><title>{escape(tip)}</title></rect>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'


def adoption_svg(app: str, days: Sequence[str], series: Sequence[Series]) -> str:
    """Stacked bars: per day, the installs first counted for each version that day."""
    totals = [sum(s.per_day[i] for s in series if i < len(s.per_day)) for i in range(len(days))]
    top = max([1, *totals])
    slot = (WIDTH - LEFT - 8) / max(1, len(days))
    body = [_text(LEFT - 6, TOP + 8, str(top), "end"), _text(LEFT - 6, TOP + BAR_HEIGHT, "0", "end")]
    axis = TOP + BAR_HEIGHT
    body.append(f'<line x1="{LEFT}" y1="{axis}" x2="{WIDTH - 8}" y2="{axis}" stroke="{LINE}"/>')
    for i, day in enumerate(days):
        x, base = LEFT + i * slot + slot * 0.15, float(TOP + BAR_HEIGHT)
        for index, one in enumerate(series):
            count = one.per_day[i] if i < len(one.per_day) else 0
            if count <= 0:
                continue
            height = BAR_HEIGHT * count / top
            base -= height
            tip = f"{app} {one.version} on {day}: {count} new installs"
            body.append(_rect(x, base, slot * 0.7, height, colour(index), "adoption-bar", tip))
        if i % max(1, len(days) // 7) == 0 or i == len(days) - 1:
            body.append(_text(x + slot * 0.35, TOP + BAR_HEIGHT + 14, day[5:], "middle"))
    body += _legend(series, TOP + BAR_HEIGHT + 30)
    return _svg(TOP + BAR_HEIGHT + BOTTOM, f"{app}: new installs per version and day", body)


def _legend(series: Sequence[Series], y: float) -> list[str]:
    found, x = [], float(LEFT)
    for index, one in enumerate(series):
        found.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{colour(index)}"/>')
        found.append(_text(x + 14, y, one.version))
        x += 24 + 7 * len(one.version)
    return found


def failure_svg(app: str, releases: Sequence[ReleaseShare]) -> str:
    """One row per release: its failure share as a bar, its threshold as a line across it."""
    shares = [100 * (r.share or 0.0) for r in releases]
    limits = [r.threshold_percent or 0.0 for r in releases]
    scale = max([5.0, *shares, *(2 * t for t in limits)])
    plot = WIDTH - LABEL_W - 70
    body: list[str] = []
    for i, release in enumerate(releases):
        y = TOP + i * ROW
        body.append(_text(LABEL_W - 6, y + 15, f"{release.version} ({release.installs})", "end"))
        share = shares[i]
        over = release.threshold_percent is not None and share > release.threshold_percent
        tip = f"{app} {release.version}: {share:.1f} % failing of {release.installs} installs"
        width = max(1.0, plot * share / scale) if release.share is not None else 0.0
        if width:
            body.append(_rect(LABEL_W, y + 4, width, ROW - 10, OVER if over else UNDER, "share-bar", tip))
        shown = "no installs yet" if release.share is None else f"{share:.1f} %"
        body.append(_text(LABEL_W + width + 6, y + 15, shown))
        if release.threshold_percent is not None:
            x = LABEL_W + plot * release.threshold_percent / scale
            body.append(
                f'<line class="threshold" x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" y2="{y + ROW - 3}" '
                f'stroke="{LINE}" stroke-width="2"><title>threshold {release.threshold_percent:g} %'
                "</title></line>"
            )
    height = TOP + max(1, len(releases)) * ROW + 8
    return _svg(height, f"{app}: failure share per release against its threshold", body)
