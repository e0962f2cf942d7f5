"""HTML building blocks of the displays: hostile text made inert, the stylesheet, the wrappers.

Every text a display shows comes from outside (users, tools, the writer, pasted pages) and is
hostile data. :func:`text` is the one way it enters the HTML: line ends become newlines (CRLF
text shows its line breaks), every character a person would not see or that a browser or a
terminal could act on becomes a visible escape (the C0 controls but newline and tab, ``DEL``,
the C1 controls, lone surrogates, the bidirectional marks, overrides and isolates, zero-width
characters, U+2028 and U+2029, the Unicode tag characters: ``\\u200b``, ``\\U000e0041``;
emoji sequences stay emoji, see :mod:`wm_langgraph.document.text.entry`), the text is cut to a
bound with a visible note, and then it is HTML-escaped, quotes included, so it is inert between
tags and inside attribute values alike. Nothing else reaches the markup but our own constant
tags and numbers.

The displays are plain HTML and CSS with inline SVG, no script and no external resource. A
Jupyter display is a :func:`fragment`: one ``<div class="wmv">`` with its stylesheet, every
rule scoped under ``.wmv`` so nothing leaks into the notebook's page. A saved report is a
:func:`page`: a self-contained file whose Content-Security-Policy forbids scripts and every
network fetch, a second line of defence behind the escaping.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from wm_langgraph.document.text.entry import show_hidden
from wm_langgraph.messages import safe_str

__all__ = [
    "LAYER_CLASSES",
    "Part",
    "badge",
    "details",
    "escape_code",
    "fragment",
    "meter",
    "number",
    "page",
    "stacked_bar",
    "text",
    "visible",
]

TEXT_LIMIT = 4_000
"""Characters of one text shown by default; the rest is named, not shown."""

_LINE_ENDS = re.compile(r"\r\n?")


def escape_code(char: str) -> str:
    """``\\x1b``, ``\\u200b``, ``\\U000e0041``: a character as its visible escape."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(value: str) -> str:
    """``value`` with its line ends as newlines and every hidden character (controls, bidi,
    zero-width, tags: :mod:`wm_langgraph.document.text.entry`) as its escape; emoji stay."""
    if "\r" in value:
        value = _LINE_ENDS.sub("\n", value)
    return show_hidden(value, escape_code)


def text(value: object, limit: int | None = TEXT_LIMIT) -> str:
    """``value`` as inert HTML text: hidden characters shown as escapes, cut to ``limit``
    characters (with a note of how many more there are), HTML-escaped with quotes.

    Args:
        value: Any object (its ``str``; an object whose ``str`` raises shows its type name).
        limit: The most characters shown; None shows everything.
    """
    raw = safe_str(value)
    note = ""
    if limit is not None and len(raw) > limit:
        note = f" [… {len(raw) - limit:,} more characters not shown]"
        raw = raw[:limit]
    return html.escape(visible(raw) + note, quote=True)


def number(value: float) -> str:
    """``1,234`` (rounded to a whole number)."""
    return f"{round(value):,}"


def badge(label: str, kind: str = "") -> str:
    """A small label (``kind``: one of the stylesheet's ``b-…`` classes, or none)."""
    cls = f"b b-{kind}" if kind else "b"
    return f'<span class="{text(cls)}">{text(label, 200)}</span>'


def details(summary: str, body: str, *, open_: bool = False) -> str:
    """A native collapsible block (no script). ``summary`` and ``body`` are markup."""
    flag = " open" if open_ else ""
    return f"<details{flag}><summary>{summary}</summary>{body}</details>"


LAYER_CLASSES: dict[str, str] = {
    "system": "l-sys",
    "working memory": "l-wm",
    "recalled": "l-rec",
    "verbatim fill": "l-fill",
    "pending archives": "l-pend",
    "live messages": "l-live",
    "free": "l-free",
    "reserve": "l-res",
}
"""The stylesheet class of each part of a model input's budget."""


