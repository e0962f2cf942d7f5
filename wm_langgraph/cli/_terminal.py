"""Terminal-safe output: stored text (archived messages, Working Memory documents, thread ids)
is data from users, tools and models, and must never drive the terminal it is printed on, nor
hide from the person reading it.

:class:`SafeOutput` wraps the CLI's output streams. Every character that a terminal could take
as a command, or that a person would not see, is written as a visible escape instead: the C0
controls except newline and tab (``ESC`` starts every ANSI/OSC sequence: clear the screen, set
the window title, write the clipboard), ``DEL``, the C1 controls (``U+0080``-``U+009F``, among
them the single-character ``CSI`` and ``OSC``), the Unicode bidirectional marks, overrides and
isolates (which can make a line read other than it is), the zero-width characters, U+2028 and
U+2029, and the Unicode tag characters (an instruction written in them shows as nothing):
``\\x1b``, ``\\u200b``, ``\\U000e0041`` (emoji stay emoji:
:mod:`wm_langgraph.document.text.entry`). :func:`line_safe` also escapes newlines, for a
stored string printed inside one line (a thread id with a newline must not print as a second
thread). In JSON output the same characters become JSON ``\\uXXXX`` escapes, so the document
stays valid and decodes to the stored text unchanged.
"""

from __future__ import annotations

import re
from typing import TextIO

from wm_langgraph.document.text.entry import show_hidden

__all__ = ["SafeOutput", "json_safe", "line_safe", "terminal_safe"]

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON string names an astral character by its surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control and hidden character written as a visible
    escape (newline and tab kept)."""
    shown = show_hidden(text, _visible)
    return _CONTROLS.sub(lambda m: _visible(m.group(0)), shown)


def line_safe(text: str) -> str:
    """``text`` as :func:`terminal_safe` writes it, with newlines as ``\\n``: a stored
    string printed inside a line stays on it."""
    return terminal_safe(text).replace("\n", "\\n")


def json_safe(text: str) -> str:
    """A JSON document's text with those characters as JSON ``\\uXXXX`` escapes (they can only
    occur inside its strings, where the escape decodes to the same character)."""
    shown = show_hidden(text, _json_escape)
    return _CONTROLS.sub(lambda m: _json_escape(m.group(0)), shown)


class SafeOutput:
    """A text stream that writes :func:`terminal_safe` text to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        """Wrap ``stream``."""
        self._stream = stream

    @property
    def raw(self) -> TextIO:
        """The wrapped stream (for text already made safe, e.g. :func:`json_safe` JSON)."""
        return self._stream

    def write(self, text: str) -> int:
        """Write ``text`` made terminal-safe."""
        self._stream.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        """Flush the wrapped stream."""
        self._stream.flush()
