"""Terminal-safe output: stored text (archived messages, Working Memory documents, thread ids)
is data from users, tools and models, and must never drive the terminal it is printed on.

:class:`SafeOutput` wraps the CLI's output streams. Every character that a terminal could take
as a command is written as a visible escape instead: the C0 controls except newline and tab
(``ESC`` starts every ANSI/OSC sequence: clear the screen, set the window title, write the
clipboard), ``DEL``, the C1 controls (``U+0080``-``U+009F``, among them the single-character
``CSI`` and ``OSC``), and the Unicode bidirectional overrides and isolates (which can make a
line read other than it is). In JSON output the same characters become JSON ``\\uXXXX``
escapes, so the document stays valid and decodes to the stored text unchanged.
"""

from __future__ import annotations

import re
from typing import TextIO

__all__ = ["SafeOutput", "json_safe", "terminal_safe"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control and bidi control written as a visible escape."""
    return _UNSAFE.sub(_visible, text)


def json_safe(text: str) -> str:
    """A JSON document's text with those characters as JSON ``\\uXXXX`` escapes (they can only
    occur inside its strings, where the escape decodes to the same character)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


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
