"""The ranking of ``archive_search`` and of the recall as it was before the timeline's
postings were merged (per-archive loops over each archive's postings, tuple keys): the
reference the merged ranking must equal, hit for hit and score for score
(tests/engine/test_recall_postings.py). Kept only here, as the test's oracle."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from wm_langgraph.document.text.ranking import (
    BM25_B,
    BM25_K1,
    distinct,
    idf,
    search_terms,
    term_counts,
)
from wm_langgraph.recall.search import (
    _LITERAL_CHECKS,
    _VERIFY_LIMIT,
    CONTEXT_WEIGHT,
    LITERAL_FALLBACK_ARCHIVES,
    SEMANTIC_WEIGHT,
    Corpus,
    DocKey,
    Hit,
    _finish,
    _literal_scan,
    _Query,
    _semantic,
    _spread,
    _Texts,
    _tiers,
    _verified,
    _with_similarity,
)
from wm_langgraph.storage.search_index import ABSTRACT_POSITION, AbstractIndex, ArchiveIndex


def _weighed(
    scores: Mapping[DocKey, float],
    keyword: Sequence[DocKey],
    semantic: Mapping[DocKey, float],
    *,
    eligible: set[DocKey],
) -> dict[DocKey, float]:
    best = max((scores.get(k, 0.0) for k in keyword), default=0.0)
    floor = min(semantic.values(), default=0.0)
    out: dict[DocKey, float] = {}
    for key in [*keyword, *semantic]:
        if key in out:
            continue
        relative = scores.get(key, 0.0) / best if best > 0 and key in eligible else 0.0
        out[key] = relative + SEMANTIC_WEIGHT * semantic.get(key, floor)
    return out


def reference_rank(
    corpus: Corpus,
    query: str,
    limit: int,
    *,
    neighbours: bool = True,
    dates: bool = False,
) -> tuple[list[Hit], bool]:
    """The best ``limit`` hits for ``query`` and whether more matched.

    Args:
        corpus: What to search.
        query: The query (see the module docstring for how it is read).
        limit: At most this many hits.
        neighbours: Read each hit's neighbouring messages (``before`` / ``after``); without
            them only the hits' own archives are read.
        dates: Find each message hit's session date (:attr:`Hit.session_date`), reading back
            at most :data:`DATE_LOOKBACK_ARCHIVES` archives before the hit's.
    """
    parsed = _Query.parse(query)
    texts = _Texts(corpus, neighbours=neighbours, dates=dates)
    indexes = corpus.indexes
    hidden = corpus.hidden
    moved_counts = [term_counts(text) for _, _, text in corpus.moved]
    question = not (parsed.identifier or parsed.keywords)
    summaries = [
        (a, corpus.abstracts[index.archive_id])
        for a, index in enumerate(indexes)
        if index.archive_id in corpus.abstracts
    ]
    if question:  # every document with a term, scored with its neighbours' share
        scores = _question_scores(parsed.terms, indexes, hidden, moved_counts, summaries)
        candidates = list(scores)
    else:  # every term in the document
        scores, matched = _keyword_scores(parsed.terms, indexes, hidden, moved_counts, summaries)
        candidates = [k for k, n in matched.items() if n >= len(parsed.terms)]
    seqs = [index.seq for index in indexes]

    def order(key: DocKey) -> tuple[float, int, int]:
        """Best score, then the newest archive (moved items count as the newest), then the
        earlier message."""
        seq = seqs[key[0]] if key[0] >= 0 else 1 << 30
        return (-scores.get(key, 0.0), -seq, key[1])

    if parsed.identifier:
        best = heapq.nsmallest(_VERIFY_LIMIT, candidates, key=order)
        candidates = _verified(parsed.text, best, indexes, corpus, texts)
    semantic = _semantic(corpus, parsed, indexes, hidden, limit)
    if not candidates and not semantic:  # no word matches: a fragment of a word or an id
        recent = indexes[-LITERAL_FALLBACK_ARCHIVES:]
        offset = len(indexes) - len(recent)
        found = _literal_scan(parsed.text, recent, hidden, corpus.moved, texts)
        found = [(a + offset, p) if a >= 0 else (a, p) for a, p in found]
        return _finish(corpus, parsed, texts, found, limit=limit, total=len(found), scores={})
    top = heapq.nsmallest(max(limit + 1, _LITERAL_CHECKS), candidates, key=order)
    # the whole-query tier reorders the hits to be shown (their texts are read anyway)
    checked = list(top[: limit + 1]) if parsed.keywords and not parsed.identifier else []
    for literal in parsed.literals:  # messages that may hold an identifier of the query
        holders = _docs_with(search_terms(literal), indexes, hidden)
        checked += heapq.nsmallest(_LITERAL_CHECKS, holders, key=order)
    tiers = _tiers(parsed, list(dict.fromkeys(checked)), indexes, corpus, texts)
    pool = list(dict.fromkeys([*top, *tiers]))
    keyword = sorted(pool, key=lambda k: (*tiers.get(k, (0, 0)), *order(k)))
    total = len(set(candidates) | set(tiers))
    fused: dict[DocKey, float] = {}
    if semantic:
        fused = _weighed(scores, keyword, semantic, eligible=set(candidates) | set(tiers))
        pool = list(fused)
        pool.sort(key=lambda k: (*tiers.get(k, (0, 0)), -fused[k], *order(k)))
        keyword = pool
        total = len(set(candidates) | set(tiers) | set(semantic))
    # abstracts after the messages; a hit shown as another's neighbour is not a new hit
    # (questions), nor is an abstract of an archive a message hit shows: the next one is
    keyword = [k for k in keyword if k[1] != ABSTRACT_POSITION] + [
        k for k in keyword if k[1] == ABSTRACT_POSITION
    ]
    # a hit another one shows as its neighbour moves back (only where neighbours are shown)
    keyword = _spread(keyword, limit, literal=set(tiers), neighbours=question and neighbours)
    hits, more = _finish(corpus, parsed, texts, keyword, limit=limit, total=total, scores=scores)
    if semantic:  # the store's similarity beside the keyword score
        hits = [_with_similarity(h, semantic, indexes) for h in hits]
    return hits, more


def _docs_with(
    terms: Sequence[str], indexes: Sequence[ArchiveIndex], hidden: set[str]
) -> list[DocKey]:
    """The visible messages that hold every one of ``terms`` (rarest term first)."""
    wanted = distinct(terms)
    if not wanted:
        return []
    found: list[DocKey] = []
    for a, index in enumerate(indexes):
        lists = [index.postings.get(t, ()) for t in wanted]
        if not all(lists):
            continue
        lists.sort(key=len)
        common = {p for p, _ in lists[0]}
        for other in lists[1:]:
            common &= {p for p, _ in other}
        found += [(a, p) for p in sorted(common) if not hidden or index.ids[p] not in hidden]
    return found


def _keyword_scores(
    terms: Sequence[str],
    indexes: Sequence[ArchiveIndex],
    hidden: set[str],
    moved: Sequence[Mapping[str, int]],
    abstracts: Sequence[tuple[int, AbstractIndex]] = (),
) -> tuple[dict[DocKey, float], dict[DocKey, int]]:
    """BM25 of every document (message, moved item, abstract) holding a query term, and how
    many distinct terms it holds. The term statistics are the messages' and moved items'
    (an abstract repeats its archive's words: counted, it would make them look common); an
    abstract's length is measured against the abstracts' mean."""
    if not terms:
        return {}, {}
    documents = len(moved)
    total = sum(sum(c.values()) for c in moved)
    for index in indexes:
        if hidden:
            visible = [n for n, i in zip(index.lengths, index.ids, strict=True) if i not in hidden]
            documents += len(visible)
            total += sum(visible)
        else:
            documents += len(index.lengths)
            total += sum(index.lengths)
    average = total / documents if documents else 1.0
    moved_lengths = [sum(c.values()) for c in moved]
    k1, b = BM25_K1, BM25_B
    scale = k1 * b / max(average, 1e-9)
    abstract_mean = sum(x.length for _, x in abstracts) / len(abstracts) if abstracts else 1.0
    abstract_scale = k1 * b / max(abstract_mean, 1e-9)
    base = k1 * (1.0 - b)
    scores: dict[DocKey, float] = {}
    matched: dict[DocKey, int] = {}
    for term in terms:
        lists: list[tuple[int, ArchiveIndex, tuple[tuple[int, int], ...]]] = []
        for a, index in enumerate(indexes):
            found = index.postings.get(term)
            if found:
                lists.append((a, index, found))
        moved_tf = [(m, counts[term]) for m, counts in enumerate(moved) if counts.get(term)]
        abstract_tf = [(a, x.length, x.counts[term]) for a, x in abstracts if x.counts.get(term)]
        frequency = sum(len(p) for _, _, p in lists) + len(moved_tf)
        if hidden:
            frequency -= sum(
                1 for _, index, p in lists for position, _ in p if index.ids[position] in hidden
            )
        if frequency <= 0 and not abstract_tf:
            continue
        weight = idf(documents, max(0, frequency)) * (k1 + 1.0)
        for a, index, postings in lists:
            lengths = index.lengths
            ids = index.ids
            for position, tf in postings:
                if hidden and ids[position] in hidden:
                    continue
                key = (a, position)
                part = weight * tf / (tf + base + scale * lengths[position])
                scores[key] = scores.get(key, 0.0) + part
                matched[key] = matched.get(key, 0) + 1
        for m, tf in moved_tf:
            key = (-1, m)
            part = weight * tf / (tf + base + scale * moved_lengths[m])
            scores[key] = scores.get(key, 0.0) + part
            matched[key] = matched.get(key, 0) + 1
        for a, length, tf in abstract_tf:
            key = (a, ABSTRACT_POSITION)
            part = weight * tf / (tf + base + abstract_scale * length)
            scores[key] = scores.get(key, 0.0) + part
            matched[key] = matched.get(key, 0) + 1
    return scores, matched


def _statistics(
    indexes: Sequence[ArchiveIndex], hidden: set[str], moved: Sequence[Mapping[str, int]]
) -> tuple[int, float]:
    """How many documents (visible messages and moved items) and their mean length."""
    documents = len(moved)
    total = sum(sum(c.values()) for c in moved)
    for index in indexes:
        if hidden:
            visible = [n for n, i in zip(index.lengths, index.ids, strict=True) if i not in hidden]
            documents += len(visible)
            total += sum(visible)
        else:
            documents += len(index.lengths)
            total += sum(index.lengths)
    return documents, total / documents if documents else 1.0


def _question_scores(
    terms: Sequence[str],
    indexes: Sequence[ArchiveIndex],
    hidden: set[str],
    moved: Sequence[Mapping[str, int]],
    abstracts: Sequence[tuple[int, AbstractIndex]] = (),
) -> dict[DocKey, float]:
    """:func:`_keyword_scores` followed by :func:`_with_context`, in one pass per archive (the
    same scores: a question reads every posting of its terms, so this is the hot loop of a
    recall; per-archive position maps keep it off tuple keys until the end)."""
    if not terms:
        return {}
    documents, average = _statistics(indexes, hidden, moved)
    k1, b = BM25_K1, BM25_B
    scale = k1 * b / max(average, 1e-9)
    base = k1 * (1.0 - b)
    moved_lengths = [sum(c.values()) for c in moved]
    abstract_mean = sum(x.length for _, x in abstracts) / len(abstracts) if abstracts else 1.0
    abstract_scale = k1 * b / max(abstract_mean, 1e-9)
    per: dict[int, dict[int, float]] = {}
    extra: dict[DocKey, float] = {}  # moved items and abstracts
    for term in terms:
        lists = [(a, i, i.postings[term]) for a, i in enumerate(indexes) if term in i.postings]
        moved_tf = [(m, counts[term]) for m, counts in enumerate(moved) if counts.get(term)]
        abstract_tf = [(a, x.length, x.counts[term]) for a, x in abstracts if x.counts.get(term)]
        frequency = sum(len(p) for _, _, p in lists) + len(moved_tf)
        if hidden:
            frequency -= sum(
                1 for _, index, p in lists for position, _ in p if index.ids[position] in hidden
            )
        if frequency <= 0 and not abstract_tf:
            continue
        weight = idf(documents, max(0, frequency)) * (k1 + 1.0)
        for a, index, postings in lists:
            acc = per.get(a)
            if acc is None:
                acc = per[a] = {}
            lengths = index.lengths
            if hidden:
                ids = index.ids
                for position, tf in postings:
                    if ids[position] not in hidden:
                        part = weight * tf / (tf + base + scale * lengths[position])
                        acc[position] = acc.get(position, 0.0) + part
            else:
                for position, tf in postings:
                    part = weight * tf / (tf + base + scale * lengths[position])
                    acc[position] = acc.get(position, 0.0) + part
        for m, tf in moved_tf:
            part = weight * tf / (tf + base + scale * moved_lengths[m])
            extra[(-1, m)] = extra.get((-1, m), 0.0) + part
        for a, length, tf in abstract_tf:
            part = weight * tf / (tf + base + abstract_scale * length)
            key = (a, ABSTRACT_POSITION)
            extra[key] = extra.get(key, 0.0) + part
    out: dict[DocKey, float] = {}
    for a, acc in per.items():
        ids = indexes[a].ids
        size = len(ids)
        shown = dict(acc)
        for position, score in acc.items():
            share = CONTEXT_WEIGHT * score
            if hidden:
                for q in _adjacent(ids, position, hidden):
                    shown[q] = shown.get(q, 0.0) + share
                continue
            if position > 0:
                shown[position - 1] = shown.get(position - 1, 0.0) + share
            if position + 1 < size:
                shown[position + 1] = shown.get(position + 1, 0.0) + share
        out.update(((a, position), value) for position, value in shown.items())
    out.update(extra)
    return out


def _adjacent(ids: Sequence[str], position: int, hidden: set[str]) -> list[int]:
    """The visible positions right before and after ``position`` in one archive."""
    found: list[int] = []
    for step in (-1, 1):
        q = position + step
        while 0 <= q < len(ids) and hidden and ids[q] in hidden:
            q += step
        if 0 <= q < len(ids):
            found.append(q)
    return found
