"""Whether a question's answer is in a text: content-word coverage (definitions in LOCOMO.md).

Both sides go through :func:`words`:

1. Unicode NFKD, lower case, apostrophes removed (``Caroline's`` -> ``carolines``);
2. tokens are runs of ``[a-z0-9]`` (so ``8 May, 2023`` -> ``8 may 2023``, ``J.K.`` -> ``j k``);
3. ordinal suffixes go (``15th`` -> ``15``) and the number words one to ten and first to
   third become digits (``two`` -> ``2``);
4. a light stemmer strips one of ``ing``, ``ed``, ``es``, ``s``, ``ly`` when at least three
   letters remain (``paintings`` -> ``painting`` -> ``paint``… one suffix only:
   ``paintings`` -> ``painting``).

The answer's *content words* are its tokens minus :data:`STOPWORDS` (NLTK's English list).
A question is **covered** by a text when at least two thirds of its answer's content words are
among the text's tokens (:data:`THRESHOLD`); **covered (all words)** asks for every one. An
answer with no content word (e.g. "no") is never covered.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

__all__ = [
    "EVIDENCE_PREFIX_CHARS",
    "STOPWORDS",
    "THRESHOLD",
    "content_words",
    "coverage",
    "evidence_in_hits",
    "words",
]

THRESHOLD = 2 / 3
EVIDENCE_PREFIX_CHARS = 60
"""How much of an evidence message's text a search hit must show (:func:`evidence_in_hits`)."""

STOPWORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now d ll m o re
    ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn
    weren won wouldn""".split()  # noqa: SIM905 (a word list reads better as text)
)
"""NLTK's English stopword list (179 words)."""

_NUMBERS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "first": "1",
    "second": "2",
    "third": "3",
}
_TOKEN_RE = re.compile(r"[a-z0-9]+")
_ORDINAL_RE = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@lru_cache(maxsize=1 << 16)
def _normal(token: str) -> str:
    ordinal = _ORDINAL_RE.match(token)
    if ordinal:
        return ordinal.group(1)
    token = _NUMBERS.get(token, token)
    for suffix in _SUFFIXES:
        if len(token) >= len(suffix) + 3 and token.endswith(suffix) and not token.isdigit():
            return token[: -len(suffix)]
    return token


def _tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).lower().replace("'", "").replace("’", "")
    return _TOKEN_RE.findall(folded)


def words(text: str) -> set[str]:
    """The normalised tokens of ``text`` (stopwords included)."""
    return {_normal(t) for t in _tokens(text)}


def content_words(answer: str) -> list[str]:
    """The answer's normalised content words, in order, without repeats."""
    out: list[str] = []
    for token in _tokens(answer):
        if token in STOPWORDS:
            continue
        word = _normal(token)
        if word not in out:
            out.append(word)
    return out


def coverage(answer: str, bag: set[str]) -> tuple[bool, bool]:
    """(covered at :data:`THRESHOLD`, covered with every content word) of ``answer`` by the
    text whose :func:`words` are ``bag``."""
    wanted = content_words(answer)
    if not wanted:
        return False, False
    found = sum(1 for w in wanted if w in bag)
    return found >= THRESHOLD * len(wanted) - 1e-9, found == len(wanted)


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def evidence_in_hits(hits: Sequence[str], evidence: Sequence[str]) -> bool:
    """Whether a hit holds an evidence message: the first :data:`EVIDENCE_PREFIX_CHARS`
    characters of the message's own text (whole when shorter; whitespace squashed, case
    folded) occur in the hit's text."""
    keys = [_squash(t)[:EVIDENCE_PREFIX_CHARS] for t in evidence if t.strip()]
    shown = [_squash(h) for h in hits]
    return any(k in h for k in keys for h in shown)
