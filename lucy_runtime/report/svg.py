"""Small charts as inline SVG: the class report's plots, with no plotting library and no external asset.

Each chart is one ``<svg>`` element with its size, a title for screen readers and
plain shapes, so the report opens offline in any browser and costs milliseconds to draw.
"""

from __future__ import annotations

from html import escape

WIDTH = 680
BAR = 18
LABEL = 230
BLUE, ORANGE, GREY = "#3b6ea8", "#d9822b", "#d8dde3"


def _svg(height: int, title: str, body: list[str]) -> str:
    return (f'<svg class="plot" role="img" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">'
            f"<title>{escape(title)}</title>" + "".join(body) + "</svg>")


def share_bars(items: list[tuple[str, float, str]], title: str, *, good_below: float | None = None) -> str:
    """One horizontal bar per item: (label, share between 0 and 1, the text at its end). A bar is blue
    when its share is at least 0.8, or, with ``good_below`` (bars that count failures), below it."""
    span = WIDTH - LABEL - 100
    body = []
    for i, (label, share, text) in enumerate(items):
        y = 6 + i * (BAR + 4)
        good = share < good_below if good_below is not None else share >= 0.8
        colour = BLUE if good else ORANGE
        body += [f'<text x="{LABEL - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>',
                 f'<rect x="{LABEL}" y="{y}" width="{span}" height="{BAR}" fill="{GREY}"/>',
                 f'<rect x="{LABEL}" y="{y}" width="{max(share * span, 1):.1f}" height="{BAR}" fill="{colour}"/>',
                 f'<text x="{LABEL + span + 6}" y="{y + 13}">{escape(text)}</text>']
    return _svg(12 + len(items) * (BAR + 4), title, body)


def histogram(values: list[float], low: float, high: float, title: str, *, bins: int = 10, unit: str = "") -> str:
    """Counts of ``values`` in ``bins`` equal bins from ``low`` to ``high`` (both ends included), as columns."""
    bins = max(1, bins)
    width = (high - low) / bins if high > low else 1.0
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int((value - low) / width)))] += 1
    tallest = max(counts) or 1
    height, left, bottom = 200, 40, 170
    column = (WIDTH - left - 20) / bins
    body = [f'<line x1="{left}" y1="{bottom}" x2="{WIDTH - 20}" y2="{bottom}" stroke="#555"/>']
    for i, count in enumerate(counts):
        h = (bottom - 20) * count / tallest
        x = left + i * column
        edge = low + i * width
        body.append(f'<rect x="{x + 2:.1f}" y="{bottom - h:.1f}" width="{column - 4:.1f}" height="{max(h, 0):.1f}" '
                    f'fill="{BLUE}"/>')
        if count:
            body.append(f'<text x="{x + column / 2:.1f}" y="{bottom - h - 4:.1f}" text-anchor="middle">{count}</text>')
        body.append(f'<text x="{x + column / 2:.1f}" y="{bottom + 15}" text-anchor="middle">'
                    f'{edge:g}–{edge + width:g}{escape(unit)}</text>')
    return _svg(height, title, body)
