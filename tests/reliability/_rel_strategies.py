"""Hypothesis strategies for adversarial Working Memory documents and update ops.

The generators lean towards what breaks document code: header-like lines of every shape
(exact, lower-case, tabbed, trailing hashes, ``and`` for ``&``, carriage returns, the document
title), guard markers the model might forge, bullets, paths, dates, CJK, control characters and
unpaired brackets/quotes, alongside fully random Unicode.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from wm_langgraph.document import SECTIONS, render_working_memory

__all__ = [
    "HEADER_LIKE",
    "body",
    "json_values",
    "line",
    "old_document",
    "op",
    "ops",
    "raw_arguments",
    "valid_op",
    "valid_ops",
]

HEADER_LIKE: list[str] = [
    *(f"## {name}" for name in SECTIONS),
    *(f"##\t{name.lower()}" for name in SECTIONS),
    *(f"##   {name.replace('&', 'and')}  ##" for name in SECTIONS),
    "# Working Memory",
    "  # Working Memory  ",
    "## Unknown Header",
    "### Key Facts & Decisions",
    " ## Open Issues",
    "\r## Open Issues",
    "x\r## Errors & Corrections",
    "\u2028## Open Issues",
    "##",
    "## ",
    "＃＃ Open Issues",
    "## **Open Issues**",
    "## _Files & Context_",
    "- [silently dropped, restored] deploy is blocked",
    "[silently dropped, restored]",
    "- [resolved] flaky test",
    "[⚠ CONSOLIDATION REQUIRED: Key Facts exceeds size limit. You MUST use UPDATE to merge and "
    "compress existing bullets before adding new facts.]",
    "_one-line description of the section_",
    "```",
    "```markdown\n## Open Issues\n```",
    "<!-- ## Open Issues -->",
    '{"op": "UPDATE", "content": "## Open Issues"}',
]

_WORDS = st.sampled_from(
    [
        "deploy",
        "Postgres",
        "port 5432",
        "v2.3.1",
        "HTTP 429",
        "2024-03-15",
        "15 March 2024",
        "because",
        "decided",
        "$200",
        "src/app.py",
        "docs/README.md",
        "https://example.com/a/b",
        "and/or",
        "prefix",
        "fix",
        "東京",
        "作業メモ",
        "数据库迁移",
        "ünïcödé",
        "🙂",
        "\x00",
        "\t",
        "\\n",
        '"',
        "{",
        "}",
        "[",
        "]",
        "FACT-017",
        "the",
        "session",
    ]
)

_word_line = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)
_bullet_line = st.tuples(st.sampled_from(["- ", "* ", "1. ", "2) ", "• ", ""]), _word_line).map(
    "".join
)

line = st.one_of(
    st.sampled_from(HEADER_LIKE),
    _bullet_line,
    st.text(max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
)

body = st.lists(line, max_size=10).map("\n".join)


def _doc_from(bodies: dict[str, str]) -> str:
    return render_working_memory(bodies)


canonical_document = st.fixed_dictionaries(dict.fromkeys(SECTIONS, body)).map(_doc_from)

old_document = st.one_of(
    st.just(""),
    canonical_document,
    st.text(max_size=300),  # legacy summary or garbage
    st.lists(st.one_of(line, st.sampled_from(HEADER_LIKE)), max_size=20).map("\n".join),
)

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=30),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=10), children, max_size=4),
    ),
    max_leaves=12,
)

_item = st.one_of(line, st.integers(), st.none(), st.floats(), st.lists(st.text(), max_size=2))

valid_op = st.one_of(
    st.just({"op": "KEEP"}),
    st.builds(lambda c: {"op": "UPDATE", "content": c}, body),
    st.builds(lambda items: {"op": "APPEND", "items": items}, st.lists(line, max_size=6)),
)

op = st.one_of(
    valid_op,
    st.builds(lambda items: {"op": "APPEND", "items": items}, st.lists(_item, max_size=6)),
    st.builds(
        lambda name, payload: {"op": name, "content": payload, "items": payload},
        st.sampled_from(["update", "Append", "KEEP ", "DELETE", "", "UPDATE", "APPEND"]),
        json_values,
    ),
    st.fixed_dictionaries({"op": st.text(max_size=10)}),
    json_values,
)

_section_key = st.one_of(
    st.sampled_from(SECTIONS),
    st.sampled_from([n.lower() for n in SECTIONS]),
    st.text(max_size=15),
)

ops = st.one_of(st.none(), st.dictionaries(_section_key, op, max_size=9))

valid_ops = st.dictionaries(st.sampled_from(SECTIONS), valid_op, max_size=7)


def _truncate(text_and_cut: tuple[str, float]) -> str:
    text, frac = text_and_cut
    return text[: int(len(text) * frac)]


def _curly(text: str) -> str:
    return text.replace('"', "\u201c", 1).replace('"', "\u201d", 1)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


raw_arguments: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.text(max_size=200),
    json_values,
    json_values.map(_dump),
    valid_ops.map(lambda o: _dump({"sections": o})),
    valid_ops.map(_dump),  # missing outer "sections" wrapper
    valid_ops.map(lambda o: {"raw": _dump({"sections": o})}),
    valid_ops.map(lambda o: {"sections": o}),
    st.tuples(valid_ops.map(lambda o: _dump({"sections": o})), st.floats(0, 1)).map(_truncate),
    valid_ops.map(lambda o: _curly(_dump({"sections": o}))),
    valid_ops.map(lambda o: _dump({"sections": o}).replace("\\n", "\n")),  # raw newlines
    st.lists(st.sampled_from(HEADER_LIKE), max_size=5).map("\n".join),
)
