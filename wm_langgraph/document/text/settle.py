"""When a later statement settles an open item (behaviour §5.11). Pure, no I/O.

``settles(item, statement)`` is conservative: the statement must report an outcome (a
*settling* word, "done", "cancelled", "confirmed", "decided", "checked", "决定了", not negated:
"not decided yet" settles nothing), or be the answer of the person the item waits on ("I'll ask
Priscilla" … "Priscilla says …"); it must be a statement, not a question nor a new open item;
and it must clearly refer to the item: at least two of the item's content words (stems, a
shared prefix of five letters counts: "cancel" / "cancelled", an irregular past its verb:
"bought" / "buy"; the words that only say it is open, "not sure yet whether", aside), and
besides those a third shared word, half of the item's words, or an anchor of the item (a
name, a number, an id).

    >>> settles("I still have to cancel the Eneco energy contract.",
    ...         "Cancelled the Eneco contract this morning.")
    True
    >>> settles("TODO: rotate the API keys before Friday.", "We rotated the staging password.")
    False
"""

from __future__ import annotations

import re
from functools import lru_cache

from wm_langgraph.document.text import extract_anchors, key_words
from wm_langgraph.document.text.match import strip_tags
from wm_langgraph.document.text.units import statement_kind

__all__ = ["SETTLING_RE", "settles"]

_I = re.IGNORECASE
SETTLING_RE = re.compile(
    r"\b(?:done|fixed|resolved|solved|answered|confirmed|confirms|decided|settled|agreed|chose|"
    r"cancell?ed|booked|paid|sent|filed|submitted|signed|closed|finished|completed|scheduled|"
    r"bought|found|got|picked up|returned|replaced|installed|called|emailed|delivered|"
    r"arranged|ordered|renewed|rotated|checked|verified|clarified|merged|shipped|deployed|"
    r"found out|turns out|turned out|no longer needed|not needed|not worth)\b"
    r"|已(?:经)?(?:解决|完成|修复|确认|确定|取消|预订|订好|发送|提交|付)|决定了|定了|确认了|确定了|"
    r"完成了|解决了|取消了|订好了|搞定|決めました|決定しました|完了|済み|確認しました",
    _I,
)
"""Words that report an outcome."""
_NEGATED_RE = re.compile(r"\b(?:not|n't|never|yet to|not yet|no one|nobody)\s+(?:\w+\s+)?$", _I)
_ANSWER_RE = re.compile(
    r"^\s*(?P<who>[A-Z][a-z]{1,20})\s+(?:says|said|told (?:me|us)|replied|answered|wrote back|"
    r"got back)\b"
)
"""The answer of someone the item names ("Priscilla says refunds are subtracted")."""
_QUESTION_RE = re.compile(r"[?？]\s*$")
_PREFIX = 5
"""Two stems that share their first five letters are one word ("cancel", "cancell")."""


_HEDGES = frozenset(
    re.findall(
        r"\S+",
        "not sure yet if whether still open question need needs todo maybe undecided decide "
        "tbd tbc pending have has to also",
    )
)
"""Words that say an item is open, not what it is about."""
_IRREGULAR = {
    "bought": "buy",
    "found": "find",
    "got": "get",
    "sent": "send",
    "paid": "pay",
    "made": "make",
    "took": "take",
    "gave": "give",
    "told": "tell",
    "wrote": "write",
    "chose": "choose",
    "sold": "sell",
    "brought": "bring",
    "met": "meet",
    "ran": "run",
    "did": "do",
    "kept": "keep",
    "built": "build",
    "left": "leave",
    "spoke": "speak",
}
"""Irregular past forms: "Bought a pot" settles "buy a bigger pot"."""


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    plain = re.sub(
        r"\b(" + "|".join(_IRREGULAR) + r")\b",
        lambda m: _IRREGULAR[m[1].casefold()],
        text,
        flags=_I,
    )
    return frozenset(w for w in key_words(plain) if w not in _HEDGES)


def _shared(item: frozenset[str], statement: frozenset[str]) -> int:
    count = 0
    for word in item:
        if word in statement or (
            len(word) >= _PREFIX
            and any(len(w) >= _PREFIX and w[:_PREFIX] == word[:_PREFIX] for w in statement)
        ):
            count += 1
    return count


def _reports_outcome(item: str, statement: str) -> bool:
    for match in SETTLING_RE.finditer(statement):
        if not _NEGATED_RE.search(statement[: match.start()]):
            return True
    answer = _ANSWER_RE.match(statement)
    return answer is not None and re.search(rf"\b{answer['who']}\b", item) is not None


def settles(item: str, statement: str) -> bool:
    """Whether ``statement`` settles the open ``item`` (module docstring)."""
    core = strip_tags(item)
    if _QUESTION_RE.search(statement) or not _reports_outcome(core, statement):
        return False
    if statement_kind(statement) == "todo":
        return False  # a new open item, not an outcome
    words = _words(core)
    shared = _shared(words, _words(statement))
    if shared < 2:
        return False
    if shared >= 3 or 2 * shared >= len(words):
        return True
    anchors = extract_anchors(core, include_markers=False, include_phrases=False)
    said = extract_anchors(statement, include_markers=False, include_phrases=False)
    return bool(anchors & said)
