"""Repair of almost-JSON text as models emit it in tool-call arguments (behaviour §3.3).

Private helper of ``document.protocol``. Two entry points:

* :func:`repair_json` turns a damaged JSON object into a Python value: it skips text before
  the first ``{``, escapes raw control characters inside strings, accepts curly and single
  quotes as string delimiters, escapes stray quotes inside strings, drops trailing commas,
  maps Python literals (``True``/``False``/``None``), and closes truncated text at the last
  complete value (an unterminated string is cut away, not closed, so a half-written value is
  never taken for a whole one).
* :func:`repair_json_partial` does the same but keeps a string cut off by the end of the text:
  it is closed with :data:`CUT_MARK` at its end (so the caller can tell the cut value from the
  complete ones and keep only its complete part), and it reports whether the text was complete.
* :func:`decode_string_literal` decodes the body of a JSON string leniently (for the regex
  salvage, which finds string bodies without a parser).

Never raises on any ``str`` input; returns ``None`` when nothing parses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CUT_MARK", "Repaired", "decode_string_literal", "repair_json", "repair_json_partial"]

CUT_MARK = "\ue000"
"""Ends the one string value that the end of the text cut off (a private-use character; any
occurrence in the input, also as the JSON escape ``\\ue000``, is removed before the repair)."""
_ESCAPED_CUT_MARK = re.compile(r"(?<!\\)((?:\\\\)*)\\u[eE]000")

# Opening quote -> characters that may close a string it opened.
_QUOTES: dict[str, str] = {
    '"': '"',
    "'": "'",
    "\u201c": '\u201d\u201c"',  # “ … ” (models also close with “ or a straight quote)
    "\u201d": '\u201d\u201c"',
    "\u201e": '\u201d\u201c"',  # „
    "\u2018": "\u2019\u2018'",  # ‘ … ’
}
_CLOSERS = {"{": "}", "[": "]"}
_LITERALS = {"True": "true", "False": "false", "None": "null", "NULL": "null", "Null": "null"}
_VALUE_END_FOLLOWERS = frozenset(",:}]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_MAX_CUT_ATTEMPTS = 200


# The open-bracket stack as an immutable linked list (bracket, parent), so that remembering
# the stack at every cut point costs O(1) instead of a copy.
_Stack = tuple[str, "_Stack"] | None


def _closers(stack: _Stack) -> str:
    out: list[str] = []
    while stack is not None:
        out.append(_CLOSERS[stack[0]])
        stack = stack[1]
    return "".join(out)


@dataclass
class _Scan:
    """The result of one pass over the text."""

    out: list[str] = field(default_factory=list)
    stack: _Stack = None
    # (length of ``out`` joined, the open brackets then) after each complete token.
    cuts: list[tuple[int, _Stack]] = field(default_factory=list)
    in_string: bool = False
    complete: bool = False
    length: int = 0

    def emit(self, text: str) -> None:
        self.out.append(text)
        self.length += len(text)

    def mark_cut(self) -> None:
        self.cuts.append((self.length, self.stack))

    def drop_trailing_comma(self) -> None:
        """Remove a trailing ``,`` (and blank space after it) before a closing bracket."""
        idx = len(self.out) - 1
        while idx >= 0 and self.out[idx].isspace():
            idx -= 1
        if idx >= 0 and self.out[idx] == ",":
            removed = self.out[idx:]
            del self.out[idx:]
            self.length -= sum(len(part) for part in removed)


def _is_hex4(text: str, pos: int) -> bool:
    chunk = text[pos : pos + 4]
    return len(chunk) == 4 and all(c in "0123456789abcdefABCDEF" for c in chunk)


def _closes_here(text: str, pos: int) -> bool:
    """A quote at ``pos`` ends its string when the next non-blank char is , : } ] or the end."""
    nxt = pos + 1
    size = len(text)
    while nxt < size and text[nxt] in " \t\r\n":
        nxt += 1
    return nxt >= size or text[nxt] in _VALUE_END_FOLLOWERS


def _scan(text: str) -> _Scan:
    state = _Scan()
    start = text.find("{")
    if start < 0:
        return state
    opener = ""
    literal: list[str] = []
    pos = start
    size = len(text)

    def flush_literal() -> None:
        if literal:
            word = "".join(literal)
            state.emit(_LITERALS.get(word, word))
            literal.clear()
            state.mark_cut()

    while pos < size:
        char = text[pos]
        if state.in_string:
            if char == "\\":
                if pos + 1 >= size:
                    break  # a dangling backslash at the cut: the string is unterminated
                nxt = text[pos + 1]
                if nxt == "u" and pos + 6 > size:
                    break  # the text ends inside a \u escape: the string is unterminated
                if nxt == "u" and not _is_hex4(text, pos + 2):
                    state.emit("\\\\")  # a lone backslash before a non-escape
                    pos += 1
                    continue
                if nxt in '"\\/bfnrtu':
                    state.emit(char + nxt)
                elif nxt == "'":
                    state.emit("'")
                else:
                    state.emit("\\\\" + (_CONTROL_ESCAPES.get(nxt) or nxt))
                pos += 2
                continue
            if char in _QUOTES[opener] and _closes_here(text, pos):
                state.emit('"')
                state.in_string = False
                state.mark_cut()
            elif char == '"':
                state.emit('\\"')
            elif char in _CONTROL_ESCAPES:
                state.emit(_CONTROL_ESCAPES[char])
            elif ord(char) < 0x20:
                state.emit(f"\\u{ord(char):04x}")
            else:
                state.emit(char)
            pos += 1
            continue
        if char in _QUOTES:
            flush_literal()
            opener = char
            state.in_string = True
            state.emit('"')
        elif char in _CLOSERS:
            flush_literal()
            state.stack = (char, state.stack)
            state.emit(char)
            state.mark_cut()
        elif char in "}]":
            flush_literal()
            state.drop_trailing_comma()
            if state.stack is not None and _CLOSERS[state.stack[0]] == char:
                state.stack = state.stack[1]
            state.emit(char)
            state.mark_cut()
            if state.stack is None:
                state.complete = True
                break
        elif char in ",:" or char.isspace():
            flush_literal()
            state.emit(char)
        else:
            literal.append(char)
        pos += 1
    if not state.in_string and not state.complete and literal:
        # the text ended on a bare word: keep it only if it parses (a complete ``null``)
        state.emit(_LITERALS.get("".join(literal), "".join(literal)))
    return state


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


@dataclass(frozen=True, slots=True)
class Repaired:
    """What :func:`repair_json_partial` read.

    Attributes:
        value: The parsed value, or None when nothing parses.
        complete: The text held a whole JSON object (its outermost brace was closed).
        cut: A string value cut off by the end of the text was kept, ending in CUT_MARK.
    """

    value: Any
    complete: bool
    cut: bool


def repair_json(text: object) -> Any:
    """Parse ``text`` as a (possibly damaged or truncated) JSON object.

    Returns:
        The parsed object (usually a dict), or ``None`` when no repair parses.
    """
    return _repair(text, keep_partial=False).value


def repair_json_partial(text: object) -> Repaired:
    """Like :func:`repair_json`, but a string value cut off by the end of the text is kept.

    The cut string is closed with :data:`CUT_MARK` as its last character, so the caller can
    keep its complete part (behaviour §3.4: truncated content is salvaged). A cut-off *key* cannot
    be kept; the text is then closed at the last complete value, as :func:`repair_json` does.
    """
    return _repair(text, keep_partial=True)


def _repair(text: object, *, keep_partial: bool) -> Repaired:
    if not isinstance(text, str):
        return Repaired(None, complete=False, cut=False)
    if keep_partial:
        text = _ESCAPED_CUT_MARK.sub(r"\1", text.replace(CUT_MARK, ""))
    if text[:1] == "{":
        value = _loads(text)  # fast path: valid JSON needs no repair
        if value is not None:
            return Repaired(value, complete=True, cut=False)
    state = _scan(text)
    joined = "".join(state.out)
    if not joined:
        return Repaired(None, complete=False, cut=False)
    if state.complete:
        value = _loads(joined)
        if value is not None:
            return Repaired(value, complete=True, cut=False)
    elif not state.in_string:
        value = _loads(joined + _closers(state.stack))
        if value is not None:
            return Repaired(value, complete=False, cut=False)
    elif keep_partial:
        value = _loads(joined + CUT_MARK + '"' + _closers(state.stack))
        if value is not None:
            return Repaired(value, complete=False, cut=True)
    return Repaired(_close_at_last_cut(state, joined), complete=False, cut=False)


def _close_at_last_cut(state: _Scan, joined: str) -> Any:
    for length, stack in reversed(state.cuts[-_MAX_CUT_ATTEMPTS:]):
        prefix = joined[:length].rstrip()
        if prefix.endswith(","):
            prefix = prefix[:-1]
        value = _loads(prefix + _closers(stack))
        if value is not None:
            return value
    return None


def decode_string_literal(body: str) -> str:
    """Decode the inside of a JSON string (escapes), leniently: bad escapes stay as written."""
    value = _loads('"' + body.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"')
    if isinstance(value, str):
        return value
    out: list[str] = []
    pos = 0
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/"}
    while pos < len(body):
        char = body[pos]
        if char == "\\" and pos + 1 < len(body) and body[pos + 1] in simple:
            out.append(simple[body[pos + 1]])
            pos += 2
            continue
        out.append(char)
        pos += 1
    return "".join(out)
