"""Archive abstracts: what the writer says each folded archive holds, read as hostile data
(behaviour §6.4, §7.6). Pure, no I/O.

In the Phase 2 call that folds archives, the writer also returns one short abstract per archive
(who, what, when, in the words a later question would use). The folded messages show where each
archive starts with a marker line, :func:`archive_marker` (``[archive archive_003]``); the update
tool takes the abstracts in its ``abstracts`` argument (a list of ``{archive_id, abstract}``),
a create reply writes them after the document in an ``<archive_abstracts>`` block, one
``<archive id>: <abstract>`` line each (:func:`split_created_abstracts`).

An abstract is data, never an instruction: :func:`clean_abstract` makes it one plain line —
no control, bidirectional or zero-width characters, no header or bullet markers, no chat-template
tokens or role markers, no prompt tags — of at most :data:`MAX_ABSTRACT_CHARS` characters, and
refuses text with nothing left to read. :func:`read_abstracts` reads whatever shape a model gave
(a list of objects, a mapping, ``id: text`` lines) and keeps only the archives that were folded;
a reply without abstracts, or with unreadable ones, gives none (the archive keeps the one-line
abstract Phase 1 wrote).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from wm_langgraph.document.json_repair import CUT_MARK

__all__ = [
    "ABSTRACTS_TAG",
    "MAX_ABSTRACT_CHARS",
    "archive_marker",
    "clean_abstract",
    "combine_abstracts",
    "marked_archive_ids",
    "marked_parts",
    "read_abstracts",
    "split_created_abstracts",
]

MAX_ABSTRACT_CHARS = 480
"""The longest abstract kept (characters, about 120 tokens); a longer one is cut at a word."""

ABSTRACTS_TAG = "archive_abstracts"
"""The tag of the abstracts block that follows a created document."""

_MARKER_RE = re.compile(r"^\[archive ([A-Za-z0-9][A-Za-z0-9_.:-]{0,127})\]$", re.M)
# C0/C1 controls, bidirectional embeddings/overrides/isolates, direction marks, zero-width
# characters, word joiner and invisible operators, BOM, the parser's cut marker.
_INVISIBLE_RE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\ue000]"
)
_TEMPLATE_TOKEN_RE = re.compile(
    r"<\|[^|>]{0,40}\|>|</?s>|\[/?INST\]|<</?SYS>>|<\s*/?\s*[A-Za-z_][\w-]{0,40}\s*>", re.I
)
_ROLE_RE = re.compile(
    r"\[(?:session history summary|archive [^\]]{0,130}|user|human|assistant|ai|system|"
    r"developer|tool(?: result)?[^\]]{0,80})\]"
    r"|(?:^|(?<=[.;:!?]\s))(?:user|human|assistant|ai|system|developer|tool)\s*:",
    re.I,
)
_LEAD_RE = re.compile(r"^(?:#{1,6}|[-*+•>]|\d{1,3}[.)]|abstract\s*:)\s*", re.I)
_EMPTY = frozenset({"none", "n/a", "na", "null", "nil", "keep", "(none)", "-", "tbd", "todo"})
_ID_KEYS = ("archive_id", "archive", "id", "archiveid")
_TEXT_KEYS = ("abstract", "text", "summary", "content", "description")
_LINE_RE = re.compile(r"^\s*[-*•]?\s*\[?([A-Za-z0-9][A-Za-z0-9_.:-]{0,127})\]?\s*[:=\-–—]\s*(.+)$")


def archive_marker(archive_id: str) -> str:
    """The line that starts an archive's messages in a Phase 2 prompt."""
    return f"[archive {archive_id}]"


def marked_archive_ids(text: str) -> list[str]:
    """The archive ids of the marker lines in ``text``, in order, without repeats."""
    return list(dict.fromkeys(_MARKER_RE.findall(text)))


def marked_parts(text: str) -> dict[str, str]:
    """Each marked archive's part of ``text``: what follows its marker line up to the next
    marker (an archive marked twice gets both parts)."""
    pieces = _MARKER_RE.split(text)
    out: dict[str, str] = {}
    for i in range(1, len(pieces) - 1, 2):
        out[pieces[i]] = out.get(pieces[i], "") + pieces[i + 1]
    return out


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:-–—") + "…"