@dataclass(frozen=True, slots=True)
class Part:
    """One coloured part of a stacked bar: its class, its size and its label."""

    cls: str
    value: int
    label: str


def stacked_bar(parts: Sequence[Part], scale: int, *, marks: Sequence[tuple[int, str]] = ()) -> str:
    """A horizontal bar of ``parts`` on a scale of ``scale`` units, with labelled ``marks``.

    Each part's width is its share of ``scale``; a part's label is its tooltip. A mark is a
    thin line at a value (the usable budget, a threshold).
    """
    scale = max(1, scale)
    cells = []
    for part in parts:
        if part.value <= 0:
            continue
        width = min(100.0, 100.0 * part.value / scale)
        cells.append(
            f'<span class="seg {text(part.cls)}" style="width:{width:.3f}%" '
            f'title="{text(part.label, 300)}"></span>'
        )
    lines = [
        f'<span class="mark" style="left:{min(100.0, 100.0 * at / scale):.3f}%" '
        f'title="{text(label, 300)}"></span>'
        for at, label in marks
    ]
    return f'<div class="bar">{"".join(cells)}{"".join(lines)}</div>'


def meter(value: int, limit: int, label: str) -> str:
    """A small gauge of ``value`` against ``limit`` (red past it), with ``label`` beside it."""
    share = 0.0 if limit <= 0 else min(1.0, value / limit)
    over = " over" if limit > 0 and value > limit else ""
    return (
        f'<span class="meter{over}" title="{text(label, 300)}">'
        f'<span style="width:{100 * share:.1f}%"></span></span>'
        f'<span class="mlabel">{text(label, 300)}</span>'
    )


