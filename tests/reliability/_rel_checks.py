"""Assertions shared by the reliability tests: document shape (design §3.7)."""

from __future__ import annotations

import re

from wm_langgraph.document import SECTIONS, parse_working_memory, render_working_memory

__all__ = ["assert_seven_sections", "header_lines"]

_HEADER = re.compile(r"^\s*##[ \t]+\S")  # indented too: Markdown and models read it so


def header_lines(text: str) -> list[str]:
    """Every line a parser would take for a ``##`` header (after newline normalisation)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [line for line in lines if _HEADER.match(line)]


def assert_seven_sections(text: str) -> None:
    """``text`` is a canonical document: title, exactly the seven headers in order, a fixed
    point of parse -> render, and no second document title."""
    assert isinstance(text, str)
    assert header_lines(text) == [f"## {name}" for name in SECTIONS], header_lines(text)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert lines[0] == "# Working Memory"
    assert [ln for ln in lines[1:] if ln.strip() == "# Working Memory"] == []
    assert render_working_memory(parse_working_memory(text)) == text
