"""The one answer to "is this item still there": whole-item and path-boundary matching.

Every check of the guards, the merge and the engine's artifact trail that asks whether an old
item, path or anchor is still present goes through here: a raw substring test took "TODO 1" as
kept by "TODO 10" and found "fix" in "prefix".

* **Whole item** (:func:`item_present`): an old item is still there when one item of the new
  text holds its whole text — tags such as ``[new]`` / ``[resolved]``, emphasis, case and
  spacing aside — starting and ending at word boundaries. So ``TODO 1`` is not kept by
  ``TODO 10``, ``fix login`` not by ``prefix login handling``, while
  ``[resolved] TODO 1: done in #42`` keeps ``TODO 1``. Text split over two items does not count.
* **Path boundary** (:func:`path_listed`): a path is listed when a path of the text (as
  :func:`~wm_langgraph.document.text.extract_paths` finds them) is the same path or ends with it
  at a ``/``: ``src/a.py`` lists ``a.py``; ``src/data.py`` does not, nor does
  ``config.yaml.bak`` list ``config.yaml``.
* **Bounded term** (:func:`term_in`): an anchor or phrase occurs in a text when it is not
  glued to a longer ASCII word, number, version or file name (``5432`` is not in ``54321``,
  ``v2.3`` not in ``v2.3.1``). CJK text has no word boundaries; a CJK term is found where its
  characters occur.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache

from wm_langgraph.document.text.paths import extract_paths, normalise_path

__all__ = [
    "item_core",
    "item_present",
    "join_texts",
    "path_listed",
    "paths_listed",
    "strip_tags",
    "term_in",
    "terms_in_texts",
]

_TAGS_RE = re.compile(r"^(?:\[[^\]\n]{0,40}\][ \t]*)+")
_EMPHASIS_RE = re.compile(r"~~|\*\*|__|[*`]")
_LEFT = r"(?<![0-9a-z_])(?<![0-9a-z_][.\-])"
_RIGHT = r"(?![0-9a-z_])(?![.\-][0-9a-z_])"


@lru_cache(maxsize=16384)
def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def strip_tags(item: str) -> str:
    """``item`` without its leading ``[tag]`` prefixes (``[new]``, ``[resolved]``, markers)."""
    return _TAGS_RE.sub("", item.strip())


def item_core(item: str) -> str:
    """Comparison form of an item: no leading tags or emphasis, case-folded, spacing collapsed,
    no trailing punctuation."""
    text = _collapse(_EMPHASIS_RE.sub("", strip_tags(_EMPHASIS_RE.sub("", item.strip()))))
    return text.strip(" \t.;,:!?'\"").strip()


@lru_cache(maxsize=16384)
def _bounded(core: str) -> re.Pattern[str]:
    return re.compile(_LEFT + re.escape(core) + _RIGHT)


def term_in(term: str, text: str) -> bool:
    """True when ``term`` occurs in ``text`` (case-folded, spacing collapsed) at word boundaries.

    Boundaries are ASCII: a term is not found inside a longer word, number, dotted version or
    hyphenated id, but a CJK term is found between CJK characters.
    """
    core = _collapse(term)
    return bool(core) and _bounded(core).search(_collapse(text)) is not None


def terms_in_texts(term: str, texts: list[str], starts: list[int], joined: str) -> set[int]:
    """The indexes of ``texts`` in which ``term`` occurs (:func:`term_in`), found with one
    search over ``joined`` (the collapsed texts joined by newlines, ``starts`` their offsets;
    see :func:`join_texts`)."""
    core = _collapse(term)
    if not core:
        return set()
    return {bisect_right(starts, m.start()) - 1 for m in _bounded(core).finditer(joined)}


def join_texts(texts: list[str]) -> tuple[list[int], str]:
    """Offsets and the joined collapsed form of ``texts`` for :func:`terms_in_texts`."""
    starts: list[int] = []
    parts: list[str] = []
    offset = 0
    for text in texts:
        collapsed = _collapse(text)
        starts.append(offset)
        parts.append(collapsed)
        offset += len(collapsed) + 1
    return starts, "\n".join(parts)


def item_present(item: str, candidates: Iterable[str]) -> bool:
    """True when one of ``candidates`` (items) holds the whole of ``item`` (module docstring).

    An item without any text of its own (only tags or punctuation) counts as present.
    """
    core = item_core(item)
    if not core:
        return True
    pattern = _bounded(core)
    return any(pattern.search(item_core(candidate)) for candidate in candidates)


def _listed(path: str, norms: set[str]) -> bool:
    norm = normalise_path(path)
    if not norm:
        return True
    return norm in norms or any(other.endswith("/" + norm) for other in norms)


def paths_listed(paths: Iterable[str], text: str) -> list[bool]:
    """For each of ``paths``: is it listed in ``text`` (see :func:`path_listed`)?"""
    norms = {normalise_path(p) for p in extract_paths(text)}
    return [_listed(path, norms) for path in paths]


def path_listed(path: str, text: str) -> bool:
    """True when ``text`` names ``path``: the same path, or one that ends with ``/<path>``."""
    return paths_listed([path], text)[0]
