"""The report's chart: the model input of every call, split into its layers, against the budget.

Inline SVG (no script, no library): one stacked bar per call, a dashed line at ``usable`` (the
most an input may count) and, when it is on the scale, a dotted line at the whole budget; when
the thread's settings changed between calls, a dashed mark over each bar at its own ``usable``.
Every bar's tooltip (an SVG ``<title>``) gives its numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wm_langgraph.display.markup import LAYER_CLASSES, number, text
from wm_langgraph.display.model_input import LAYERS

__all__ = ["CallBar", "calls_chart"]

_WIDTH = 1040
_HEIGHT = 260
_LEFT = 64
_RIGHT = 16
_TOP = 14
_BOTTOM = 34


@dataclass(frozen=True, slots=True)
class CallBar:
    """One call's bar: its label, its tokens per layer and the usable budget it ran under
    (0: the chart's)."""

    label: str
    layers: dict[str, int]
    usable: int = 0

    @property
    def total(self) -> int:
        """The call's tokens."""
        return sum(self.layers.values())


def _ticks(top: int) -> list[int]:
    """Three or four round values from 0 to about ``top``."""
    if top <= 0:
        return [0]
    raw = top / 4
    magnitude = 10 ** (len(str(int(raw))) - 1)
    step = next(s * magnitude for s in (1, 2, 2.5, 5, 10) if s * magnitude >= raw)
    return [int(i * step) for i in range(int(top // step) + 1)]


def calls_chart(bars: Sequence[CallBar], *, usable: int, budget: int) -> str:
    """The SVG chart of ``bars`` (markup), or a note when there is no call."""
    if not bars:
        return '<p class="muted">No model call to chart.</p>'
    varied = len({b.usable or usable for b in bars}) > 1  # the settings changed: per bar
    top = max([usable, *(b.usable for b in bars), *(b.total for b in bars)]) * 1.08
    if budget <= top * 1.25:
        top = max(top, budget * 1.02)
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    slot = plot_w / len(bars)
    width = max(1.0, min(26.0, slot * 0.78))

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - value / top)

    out = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="100%" role="img" '
        f'aria-label="model input per call, by layer" xmlns="http://www.w3.org/2000/svg">'
    ]
    out.extend(
        f'<line class="axis" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y(tick):.1f}" '
        f'y2="{y(tick):.1f}"/><text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" '
        f'text-anchor="end">{number(tick)}</text>'
        for tick in _ticks(int(top))
    )
    every = max(1, round(len(bars) / 16))
    for index, bar in enumerate(bars):
        x = _LEFT + slot * index + (slot - width) / 2
        base = 0
        tip = f"{bar.label}: {number(bar.total)} tokens; " + ", ".join(
            f"{name} {number(bar.layers.get(name, 0))}" for name in LAYERS if bar.layers.get(name)
        )
        out.append(f"<g><title>{text(tip, 600)}</title>")
        for name in LAYERS:
            value = bar.layers.get(name, 0)
            if value <= 0:
                continue
            out.append(
                f'<rect class="{LAYER_CLASSES[name]}" x="{x:.1f}" y="{y(base + value):.1f}" '
                f'width="{width:.1f}" height="{max(0.5, y(base) - y(base + value)):.1f}"/>'
            )
            base += value
        out.append("</g>")
        if varied and bar.usable:
            out.append(
                f'<line class="usable" x1="{x - 2:.1f}" x2="{x + width + 2:.1f}" '
                f'y1="{y(bar.usable):.1f}" y2="{y(bar.usable):.1f}"/>'
            )
        if index % every == 0 or index == len(bars) - 1:
            out.append(
                f'<text x="{x + width / 2:.1f}" y="{_HEIGHT - _BOTTOM + 14}" '
                f'text-anchor="middle">{index + 1}</text>'
            )
    if not varied:
        out.append(
            f'<line class="usable" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y(usable):.1f}" '
            f'y2="{y(usable):.1f}"/><text x="{_WIDTH - _RIGHT}" y="{y(usable) - 4:.1f}" '
            f'text-anchor="end">usable {number(usable)}</text>'
        )
    if budget <= top and not varied:
        out.append(
            f'<line class="budget" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y(budget):.1f}" '
            f'y2="{y(budget):.1f}"/><text x="{_WIDTH - _RIGHT}" y="{y(budget) - 4:.1f}" '
            f'text-anchor="end">budget {number(budget)}</text>'
        )
    out.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_HEIGHT - 4}" text-anchor="middle">model call'
        "</text></svg>"
    )
    return "".join(out)