def clean_abstract(text: object, limit: int = MAX_ABSTRACT_CHARS) -> str | None:
    """``text`` as an abstract may be stored and shown, or None when nothing usable is left.

    One line: invisible, control and other unprintable characters and line breaks become
    spaces; chat-template
    tokens (``<|im_start|>``), tags, role markers (``[assistant]``, ``system:``, an archive
    marker, ``[Session History Summary]``) and leading header, bullet or ``Abstract:`` markers
    are removed; blank space is squashed; the result is cut at a word to ``limit``
    characters. A value that is not text, was cut off by the reply's output limit, holds no
    letter or digit, or only says "none", gives None.
    """
    if not isinstance(text, str) or CUT_MARK in text:
        return None
    line = "".join(ch if ch.isprintable() else " " for ch in _INVISIBLE_RE.sub(" ", text))
    for pattern in (_TEMPLATE_TOKEN_RE, _ROLE_RE):
        line = pattern.sub(" ", line)
    line = " ".join(line.split())
    previous = None
    while previous != line:
        previous = line
        line = _LEAD_RE.sub("", line).strip().strip("\"'`“”").strip()
    if line.casefold() in _EMPTY or not any(ch.isalnum() for ch in line):
        return None
    return _cut(line, limit)


def _pairs(raw: object, depth: int = 0) -> list[tuple[object, object]]:
    """``(archive id, abstract)`` pairs from any shape a model may give."""
    if depth > 4 or raw is None:
        return []
    if isinstance(raw, str):
        return [
            (m.group(1), m.group(2)) for line in raw.splitlines() if (m := _LINE_RE.match(line))
        ]
    if isinstance(raw, Mapping):
        keys = {str(k).strip().casefold(): v for k, v in raw.items()}
        ident = next((keys[k] for k in _ID_KEYS if k in keys), None)
        body = next((keys[k] for k in _TEXT_KEYS if k in keys), None)
        if ident is not None and body is not None:
            return [(ident, body)]
        for wrapper in ("abstracts", "archives", "items"):
            if wrapper in keys:
                return _pairs(keys[wrapper], depth + 1)
        return [(k, v) for k, v in raw.items() if isinstance(v, str)]
    if isinstance(raw, Sequence):
        return [pair for entry in raw for pair in _pairs(entry, depth + 1)]
    return []


def read_abstracts(raw: object, archive_ids: Collection[str]) -> dict[str, str]:
    """The usable abstracts in ``raw`` of the archives ``archive_ids`` (cleaned).

    Args:
        raw: The model's abstracts: a list of ``{"archive_id", "abstract"}`` objects, a mapping
            of archive id to text, ``id: text`` lines, or anything else (then nothing).
        archive_ids: The archives the call folded: an abstract naming another id is dropped.

    Returns:
        Archive id -> its abstract (:func:`clean_abstract`); the first usable one per archive.
        Never raises.
    """
    wanted = {str(a) for a in archive_ids}
    out: dict[str, str] = {}
    try:
        pairs = _pairs(raw)
    except (RecursionError, TypeError, ValueError):
        return out
    for ident, body in pairs:
        key = str(ident).strip().strip("[]").strip() if isinstance(ident, str | int) else ""
        if key.casefold().startswith("archive ") and key[8:].strip() in wanted:
            key = key[8:].strip()
        if key not in wanted or key in out:
            continue
        text = clean_abstract(body)
        if text is not None:
            out[key] = text
    return out


_BLOCK_RE = re.compile(
    rf"<\s*{ABSTRACTS_TAG}\s*>(?P<body>.*?)(?:<\s*/\s*{ABSTRACTS_TAG}\s*>|\Z)", re.I | re.S
)


def split_created_abstracts(reply: str) -> tuple[str, str]:
    """A create reply split into its document and the body of its abstracts block (``""``
    when there is none); the block, closed or not, is removed from the document."""
    match = _BLOCK_RE.search(reply)
    if match is None:
        return reply, ""
    document = reply[: match.start()] + reply[match.end() :]
    return document.rstrip(), match.group("body")


def combine_abstracts(parts: Sequence[str], limit: int = MAX_ABSTRACT_CHARS) -> str | None:
    """One abstract from the abstracts of an archive's slices (each written for a part of
    it), in order, each given an equal share of ``limit``; None when there is none."""
    texts = list(dict.fromkeys(p for p in parts if p))
    if not texts:
        return None
    if len(texts) == 1:
        return _cut(texts[0], limit)
    share = max(40, (limit - 3 * (len(texts) - 1)) // len(texts))
    return _cut(" … ".join(_cut(t, share) for t in texts), limit)