STYLE = """
.wmv{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
 color:#1f2937;background:#fff;padding:12px 14px;border:1px solid #e5e7eb;border-radius:8px;
 max-width:1100px;box-sizing:border-box;text-align:left}
.wmv *{box-sizing:border-box;overflow-wrap:anywhere}
.wmv h1{font-size:20px;margin:0 0 6px}
.wmv h2{font-size:16px;margin:22px 0 8px;padding-bottom:4px;border-bottom:1px solid #e5e7eb}
.wmv h3{font-size:14px;margin:14px 0 6px}
.wmv .sub{color:#6b7280;margin:0 0 10px}
.wmv .muted{color:#6b7280}
.wmv .note{color:#6b7280;font-size:12px;margin:6px 0}
.wmv table{border-collapse:collapse;width:100%;margin:6px 0 10px}
.wmv th,.wmv td{border-bottom:1px solid #f0f1f3;padding:4px 6px;vertical-align:top;text-align:left}
.wmv th{font-weight:600;color:#374151;background:#f9fafb}
.wmv td.n,.wmv th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.wmv pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.4 ui-monospace,
 SFMono-Regular,Menlo,Consolas,monospace;background:#f9fafb;padding:6px 8px;border-radius:4px}
.wmv ul{margin:4px 0 8px;padding-left:20px}
.wmv li{margin:2px 0}
.wmv details{margin:4px 0}
.wmv summary{cursor:pointer;color:#374151}
.wmv .b{display:inline-block;font-size:11px;line-height:16px;padding:0 6px;border-radius:8px;
 background:#e5e7eb;color:#374151;margin-right:4px;vertical-align:1px;max-width:100%}
.wmv .b-done{background:#d1fae5;color:#065f46}
.wmv .b-pending{background:#fef3c7;color:#92400e}
.wmv .b-failed{background:#fee2e2;color:#991b1b}
.wmv .b-guard{background:#ffedd5;color:#9a3412}
.wmv .b-code{background:#ede9fe;color:#5b21b6}
.wmv .b-restored{background:#fce7f3;color:#9d174d}
.wmv .b-new{background:#dbeafe;color:#1e40af}
.wmv .b-resolved{background:#e5e7eb;color:#4b5563}
.wmv .b-moved{background:#f3f4f6;color:#4b5563}
.wmv .b-user{background:#dbeafe;color:#1e40af}
.wmv .b-ai{background:#d1fae5;color:#065f46}
.wmv .b-tool{background:#fef3c7;color:#92400e}
.wmv .b-system{background:#e5e7eb;color:#374151}
.wmv .f-written{color:#065f46}.wmv .f-added_on_followup{color:#1e40af}
.wmv .f-added_by_code{color:#5b21b6}.wmv .f-dismissed{color:#6b7280}
.wmv .f-skipped{color:#9a3412}
.wmv .sec{border:1px solid #eef0f3;border-radius:6px;padding:6px 10px;margin:8px 0}
.wmv .sech{display:flex;gap:10px;align-items:center;justify-content:space-between;
 flex-wrap:wrap}
.wmv .sech b{font-size:13px}
.wmv .meter{display:inline-block;width:90px;height:8px;background:#eef0f3;border-radius:4px;
 overflow:hidden;vertical-align:middle}
.wmv .meter span{display:block;height:100%;background:#60a5fa}
.wmv .meter.over span{background:#ef4444}
.wmv .mlabel{font-size:11px;color:#6b7280;margin:0 10px 0 5px}
.wmv .bar{position:relative;display:flex;height:18px;background:#f3f4f6;border-radius:4px;
 overflow:hidden;margin:4px 0}
.wmv .seg{display:block;height:100%}
.wmv .mark{position:absolute;top:0;bottom:0;width:2px;background:#111827}
.wmv .l-sys{background:#94a3b8;fill:#94a3b8}.wmv .l-wm{background:#6366f1;fill:#6366f1}
.wmv .l-rec{background:#d946ef;fill:#d946ef}
.wmv .l-fill{background:#38bdf8;fill:#38bdf8}.wmv .l-pend{background:#f59e0b;fill:#f59e0b}
.wmv .l-live{background:#10b981;fill:#10b981}.wmv .l-free{background:#f3f4f6;fill:#f3f4f6}
.wmv .l-res{background:#d1d5db;fill:#d1d5db}
.wmv svg,.wmv svg *{overflow-wrap:normal}
.wmv .key{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;color:#374151;margin:4px 0}
.wmv .key i,.wmv td i{display:inline-block;width:10px;height:10px;border-radius:2px;
 margin-right:4px;vertical-align:-1px}
.wmv table.diff th:nth-child(1){width:13%}.wmv table.diff th:nth-child(2){width:17%}
.wmv table.diff th:nth-child(3){width:24%}
.wmv .add{background:#ecfdf5}.wmv .del{background:#fef2f2;text-decoration:line-through;
 color:#7f1d1d}
.wmv .msg{border-left:3px solid #e5e7eb;padding:2px 8px;margin:6px 0}
.wmv .msg.human{border-color:#60a5fa}.wmv .msg.ai{border-color:#34d399}
.wmv .msg.tool{border-color:#fbbf24}.wmv .msg.system{border-color:#9ca3af}
.wmv svg text{font:11px system-ui,sans-serif;fill:#374151}
.wmv svg .axis{stroke:#d1d5db}.wmv svg .usable{stroke:#111827;stroke-dasharray:4 3}
.wmv svg .budget{stroke:#9ca3af;stroke-dasharray:2 3}
.wmv .strip{overflow-x:auto}
.wmv .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px;
 margin:6px 0 12px}
.wmv .card{border:1px solid #eef0f3;border-radius:6px;padding:6px 10px}
.wmv .card b{display:block;font-size:18px}
"""
"""The stylesheet: every rule under ``.wmv``."""

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def fragment(body: str) -> str:
    """A Jupyter display: ``body`` (markup) in the scoped root with its stylesheet."""
    return f'<div class="wmv"><style>{STYLE}</style>{body}</div>'


def page(title: str, body: str) -> str:
    """A self-contained HTML file: ``body`` (markup) under ``title`` (text, escaped here)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title, 200)}</title><style>body{{margin:16px;background:#f3f4f6}}"
        f"{STYLE}</style></head><body>"
        f'<div class="wmv">{body}</div></body></html>\n'
    )
