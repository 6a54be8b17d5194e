"""Server-side SVG charts: geometry computed here, drawn by templates/winni_admin/charts/*.html.
No JavaScript and no CDN, so the admin works offline. Every mark carries its value
(`data-label`/`data-value`) and a <title> tooltip."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

Number = float | int


def nice_max(value: float) -> float:
    """A round axis top at or above value (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k), 1 for no data."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def _plain(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.2g}"


# Margins of the charts with axes (bar, line): room for the value ticks left, day labels below.
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 24


def _axes(kind: str, title: str, width: int, height: int, top_value: float,
          fmt: Callable[[float], str]) -> dict[str, Any]:
    """The frame both axis charts share: plot size, three value ticks, label baseline."""
    plot_h = height - TOP - BOTTOM
    return {"kind": kind, "title": title, "width": width, "height": height,
            "plot_w": width - LEFT - RIGHT, "plot_h": plot_h, "left": LEFT, "right": width - RIGHT,
            "base": TOP + plot_h, "label_y": height - 6,
            "ticks": [{"y": round(TOP + plot_h - plot_h * f, 1), "text": fmt(top_value * f)} for f in (0, 0.5, 1)]}


def _label_due(i: int, count: int, label_every: int) -> bool:
    return i % label_every == 0 or i == count - 1


def bar_chart(
    points: Sequence[tuple[str, Number]],
    *,
    title: str,
    width: int = 640,
    height: int = 200,
    label_every: int = 1,
    fmt: Callable[[float], str] = _plain,
) -> dict[str, Any]:
    """Vertical bars, one per (label, value), e.g. messages per day."""
    top_value = nice_max(max((float(v) for _, v in points), default=0))
    chart = _axes("bar", title, width, height, top_value, fmt)
    plot_h = chart["plot_h"]
    slot = chart["plot_w"] / max(len(points), 1)
    bars, labels = [], []
    for i, (label, value) in enumerate(points):
        h = plot_h * float(value) / top_value
        x = LEFT + i * slot + slot * 0.12
        bars.append({"x": round(x, 1), "y": round(TOP + plot_h - h, 1), "w": round(slot * 0.76, 1),
                     "h": round(h, 1), "label": label, "value": value, "text": fmt(float(value))})
        if _label_due(i, len(points), label_every):
            labels.append({"x": round(LEFT + i * slot + slot / 2, 1), "text": label})
    return {**chart, "bars": bars, "labels": labels, "empty": not any(float(v) for _, v in points)}


def hbar_chart(
    points: Sequence[tuple[str, Number]],
    *,
    title: str,
    width: int = 600,
    row: int = 24,
    fmt: Callable[[float], str] = _plain,
) -> dict[str, Any]:
    """Horizontal bars, one row per category (sources, tiers, tables)."""
    label_w, value_w = 160, 80
    plot_w = width - label_w - value_w
    top_value = max((float(v) for _, v in points), default=0) or 1.0
    rows = []
    for i, (label, value) in enumerate(points):
        w = plot_w * float(value) / top_value
        rows.append({"y": i * row, "w": round(w, 1), "label": label, "value": value, "text": fmt(float(value)),
                     "text_x": round(label_w + w + 6, 1), "text_y": round(row * 0.68, 1), "bar_h": row - 8})
    return {"kind": "hbar", "title": title, "width": width, "height": max(len(points), 1) * row, "rows": rows,
            "label_w": label_w, "empty": not any(float(v) for _, v in points)}


def line_chart(
    points: Sequence[tuple[str, float | None]],
    *,
    title: str,
    width: int = 640,
    height: int = 200,
    top_value: float = 1.0,
    label_every: int = 1,
    fmt: Callable[[float], str] = _plain,
) -> dict[str, Any]:
    """A line through the points that have a value (None leaves a gap), e.g. hit rate per day."""
    chart = _axes("line", title, width, height, top_value, fmt)
    plot_h = chart["plot_h"]
    step = chart["plot_w"] / max(len(points) - 1, 1)
    current: list[Any]
    dots, segments, current, labels = [], [], [], []
    for i, (label, value) in enumerate(points):
        x = round(LEFT + i * step, 1)
        if _label_due(i, len(points), label_every):
            labels.append({"x": x, "text": label})
        if value is None:
            if current:
                segments.append(" ".join(current))
            current = []
            continue
        y = round(TOP + plot_h - plot_h * min(value, top_value) / top_value, 1)
        current.append(f"{x},{y}")
        dots.append({"x": x, "y": y, "label": label, "value": value, "text": fmt(value)})
    if current:
        segments.append(" ".join(current))
    return {**chart, "dots": dots, "segments": segments, "labels": labels, "empty": not dots}


def human_bytes(value: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"
