"""Keyword ranking for recall: search terms and Okapi BM25 (behaviour §7.6). Pure, no I/O.

Terms (:func:`search_terms`): runs of letters and digits, case-folded; English stop words
dropped; a light suffix stemmer so that ``migrating``, ``migrated`` and ``migration`` meet;
Chinese, Japanese and Korean runs, split at hiragana and Chinese function characters (的 了
是 …), give their character bigrams (a one-character piece gives itself), since those scripts
do not separate words.

Scores (:func:`bm25`): the classic Okapi formula with ``k1 = 1.2`` and ``b = 0.75`` and the
non-negative idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``. The caller keeps the postings (see
``storage.search_index``); this module only turns term statistics into scores.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache

from wm_langgraph.document.text.paths import CJK_CHARS, words

__all__ = [
    "BM25_B",
    "BM25_K1",
    "SEARCH_STOPWORDS",
    "bm25",
    "idf",
    "is_identifier",
    "query_identifiers",
    "query_words",
    "search_terms",
    "stem",
    "term_counts",
]

BM25_K1 = 1.2
BM25_B = 0.5

SEARCH_STOPWORDS: frozenset[str] = words(
    """a an the and or but if then else of to in on at by for with from into onto about as
    over under after before between through during without within than so such that this
    these those there here it its it's is are was were be been being am do does did done
    doing have has had having will would shall should can could may might must i me my mine
    we us our ours you your yours he him his she her hers they them their theirs what which
    who whom whose when where why how all any both each few more most other some no nor not
    only own same too very s t just also now ever again once up down out off yes ok okay
    oh hey hi let lets let's please thanks thank really m ve re ll d don didn doesn isn
    wasn aren weren won wouldn couldn shouldn can't don't i'm i've i'll i'd go goes going
    went gone get gets got getting make makes made kind kinds type sort thing things stuff
    much many lot lots likely would could something anything someone anyone every"""
)
"""Words that carry no meaning for search (questions are mostly made of them)."""

_RUN_RE = re.compile(r"[^\W_]+")
_SCRIPT_RE = re.compile(f"([{CJK_CHARS}]+)")
_CJK_RE = re.compile(f"[{CJK_CHARS}]")
# Hiragana (Japanese particles, inflection) and Chinese function characters split a CJK run
# before its bigrams, so "移是" or "成的" never make two texts look alike.
_CJK_SEPARATOR_RE = re.compile(r"[\u3040-\u309f的了和与及在是为对之把被等或中吗呢吧啊]+")
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ations", "ate"), ("ation", "ate"), ("ings", ""), ("ing", ""), ("ied", "y"), ("ies", "y"),
    ("ions", ""), ("ion", ""), ("ers", ""), ("er", ""), ("ed", ""), ("es", ""), ("s", ""),
)  # fmt: skip
_DOUBLED = frozenset("bdfgkmnprtz")
_UNDOUBLE = frozenset({"ing", "ings", "ed", "er", "ers"})
_IDENTIFIER_RE = re.compile(r"[^\w\s]|_|\d")
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}<>。，、；：？！「」『』（）《》"


def stem(word: str) -> str:
    """A light English stem: one inflection suffix off, then a final ``e``.

    ``migrate``, ``migrating``, ``migrated`` and ``migration`` all give ``migrat``;
    ``retries`` and ``retry`` give ``retry``; ``running`` gives ``run``. Words of other
    scripts, words with digits and words of three letters or fewer stay as they are.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    for suffix, replacement in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        base = word[: -len(suffix)]
        if suffix == "s" and base.endswith(("s", "u", "i")):
            break  # "class", "status", "analysis": not plurals
        if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
            base = word[:-1]  # "notes" -> "note", "boxes" -> "box"
        if replacement:
            base += replacement
        elif suffix in _UNDOUBLE and len(base) > 3 and base[-1] == base[-2] in _DOUBLED:
            base = base[:-1]  # "running" -> "run", "planned" -> "plan"
        word = base
        break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


@lru_cache(maxsize=65_536)
def _terms(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for run in _RUN_RE.findall(text):
        for part in _SCRIPT_RE.split(run):
            if not part:
                continue
            if _CJK_RE.match(part):
                for piece in _CJK_SEPARATOR_RE.split(part):
                    if len(piece) == 1:
                        out.append(piece)
                    else:
                        out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
                continue
            word = part.casefold()
            if word in SEARCH_STOPWORDS:
                continue
            out.append(stem(word))
    return tuple(out)


def search_terms(text: str) -> list[str]:
    """The search terms of ``text`` in order, repeats kept (see the module docstring)."""
    return list(_terms(text))


def term_counts(text: str) -> Counter[str]:
    """Each term of ``text`` with how often it occurs."""
    return Counter(_terms(text))


def is_identifier(word: str) -> bool:
    """True for a whitespace-free word that is more than plain letters: it holds a digit, an
    underscore or punctuation (``billing_v2``, ``src/app.py``, ``E1234``, ``FACT-1``); never
    for Chinese, Japanese or Korean text (whose sentences have no spaces)."""
    stripped = word.strip(_EDGE_PUNCTUATION)
    return (
        bool(stripped)
        and not any(c.isspace() for c in stripped)
        and not _CJK_RE.search(stripped)
        and bool(_IDENTIFIER_RE.search(stripped))
        and bool(_RUN_RE.search(stripped))
    )


def query_identifiers(query: str) -> list[str]:
    """The identifier-like words of a query (:func:`is_identifier`), edge punctuation off."""
    found = [w.strip(_EDGE_PUNCTUATION) for w in query.split() if is_identifier(w)]
    return list(dict.fromkeys(w for w in found if len(w) >= 2))


def query_words(query: str) -> int:
    """How many words a query has: whitespace-separated words, where a run of Chinese,
    Japanese or Korean characters counts one word per two characters."""
    count = 0
    for word in query.split():
        cjk = "".join(_CJK_RE.findall(word))
        rest = _CJK_RE.sub(" ", word).split()
        count += (len(cjk) + 1) // 2 + len([r for r in rest if _RUN_RE.search(r)])
    return count


def idf(documents: int, frequency: int) -> float:
    """Okapi's non-negative inverse document frequency."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def bm25(
    term_freqs: Mapping[str, int],
    length: int,
    weights: Mapping[str, float],
    average_length: float,
) -> float:
    """One document's BM25 score.

    Args:
        term_freqs: The document's count of each query term (others may be present).
        length: The document's length in terms.
        weights: The idf of each query term.
        average_length: The corpus's mean document length.
    """
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / max(average_length, 1e-9))
    score = 0.0
    for term, weight in weights.items():
        tf = term_freqs.get(term, 0)
        if tf:
            score += weight * tf * (BM25_K1 + 1.0) / (tf + norm)
    return score


def bm25_part(tf: int, length: int, weight: float, average_length: float) -> float:
    """One term's share of :func:`bm25` (for scoring from postings, term by term)."""
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / max(average_length, 1e-9))
    return weight * tf * (BM25_K1 + 1.0) / (tf + norm)


def distinct(terms: Iterable[str]) -> list[str]:
    """``terms`` without repeats, first occurrence order."""
    return list(dict.fromkeys(terms))
