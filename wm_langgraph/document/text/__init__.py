"""Text analysis for the guards: meaningful title words, lexical anchors, path-like tokens.

Pure functions, no I/O, CJK-aware. The guards (:mod:`wm_langgraph.document.guards`) decide with
these; the engine reuses :func:`extract_paths` for the artifact trail and the offline model reuses
:func:`extract_anchors`.

Path rule (behaviour §4.4, made stricter so that prose is not a path). A token is a path when it is

* a URL (``scheme://…``), or a Windows path (``C:\\…``);
* a file name with a known extension (``main.py``, ``docs/index.html``, ``Cargo.lock``), a
  well-known extension-less file (``Dockerfile``, ``Makefile``) or a dotfile (``.env``);
* a slash shape ``a/b[/c…]`` that has a letter and at least one of: a leading ``/``, ``./``,
  ``../`` or ``~/``; a trailing ``/``; three or more segments; a first segment that is a
  well-known directory (``src/…``, ``tests/…``); a segment containing ``_`` or ``.``, or mixing
  letters and digits (``api/v2``).

So ``and/or``, ``input/output``, ``TCP/IP``, ``read/write``, ``media/search``, ``HTTP/2`` and
``3/15/2024`` are not paths, while ``src/utils``, ``app/models/user``, ``./run`` are.

A leading environment variable belongs to the path (``$HOME/.config/app.toml``,
``${XDG_CONFIG_HOME}/app/settings.toml``); a ``$`` alone makes nothing a path.

Anchors (behaviour §4.3 plus the go-further kinds) are returned in a canonical, case-folded form:
dates become ISO (``15 March 2024`` and ``2024年3月15日`` both give ``2024-03-15``), numbers lose
their thousands separators, ``HTTP 429`` gives ``http 429``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wm_langgraph.document.text.anchors import (
    ANCHOR_STOPWORDS,
    DECISION_MARKERS,
    anchor_in_text,
    anchor_wording,
    extract_anchors,
    missing_anchors,
)
from wm_langgraph.document.text.match import item_present, path_listed, paths_listed, term_in
from wm_langgraph.document.text.paths import (
    CJK_CHARS,
    MAX_PATH_CHARS,
    PATH_EXTENSIONS,
    extract_paths,
    is_junk,
    is_path_like,
    is_url,
    normalise_path,
    strip_urls,
    words,
)

__all__ = [
    "ANCHOR_STOPWORDS",
    "DECISION_MARKERS",
    "MAX_PATH_CHARS",
    "PATH_EXTENSIONS",
    "TITLE_STOPWORDS",
    "anchor_in_text",
    "anchor_wording",
    "contains_cjk",
    "extract_anchors",
    "extract_paths",
    "is_junk",
    "is_path_like",
    "is_url",
    "item_present",
    "meaningful_words",
    "missing_anchors",
    "negation_kept",
    "normalise_path",
    "path_listed",
    "paths_listed",
    "restates",
    "shares_meaningful_word",
    "strip_urls",
    "term_in",
]


# --------------------------------------------------------------------------------------------
# Titles
# --------------------------------------------------------------------------------------------

TITLE_STOPWORDS: frozenset[str] = words(
    "the a an and or of to in on for with by at from session title working memory "
    "plan plans notes note"
)
"""Words that carry no meaning in a session title (behaviour §4.1)."""

# CJK bigrams that are as empty as the English stopwords above (会话 session, 标题 title,
# 工作记忆 working memory, 笔记 notes, 计划 plan).
_CJK_TITLE_STOP_BIGRAMS = frozenset(
    {"会话", "标题", "工作", "作记", "记忆", "笔记", "计划", "計画", "メモ"}
)

_CJK_RE = re.compile(f"[{CJK_CHARS}]")
_WORD_RUN_RE = re.compile(r"[^\W_]+")
_SCRIPT_SPLIT_RE = re.compile(f"([{CJK_CHARS}]+)")
# Characters that split a CJK run before bigrams: hiragana (Japanese particles and inflection)
# and common Chinese function characters (的 了 和 与 及 在 是 …), so titles do not match on them.
_CJK_SEPARATOR_RE = re.compile(r"[\u3040-\u309f的了和与及在是为对之把被等或中]+")


def contains_cjk(text: str) -> bool:
    """True when ``text`` has at least one Chinese, Japanese or Korean character."""
    return bool(_CJK_RE.search(text))


def _stem(word: str) -> str:
    """A crude English stem so that ``migration`` and ``migrating`` (and ``retries`` and
    ``retry``) compare equal."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ations", "ation", "ings", "ing", "ions", "ion", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def meaningful_words(text: str) -> set[str]:
    """The meaningful words of a title: lower-cased stems without stopwords, plus CJK bigrams.

    Latin-script words drop ``TITLE_STOPWORDS`` and are stemmed crudely. CJK runs (split at
    hiragana and common function characters) give their character bigrams (a one-character run
    gives itself), so ``数据库迁移`` yields ``数据 据库 库迁 迁移``.
    """
    found: set[str] = set()
    for run in _WORD_RUN_RE.findall(text):
        for part in _SCRIPT_SPLIT_RE.split(run):
            if not part:
                continue
            if _CJK_RE.match(part):
                for piece in _CJK_SEPARATOR_RE.split(part):
                    if len(piece) == 1:
                        found.add(piece)
                    for i in range(len(piece) - 1):
                        bigram = piece[i : i + 2]
                        if bigram not in _CJK_TITLE_STOP_BIGRAMS:
                            found.add(bigram)
            else:
                word = part.casefold()
                if word not in TITLE_STOPWORDS and (len(word) > 1 or word.isdigit()):
                    found.add(_stem(word))
    return found


