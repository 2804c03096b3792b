"""The SVG chart kit: valid SVG, values placed where they should be, text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from athanor.publish import charts

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("y_max", "ticks"),
    [
        (2150.0, [0, 500, 1000, 1500, 2000, 2500]),  # raw step 430 -> 500
        (1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0.0, [0.0, 1.0]),
    ],
)
def test_nice_ticks(y_max: float, ticks: list[float]) -> None:
    assert charts.nice_ticks(y_max) == pytest.approx(ticks)


def test_stacked_bars_heights_are_proportional_and_labels_escaped() -> None:
    frame = charts.Frame(width=400, height=200, left=50, right=10, top=20, bottom=40)  # plot height 140
    svg = charts.stacked_bars(
        "c1", ["w1", "w2"], {"a<b>": [100.0, 0.0], "c&d": [50.0, 200.0]}, title="T <x>", frame=frame
    )
    root = ET.fromstring(str(svg))  # well-formed XML, so every label was escaped
    assert root.get("id") == "c1"
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    # Three non-zero values -> three bars. Tallest stack 200: ticks of 50 up to 200 over 140 px,
    # so 50 -> 35 px, 100 -> 70 px, 200 -> 140 px.
    assert len(bars) == 3
    assert sorted(round(float(b.get("height"))) for b in bars) == [35, 70, 140]
    assert "a<b>" in "".join(root.itertext())


def test_histogram_draws_curve_and_marker_inside_the_axis() -> None:
    svg = charts.histogram(
        "h1",
        [0.0, 1.0, 2.0],
        {"x": [0.5, 0.25]},
        title="h",
        curve=([0.0, 1.0, 2.0, 5.0], [0.1, 0.4, 0.1, 9.0]),  # the point at 5.0 is off the axis: dropped
        markers=[(1.5, "48 h"), (7.0, "off axis")],
    )
    root = ET.fromstring(str(svg))
    curve = root.find(f"{SVG}polyline")
    assert curve is not None and len(curve.get("points").split()) == 3
    assert len([line for line in root.iter(f"{SVG}line") if line.get("class") == "marker"]) == 1


def test_line_chart_breaks_at_missing_values() -> None:
    svg = charts.line_chart("l1", ["a", "b", "c", "d"], {"s": [1.0, None, 2.0, 3.0]}, title="l")
    root = ET.fromstring(str(svg))
    assert [len(p.get("points").split()) for p in root.iter(f"{SVG}polyline")] == [2]  # c-d; a stands alone
    assert len(list(root.iter(f"{SVG}circle"))) == 3
