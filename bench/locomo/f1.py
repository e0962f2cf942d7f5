"""LoCoMo's answer score: token F1 against the gold answer, with its category rules.

Written here from the definition in LoCoMo's evaluation code (snap-research/locomo,
``task_eval/evaluation.py``: ``normalize_answer``, ``f1_score``, ``f1`` and
``eval_question_answering``), so that our figures read like the paper's:

1. **Normalisation** (:func:`normalize_answer`): commas removed, lower case, every ASCII
   punctuation character removed, the words ``a``, ``an``, ``the`` and ``and`` removed, blank
   space squashed.
2. **Tokens**: the normalised text split on blank space, each token reduced by the Porter
   stemmer (NLTK's ``PorterStemmer``, the one LoCoMo uses).
3. **Token F1** (:func:`token_f1`): the multiset overlap of prediction and gold tokens;
   precision = overlap / prediction tokens, recall = overlap / gold tokens, F1 their harmonic
   mean; 0 when nothing overlaps.
4. **By category** (:func:`answer_f1`): category 1 (multi-hop) splits both answers on commas
   *before* normalising and takes, for each gold part, the best F1 of any predicted part, then
   the mean over gold parts; category 3 (open-domain) keeps the gold answer up to its first
   ``;``; categories 2 and 4 use the plain token F1. Category 5 (adversarial) is not scored by
   this bench (its questions are left out of every LoCoMo table here).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

__all__ = ["answer_f1", "normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation (module docstring, step 1)."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _stemmer() -> object:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))  # type: ignore[attr-defined]


def _tokens(text: str) -> list[str]:
    return [_stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 of ``prediction`` against ``gold`` (module docstring, steps 1-3)."""
    predicted, wanted = _tokens(prediction), _tokens(gold)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def answer_f1(prediction: str, gold: str, category: int) -> float:
    """LoCoMo's score of one answer of ``category`` (module docstring, step 4).

    Raises:
        ValueError: ``category`` is not one of 1-4.
    """
    if category == 1:
        parts = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in gold.split(",")]
        return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)
    if category == 3:
        return token_f1(prediction, gold.split(";", maxsplit=1)[0].strip())
    if category in (2, 4):
        return token_f1(prediction, gold)
    raise ValueError(f"LoCoMo scores categories 1-4 with F1, got {category}")