def shares_meaningful_word(old: str, new: str) -> bool:
    """True when ``new`` keeps a meaningful word of ``old``, or ``old`` has none (behaviour
    §4.1)."""
    old_words = meaningful_words(old)
    return not old_words or bool(old_words & meaningful_words(new))


# Words that carry the grammar of a statement, not its content: who says it, modals, auxiliaries,
# connectives and the labels a writer may add or leave out ("Decision:", "TODO:", "Important:").
# Negations are content ("do not send the digest daily") and stay.
_FUNCTION_WORDS = words(
    "i we you he she they us our my your his her their it its this that these those there "
    "is are was were be been am being do does did have has had will would shall should must "
    "can could may might need needs let lets now but so because then also just really please "
    "decision decided todo important"
)
_NEGATION_WORDS = words("not never no")


_NEGATED_RE = re.compile(r"(?:\b(?:not|never|no)|\Bn['’]t)\s+([^\W\d_]+)", re.I)
_NEGATION_RE = re.compile(r"\b(?:not|never|no|none|without|avoid)\b|n['’]t\b", re.I)


def _negated(text: str) -> bool:
    """Whether ``text`` negates its content ("do not bump the version", "never push"); a
    negation of grammar ("Not now, but we must …", "No, do …") is not one."""
    return any(m.group(1).casefold() not in _FUNCTION_WORDS for m in _NEGATED_RE.finditer(text))


def negation_kept(statement: str, item: str) -> bool:
    """Whether ``item`` keeps the negation of ``statement``: true unless ``statement`` negates
    its content ("do not bump the version", "no longer keyboards") and ``item`` has no
    negation (the rule :func:`restates` applies)."""
    return not _negated(statement) or _NEGATION_RE.search(item) is not None


@lru_cache(maxsize=4096)
def key_words(text: str) -> frozenset[str]:
    """The words a restatement of ``text`` keeps: :func:`meaningful_words` without
    :data:`_FUNCTION_WORDS` and negations (:func:`restates` checks those apart); CJK bigrams as
    they are. Cached: a capture round compares each statement with every item."""
    return frozenset(meaningful_words(text) - _FUNCTION_WORDS - _NEGATION_WORDS)


def restates(statement: str, item: str) -> bool:
    """True when ``item`` restates ``statement``: it keeps every one of up to two of the
    statement's :func:`key_words` and more than half of more (a note drops the grammar, the
    framing and a side detail such as "before the release", not the content). A statement that
    negates its content ("do not bump the major version") is restated only by an item with a
    negation; one without key words by nothing (:func:`item_present` is the whole-text test).

    >>> restates("Not now, but we must document the rate limiter settings before the release.",
    ...          "TODO: document the rate limiter settings before the release")
    True
    >>> restates("We must document the rate limiter settings.", "Rate limiter: 100 rps")
    False
    """
    wanted = key_words(statement)
    if not wanted or not negation_kept(statement, item):
        return False
    kept = len(wanted & key_words(item))
    need = len(wanted) if len(wanted) <= 2 else len(wanted) // 2 + 1
    return kept >= need
