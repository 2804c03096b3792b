"""A tiny SVG chart kit for the report: stacked bars, lines, histograms with a fitted curve.

Charts are plain inline SVG strings so the report opens offline in any browser. Every
piece of text that comes from data goes through `_esc`; the result is `Markup` so the
Jinja templates (autoescaped) embed it as is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

# Colour-blind-safe palette (Okabe-Ito, then greys for overflow).
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#999999",
    "#666666",
)


@dataclass(frozen=True)
class Frame:
    """Plot area inside the SVG canvas (pixels)."""

    width: int = 760
    height: int = 330
    left: int = 84
    right: int = 16
    top: int = 36
    bottom: int = 84

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom

    def y(self, value: float, y_max: float) -> float:
        return self.top + self.plot_h * (1 - (value / y_max if y_max > 0 else 0))


def _esc(text: object) -> str:
    return escape(str(text), quote=True)


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def nice_ticks(y_max: float, count: int = 5) -> list[float]:
    """Round tick values 0..top covering y_max, with a 1-2-5 step."""
    if not math.isfinite(y_max) or y_max <= 0:
        return [0.0, 1.0]
    raw = y_max / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    top = math.ceil(y_max / step - 1e-9) * step
    return [i * step for i in range(int(round(top / step)) + 1)]


def _open(chart_id: str, title: str, frame: Frame, x_title: str = "", y_title: str = "") -> list[str]:
    out = [
        f'<svg id="{_esc(chart_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {frame.width} {frame.height}" role="img" aria-label="{_esc(title)}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="{frame.left}" y="16" class="chart-title">{_esc(title)}</text>',
    ]
    return out + _axis_titles(frame, x_title, y_title)


def _axis_titles(frame: Frame, x_title: str, y_title: str) -> list[str]:
    """What each axis measures, in words: under the x labels, and up the left edge."""
    out = []
    if x_title:
        x = frame.left + frame.plot_w / 2
        y = frame.height - frame.bottom + 34
        out.append(
            f'<text x="{_num(x)}" y="{y}" class="axis-title" text-anchor="middle">{_esc(x_title)}</text>'
        )
    if y_title:
        y = frame.top + frame.plot_h / 2
        out.append(
            f'<text x="14" y="{_num(y)}" class="axis-title" text-anchor="middle" '
            f'transform="rotate(-90 14 {_num(y)})">{_esc(y_title)}</text>'
        )
    return out


def _y_axis(frame: Frame, ticks: Sequence[float], fmt: Callable[[float], str]) -> list[str]:
    out = []
    for t in ticks:
        y = frame.y(t, ticks[-1])
        out.append(
            f'<line x1="{frame.left}" x2="{frame.width - frame.right}" y1="{_num(y)}" y2="{_num(y)}" class="grid"/>'
        )
        out.append(
            f'<text x="{frame.left - 6}" y="{_num(y + 4)}" class="tick" text-anchor="end">{_esc(fmt(t))}</text>'
        )
    return out


def _x_labels(frame: Frame, labels: Sequence[str], centres: Sequence[float]) -> list[str]:
    # Thin the labels so they never overlap: about one per 70 px.
    every = max(1, math.ceil(len(labels) * 70 / max(frame.plot_w, 1)))
    y = frame.height - frame.bottom + 16
    return [
        f'<text x="{_num(x)}" y="{y}" class="tick" text-anchor="middle">{_esc(label)}</text>'
        for i, (label, x) in enumerate(zip(labels, centres, strict=True))
        if i % every == 0
    ]


def _legend(frame: Frame, names: Sequence[str], kinds: Sequence[str] | None = None) -> list[str]:
    # Under the axis title; a second row when the names do not fit in one.
    out, x = [], float(frame.left)
    y = frame.height - frame.bottom + 52
    for i, name in enumerate(names):
        colour = PALETTE[i % len(PALETTE)]
        kind = kinds[i] if kinds else "box"
        if x > frame.left and x + 16 + 7 * len(str(name)) > frame.width - frame.right:
            x, y = float(frame.left), y + 15
        if kind == "line":
            out.append(
                f'<line x1="{_num(x)}" x2="{_num(x + 12)}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2.5"/>'
            )
        else:
            out.append(f'<rect x="{_num(x)}" y="{y - 10}" width="12" height="10" fill="{colour}"/>')
        out.append(f'<text x="{_num(x + 16)}" y="{y}" class="legend">{_esc(name)}</text>')
        x += 16 + 7 * len(str(name)) + 14
    return out


def stacked_bars(
    chart_id: str,
    x_labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    y_format: Callable[[float], str] = lambda v: f"{v:,.0f}",
    frame: Frame | None = None,
    x_title: str = "",
    y_title: str = "",
) -> Markup:
    """Vertical bars, one per x label, stacked by series (negative values count as 0)."""
    frame = frame or Frame()
    names = list(series)
    totals = [sum(max(series[n][i], 0.0) for n in names) for i in range(len(x_labels))]
    ticks = nice_ticks(max(totals, default=0.0))
    slot = frame.plot_w / max(len(x_labels), 1)
    bar_w = max(slot * 0.7, 1.0)
    parts = _open(chart_id, title, frame, x_title, y_title) + _y_axis(frame, ticks, y_format)
    centres = []
    for i, label in enumerate(x_labels):
        x = frame.left + slot * i + (slot - bar_w) / 2
        centres.append(x + bar_w / 2)
        base = 0.0
        for k, name in enumerate(names):
            value = max(series[name][i], 0.0)
            if value <= 0:
                continue
            y_top, y_bottom = frame.y(base + value, ticks[-1]), frame.y(base, ticks[-1])
            parts.append(
                f'<rect x="{_num(x)}" y="{_num(y_top)}" width="{_num(bar_w)}" height="{_num(y_bottom - y_top)}" '
                f'fill="{PALETTE[k % len(PALETTE)]}"><title>{_esc(label)} · {_esc(name)}: {_esc(y_format(value))}</title></rect>'
            )
            base += value
    parts += _x_labels(frame, list(x_labels), centres)
    parts += _legend(frame, names)
    parts.append("</svg>")
    return Markup("\n".join(parts))


def line_chart(
    chart_id: str,
    x_labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    y_format: Callable[[float], str] = lambda v: f"{v:,.0f}",
    y_max: float | None = None,
    frame: Frame | None = None,
    x_title: str = "",
    y_title: str = "",
) -> Markup:
    """Lines over categorical x labels; a None value breaks the line."""
    frame = frame or Frame()
    values = [v for s in series.values() for v in s if v is not None]
    ticks = nice_ticks(y_max if y_max is not None else max(values, default=0.0))
    slot = frame.plot_w / max(len(x_labels), 1)
    centres = [frame.left + slot * (i + 0.5) for i in range(len(x_labels))]
    parts = _open(chart_id, title, frame, x_title, y_title) + _y_axis(frame, ticks, y_format)
    for k, (name, ys) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        segment: list[str] = []
        for i, v in enumerate(ys):
            if v is None:
                if len(segment) > 1:
                    parts.append(
                        f'<polyline points="{" ".join(segment)}" fill="none" stroke="{colour}" stroke-width="2.5"/>'
                    )
                segment = []
                continue
            x, y = centres[i], frame.y(v, ticks[-1])
            segment.append(f"{_num(x)},{_num(y)}")
            parts.append(
                f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3" fill="{colour}">'
                f"<title>{_esc(x_labels[i])} · {_esc(name)}: {_esc(y_format(v))}</title></circle>"
            )
        if len(segment) > 1:
            parts.append(
                f'<polyline points="{" ".join(segment)}" fill="none" stroke="{colour}" stroke-width="2.5"/>'
            )
    parts += _x_labels(frame, list(x_labels), centres)
    parts += _legend(frame, list(series), ["line"] * len(series))
    parts.append("</svg>")
    return Markup("\n".join(parts))


def histogram(
    chart_id: str,
    edges: Sequence[float],
    stacks: Mapping[str, Sequence[float]],
    *,
    title: str,
    curve: tuple[Sequence[float], Sequence[float]] | None = None,
    curve_label: str = "fitted",
    x_ticks: Sequence[tuple[float, str]] = (),
    markers: Sequence[tuple[float, str]] = (),
    y_format: Callable[[float], str] = lambda v: f"{v:.2f}",
    frame: Frame | None = None,
    x_title: str = "",
    y_title: str = "",
) -> Markup:
    """Stacked histogram on a numeric x axis (bin `edges`), an optional curve and vertical markers.

    Heights and curve share one y unit (e.g. density per unit of x), so a fitted density
    drawn over a density-normalised histogram lines up.
    """
    frame = frame or Frame()
    lo, hi = float(edges[0]), float(edges[-1])
    span = hi - lo if hi > lo else 1.0

    def x_of(v: float) -> float:
        return frame.left + frame.plot_w * (v - lo) / span

    names = list(stacks)
    n_bins = len(edges) - 1
    totals = [sum(stacks[n][i] for n in names) for i in range(n_bins)]
    curve_max = max((y for y in curve[1] if math.isfinite(y)), default=0.0) if curve else 0.0
    ticks = nice_ticks(max(max(totals, default=0.0), curve_max))
    parts = _open(chart_id, title, frame, x_title, y_title) + _y_axis(frame, ticks, y_format)
    for i in range(n_bins):
        x0, x1 = x_of(edges[i]), x_of(edges[i + 1])
        base = 0.0
        for k, name in enumerate(names):
            value = stacks[name][i]
            if value <= 0:
                continue
            y_top, y_bottom = frame.y(base + value, ticks[-1]), frame.y(base, ticks[-1])
            parts.append(
                f'<rect x="{_num(x0)}" y="{_num(y_top)}" width="{_num(max(x1 - x0 - 1, 0.5))}" '
                f'height="{_num(y_bottom - y_top)}" fill="{PALETTE[k % len(PALETTE)]}" fill-opacity="0.75">'
                f"<title>{_esc(name)}: {_esc(y_format(value))}</title></rect>"
            )
            base += value
    legend_names, kinds = list(names), ["box"] * len(names)
    if curve is not None:
        pts = [
            f"{_num(x_of(x))},{_num(frame.y(min(y, ticks[-1]), ticks[-1]))}"
            for x, y in zip(curve[0], curve[1], strict=True)
            if math.isfinite(y) and lo <= x <= hi
        ]
        colour = PALETTE[(len(names)) % len(PALETTE)]
        if len(pts) > 1:
            parts.append(
                f'<polyline class="fit" points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="2.5"/>'
            )
        legend_names.append(curve_label)
        kinds.append("line")
    for value, label in markers:
        if lo <= value <= hi:
            x = x_of(value)
            parts.append(
                f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{frame.top}" y2="{_num(frame.top + frame.plot_h)}" class="marker"/>'
            )
            parts.append(f'<text x="{_num(x + 4)}" y="{frame.top + 12}" class="tick">{_esc(label)}</text>')
    y = frame.height - frame.bottom + 16
    for value, label in x_ticks:
        if lo <= value <= hi:
            parts.append(
                f'<text x="{_num(x_of(value))}" y="{y}" class="tick" text-anchor="middle">{_esc(label)}</text>'
            )
    parts += _legend(frame, legend_names, kinds)
    parts.append("</svg>")
    return Markup("\n".join(parts))


def ranked_bars(
    chart_id: str,
    labels: Sequence[str],
    values: Sequence[float],
    groups: Sequence[str],
    *,
    title: str,
    x_format: Callable[[float], str] = lambda v: f"{v:,.2f}",
    row_height: int = 16,
    label_width: int = 250,
    width: int = 760,
) -> Markup:
    """Horizontal bars in the order given (rank them first), coloured by group, one row each."""
    names = list(dict.fromkeys(groups))
    frame = Frame(
        width=width, height=36 + row_height * len(labels) + 56, left=label_width, right=60, bottom=56
    )
    ticks = nice_ticks(max(values, default=0.0))
    top = ticks[-1] if ticks[-1] > 0 else 1.0

    def x_of(v: float) -> float:
        return frame.left + frame.plot_w * v / top

    parts = _open(chart_id, title, frame)
    for t in ticks:
        x = x_of(t)
        parts.append(
            f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{frame.top}" y2="{_num(frame.top + frame.plot_h)}" class="grid"/>'
        )
        parts.append(
            f'<text x="{_num(x)}" y="{_num(frame.top + frame.plot_h + 14)}" class="tick" '
            f'text-anchor="middle">{_esc(x_format(t))}</text>'
        )
    for i, (label, value, group) in enumerate(zip(labels, values, groups, strict=True)):
        y = frame.top + row_height * i
        colour = PALETTE[names.index(group) % len(PALETTE)]
        parts.append(
            f'<text x="{frame.left - 6}" y="{_num(y + row_height * 0.75)}" class="tick" text-anchor="end">{_esc(label)}</text>'
        )
        parts.append(
            f'<rect x="{frame.left}" y="{_num(y + 2)}" width="{_num(max(x_of(value) - frame.left, 0.5))}" '
            f'height="{row_height - 4}" fill="{colour}"><title>{_esc(label)}: {_esc(x_format(value))}</title></rect>'
        )
        parts.append(
            f'<text x="{_num(x_of(value) + 4)}" y="{_num(y + row_height * 0.75)}" class="tick">{_esc(x_format(value))}</text>'
        )
    parts += _legend(frame, names)
    parts.append("</svg>")
    return Markup("\n".join(parts))


def frontier_chart(
    chart_id: str,
    frontier: Sequence[tuple[float, float, str]],
    marked: Sequence[tuple[float, float, str]],
    *,
    title: str,
    x_format: Callable[[float], str] = lambda v: f"{v:,.1f} h",
    y_format: Callable[[float], str] = lambda v: f"{v:,.0f}",
    frame: Frame | None = None,
) -> Markup:
    """Cost (y) against time (x): the frontier as a line of labelled points, and marked points
    (e.g. now and the plan) drawn over it in their own colours."""
    frame = frame or Frame(width=560, height=260)
    xs = [p[0] for p in (*frontier, *marked)]
    ys = [p[1] for p in (*frontier, *marked)]
    y_ticks = nice_ticks(max(ys, default=0.0))
    x_ticks = nice_ticks(max(xs, default=0.0))

    def x_of(v: float) -> float:
        return frame.left + frame.plot_w * v / (x_ticks[-1] or 1.0)

    parts = _open(chart_id, title, frame) + _y_axis(frame, y_ticks, y_format)
    for t in x_ticks:
        parts.append(
            f'<text x="{_num(x_of(t))}" y="{frame.height - frame.bottom + 16}" class="tick" '
            f'text-anchor="middle">{_esc(x_format(t))}</text>'
        )
    colour = PALETTE[len(marked) % len(PALETTE)]  # the legend's colour for the frontier
    points = [(x_of(x), frame.y(y, y_ticks[-1]), label, x, y) for x, y, label in frontier]
    if len(points) > 1:
        line = " ".join(f"{_num(px)},{_num(py)}" for px, py, *_ in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
    for px, py, label, x, y in points:
        parts.append(
            f'<circle cx="{_num(px)}" cy="{_num(py)}" r="3" fill="{colour}">'
            f"<title>{_esc(label)}: {_esc(x_format(x))}, {_esc(y_format(y))}</title></circle>"
        )
    for k, (x, y, label) in enumerate(marked):
        px, py = x_of(x), frame.y(y, y_ticks[-1])
        parts.append(
            f'<circle cx="{_num(px)}" cy="{_num(py)}" r="6" fill="none" stroke="{PALETTE[k % len(PALETTE)]}" '
            f'stroke-width="2.5"><title>{_esc(label)}: {_esc(x_format(x))}, {_esc(y_format(y))}</title></circle>'
        )
    parts += _legend(frame, [*(label for *_, label in marked), "cost-time frontier"], None)
    parts.append("</svg>")
    return Markup("\n".join(parts))
