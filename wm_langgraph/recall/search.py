"""Ranked recall over the archives: what ``archive_search`` finds and in which order (§7.6).

A query is read in one of three ways:

- **an identifier**: one word that is more than letters (``src/app.py``, ``billing_v2``,
  ``E1234``, ``FACT-1``): only messages that contain it literally (case-insensitive) match;
- **keywords**: one or two words: a message must contain every one of their terms;
- **a question in plain words** (three words or more): every message with at least one of its
  terms is ranked; a message a better hit shows already as its neighbour moves back, so the
  top hits show different places.

Terms are matched stemmed, without stop words, Chinese/Japanese/Korean by character bigrams
(:mod:`wm_langgraph.document.text.ranking`), and scored with BM25 over the messages of the
memory's current timeline plus the items moved out of the Working Memory. Literal matches come
first: a message that holds the whole query, then one that holds more of the query's
identifiers (paths, ids, error codes) or quoted phrases, before the BM25 order. When the store
has a vector index, the store's semantic search over the archived texts is weighed beside the
keyword ranking: each candidate's BM25 score relative to the best one, plus
:data:`SEMANTIC_WEIGHT` times the store's similarity (a convex combination of scores, not of
ranks, so an embedding model that is weak on the conversation's domain cannot outvote a clear
keyword match); the literal tiers still lead. Hidden messages
(removed after archiving) never match; equal scores put the newest archive first.

An archive's abstract (written by the writer in Phase 2) is a document beside its messages,
scored with the messages' term statistics. It is a hit of its own after the message hits (it
fills the hits when fewer messages match, as a paraphrase the messages do not use can), and
never while a message of its archive is shown: every message hit carries its archive's
abstract as context. On the development conversations an abstract that also lifted its
archive's matching messages, or that competed with them for the first places, lowered
question-as-query recall (the measurements are in docs/budgets.md).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from langchain_core.messages import BaseMessage

from wm_langgraph.document.text.ranking import (
    BM25_B,
    BM25_K1,
    distinct,
    idf,
    is_identifier,
    query_identifiers,
    query_words,
    search_terms,
    stem,
    term_counts,
)
from wm_langgraph.document.text.units import date_line, format_date
from wm_langgraph.storage.archives import StoredMessages
from wm_langgraph.storage.search_index import (
    ABSTRACT_POSITION,
    AbstractIndex,
    ArchiveIndex,
    SearchIndex,
    build_index,
    searchable_text,
    shown_parts,
)
from wm_langgraph.storage.timeline_postings import (
    AbstractTerms,
    TimelinePostings,
    merged_view,
)

__all__ = [
    "ABSTRACT_ROLE",
    "Corpus",
    "Hit",
    "Neighbour",
    "StaleIndexError",
    "rank",
    "store_corpus",
]

MovedItem = tuple[str, str, str]
"""``(WM version key, section, text)`` of an item moved out of the Working Memory."""

DocKey = tuple[int, int]
"""``(archive position in the corpus, message position in the record)``; moved items use
archive position ``-1``, an archive's abstract message position ``ABSTRACT_POSITION``."""

LITERAL_FALLBACK_ARCHIVES = 10
"""A query none of whose words match is looked up literally (case-insensitive substring) in
this many newest archives (and the moved items): a fragment of a word or of an id still finds
recent text, and a query never reads every archive."""

_LITERAL_CHECKS = 20
"""Literal tiers are checked for this many of the best candidates (their texts are read)."""
_VERIFY_LIMIT = 400
"""An identifier query reads at most this many candidate messages to confirm the literal text."""
_QUOTED_RE = re.compile(r"[\"“”「」『』]([^\"“”「」『』]{2,200})[\"“”「」『』]")
_WORD_RE = re.compile(r"[^\W_]+")


@dataclass
class Corpus:
    """What a search reads: the timeline's archive indexes and how to load their messages.

    Attributes:
        indexes: The archives of the current timeline, oldest first.
        load: Loads archive ids' messages (verbatim, hidden ones included) by archive id.
        hidden: Message ids that are never returned.
        moved: Items moved out of the Working Memory (searched when no archive is named).
        semantic: The store's semantic search, ``(query, limit) -> [(archive id, position,
            similarity)]`` best first; None without a vector index.
        abstracts: The archives' abstracts written in Phase 2, by archive id.
        timeline: The merged postings of ``indexes`` (from the store's cache); merged when
            a search needs them where they are not those of ``indexes``.
        abstract_terms: The term postings of ``abstracts`` on ``timeline`` (from the store's
            cache); indexed when a search needs them where they are not those.
    """

    indexes: list[ArchiveIndex]
    load: Callable[[Sequence[str]], Mapping[str, Sequence[BaseMessage]]]
    hidden: set[str] = field(default_factory=set)
    moved: list[MovedItem] = field(default_factory=list)
    semantic: Callable[[str, int], list[tuple[str, int, float]]] | None = None
    abstracts: dict[str, AbstractIndex] = field(default_factory=dict)
    timeline: TimelinePostings | None = None
    abstract_terms: AbstractTerms | None = None

    def postings(self) -> TimelinePostings:
        """The merged postings of :attr:`indexes` (merged now where :attr:`timeline` does not
        hold exactly them, as after narrowing a search to one archive)."""
        view = self.timeline
        if view is None or not view.matches(self.indexes):
            view = self.timeline = merged_view(self.indexes)
        return view

    def abstract_postings(self) -> AbstractTerms:
        """The term postings of :attr:`abstracts` on :attr:`indexes`."""
        view = self.postings()
        terms = self.abstract_terms
        if terms is None or terms.view is not view or terms.found is not self.abstracts:
            terms = self.abstract_terms = AbstractTerms.of(self.indexes, self.abstracts)
        return terms

    @classmethod
    def of_records(
        cls,
        records: Sequence[tuple[str, int, Sequence[BaseMessage], str]],
        moved: list[MovedItem] | None = None,
    ) -> Corpus:
        """A corpus built in memory from ``(id, seq, messages, created_at)`` of each archive
        (an archive source without a store index: the index is built per query)."""
        by_id = {r[0]: list(r[2]) for r in records}
        indexes = [build_index(r[0], r[1], r[2], created_at=r[3]) for r in records]
        return cls(
            indexes=indexes,
            load=lambda ids: {a: by_id[a] for a in ids if a in by_id},
            moved=list(moved or []),
        )


class StaleIndexError(RuntimeError):
    """A cached index no longer matches its archive record (the memory's records were
    replaced); the cache was dropped, searching again reads the indexes anew."""


def store_corpus(
    index: SearchIndex,
    key: str,
    timeline: Sequence[str],
    *,
    hidden: set[str],
    moved: list[MovedItem],
    settled: set[str] | None = None,
    write: bool = True,
) -> Corpus:
    """The corpus of memory ``key`` on ``timeline``, read through ``index`` (the timeline's
    merged postings and the abstracts from the process cache or the store; messages only for
    the archives shown). ``settled``: the archives whose abstract can no longer appear;
    ``write=False``: an archive without an index record is indexed in memory only."""
    view = index.postings(key, timeline, write=write)
    indexes = view.archives
    where = view.merged.position

    def load(ids: Sequence[str]) -> dict[str, Sequence[BaseMessage]]:
        loaded = index.messages(key, ids)
        for archive_id, (digest, _) in loaded.items():
            a = where.get(archive_id, len(indexes))
            if a < len(indexes) and digest != indexes[a].digest:
                index.forget(key)
                raise StaleIndexError(f"archive {archive_id} changed since it was indexed")
        return {archive_id: messages for archive_id, (_, messages) in loaded.items()}

    def semantic(query: str, limit: int) -> list[tuple[str, int, float]]:
        on_timeline = [i.archive_id for i in indexes]
        return index.semantic(key, query, on_timeline, limit) or []

    abstracts = index.timeline_abstracts(key, view, settled or set())
    return Corpus(
        indexes=indexes,
        timeline=view,
        load=load,
        hidden=hidden,
        moved=moved,
        semantic=semantic if index.embeds(key) else None,
        abstracts=abstracts.found,
        abstract_terms=abstracts,
    )


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A message next to a hit (the turn before or after it); ``seq``: its archive's position
    in the timeline; ``message_id``: its id (``""`` without one)."""

    archive_id: str
    number: int
    total: int
    role: str
    text: str
    seq: int = 0
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result.

    Attributes:
        archive_id: The archive (``None`` for an item moved out of the Working Memory).
        number: The message's number in the archive as the tools show it (1-based, hidden
            messages not counted); ``archive_expand(archive_id, offset=number - 1)`` opens it.
        total: The archive's message count as shown.
        role: ``user``, ``assistant``, ``tool result (name)``, ...
        text: The message text (for a moved item: the item).
        start: Where the best literal or term match starts in ``text`` (for the excerpt).
        length: Its length.
        before: The messages right before it, oldest first (possibly from the previous
            archive), at most :data:`NEIGHBOURS`.
        after: The messages right after it, oldest first, at most :data:`NEIGHBOURS`.
        created_at: When the archive was written (ISO), "" when unknown.
        seq: The archive's position in the timeline.
        section: For a moved item, its section; ``moved_key``: the WM version that moved it.
        abstract: The archive's abstract (``""`` when it has none). A hit whose ``role`` is
            ``"abstract"`` is the abstract itself (``text``; ``number`` 0).
        message_id: The archived message's id (``""`` for an abstract or a moved item, or a
            message without one).
        score: Its keyword score (BM25, for a question with its neighbours' share; 0 when
            only the semantic search or a literal scan found it). A literal match, or with a
            vector index the weighed similarity, can rank it above a higher score.
        similarity: The store's semantic similarity of it to the query (0 without a vector
            index, or when the semantic search did not return it).
        session_date: The date of the session the message belongs to (the newest leading
            date line, ``[1:56 pm on 8 May, 2023] …``, at or before it in the conversation),
            as ``8 May 2023``; ``""`` when none was found or dates were not asked for.
    """

    archive_id: str | None
    number: int
    total: int
    role: str
    text: str
    start: int = 0
    length: int = 0
    before: tuple[Neighbour, ...] = ()
    after: tuple[Neighbour, ...] = ()
    created_at: str = ""
    seq: int = 0
    section: str = ""
    moved_key: str = ""
    abstract: str = ""
    message_id: str = ""
    score: float = 0.0
    session_date: str = ""
    similarity: float = 0.0


ABSTRACT_ROLE = "abstract"
"""The ``role`` of a hit that is an archive's abstract."""


@dataclass
class _Query:
    text: str
    terms: list[str]
    identifier: bool
    keywords: bool
    literals: list[str]

    @classmethod
    def parse(cls, query: str) -> _Query:
        words = query.split()
        identifier = len(words) == 1 and is_identifier(words[0])
        count = query_words(query)
        literals = [] if identifier else [*query_identifiers(query), *_QUOTED_RE.findall(query)]
        return cls(
            text=query,
            terms=distinct(search_terms(query)),
            identifier=identifier,
            keywords=count <= 2,
            literals=list(dict.fromkeys(x.casefold() for x in literals)),
        )


class _Texts:
    """Message texts loaded on demand (one load call per batch of archives)."""

    def __init__(self, corpus: Corpus, *, neighbours: bool = True, dates: bool = False) -> None:
        self._corpus = corpus
        self._messages: dict[str, Sequence[BaseMessage]] = {}
        self.neighbours = neighbours
        self.dates = dates

    def need(self, archive_ids: Sequence[str]) -> None:
        missing = [a for a in dict.fromkeys(archive_ids) if a not in self._messages]
        if missing:
            loaded = self._corpus.load(missing)
            for archive_id in missing:
                self._messages[archive_id] = loaded.get(archive_id) or []

    def messages(self, archive_id: str) -> Sequence[BaseMessage]:
        self.need([archive_id])
        return self._messages[archive_id]


def rank(
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
    view = corpus.postings()
    hidden_docs = view.hidden_docs(hidden)
    moved_counts = [term_counts(text) for _, _, text in corpus.moved]
    question = not (parsed.identifier or parsed.keywords)
    summaries = corpus.abstract_postings()
    # a question: every document with a term, scored with its neighbours' share; keywords:
    # every term in the document
    scores = _scores(parsed.terms, view, hidden_docs, moved_counts, summaries, question=question)
    seqs = view.seqs

    def order(key: DocKey) -> tuple[float, int, int]:
        """Best score, then the newest archive (moved items count as the newest), then the
        earlier message."""
        seq = seqs[key[0]] if key[0] >= 0 else 1 << 30
        return (-scores.get(key, 0.0), -seq, key[1])

    verified: list[DocKey] | None = None  # an identifier: the candidates that hold it
    if parsed.identifier:
        best = scores.best(_VERIFY_LIMIT, order)
        verified = _verified(parsed.text, best, indexes, corpus, texts)
    semantic = _semantic(corpus, parsed, indexes, hidden, limit)
    matches = scores.count if verified is None else len(verified)
    if not matches and not semantic:  # no word matches: a fragment of a word or an id
        recent = indexes[-LITERAL_FALLBACK_ARCHIVES:]
        offset = len(indexes) - len(recent)
        found = _literal_scan(parsed.text, recent, hidden, corpus.moved, texts)
        found = [(a + offset, p) if a >= 0 else (a, p) for a, p in found]
        return _finish(corpus, parsed, texts, found, limit=limit, total=len(found), scores={})
    checks = max(limit + 1, _LITERAL_CHECKS)
    candidate: Callable[[DocKey], bool]
    if verified is None:
        top = scores.best(checks, order)
        candidate = scores.candidate
    else:
        top = heapq.nsmallest(checks, verified, key=order)
        candidate = set(verified).__contains__
    # the whole-query tier reorders the hits to be shown (their texts are read anyway)
    checked = list(top[: limit + 1]) if parsed.keywords and not parsed.identifier else []
    for literal in parsed.literals:  # messages that may hold an identifier of the query
        holders = _docs_with(search_terms(literal), view, hidden_docs)
        checked += heapq.nsmallest(_LITERAL_CHECKS, holders, key=order)
    tiers = _tiers(parsed, list(dict.fromkeys(checked)), indexes, corpus, texts)
    pool = list(dict.fromkeys([*top, *tiers]))
    keyword = sorted(pool, key=lambda k: (*tiers.get(k, (0, 0)), *order(k)))
    total = matches + sum(1 for k in tiers if not candidate(k))
    fused: dict[DocKey, float] = {}
    if semantic:

        def eligible(key: DocKey) -> bool:
            return key in tiers or candidate(key)

        fused = _weighed(scores, keyword, semantic, eligible=eligible)
        pool = list(fused)
        pool.sort(key=lambda k: (*tiers.get(k, (0, 0)), -fused[k], *order(k)))
        keyword = pool
        total += sum(1 for k in semantic if k not in tiers and not candidate(k))
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


def _spread(
    ranked: Sequence[DocKey], limit: int, literal: set[DocKey], *, neighbours: bool = True
) -> list[DocKey]:
    """``ranked`` with a message moved back while a better-ranked message of its archive lies
    within :data:`NEIGHBOURS` of it (that hit shows it already; only with ``neighbours``),
    and an archive's abstract moved back while a message of its archive is kept (every
    message hit shows its abstract), until ``limit`` are kept; a literal match (``literal``)
    is never moved."""
    kept: list[DocKey] = []
    later: list[DocKey] = []
    for key in ranked:
        a, p = key
        if len(kept) >= limit:
            later.append(key)
        elif a >= 0 and p == ABSTRACT_POSITION:
            (later if any(b == a for b, _ in kept) else kept).append(key)
        elif (
            neighbours
            and a >= 0
            and key not in literal
            and any(b == a and q >= 0 and abs(q - p) <= NEIGHBOURS for b, q in kept)
        ):
            later.append(key)
        else:
            if (a, ABSTRACT_POSITION) in kept and a >= 0:
                kept.remove((a, ABSTRACT_POSITION))
                later.append((a, ABSTRACT_POSITION))
            kept.append(key)
    return [*kept, *later]


class _Scores:
    """The keyword scores of one query: messages by document number (``values``), abstracts by
    archive position (``abstracts``), moved items by number (``moved``), 0.0 for none; and
    which of them match (a question: every one with a score; keywords: those holding every
    term, listed in ``docs``, ``abstract_hits`` and ``moved_hits``)."""

    def __init__(
        self,
        view: TimelinePostings,
        values: list[float],
        abstracts: list[float],
        moved: dict[int, float],
        *,
        hits: tuple[list[int], list[int], list[int]] | None = None,
    ) -> None:
        self.view = view
        self.values = values
        self.abstracts = abstracts
        self.moved = moved
        if hits is None:  # a question: everything scored matches
            self.docs: list[int] | None = None
            self.abstract_hits = list(itertools.compress(range(len(abstracts)), abstracts))
            self.moved_hits = list(moved)
            scored = len(values) - values.count(0.0)
        else:
            self.docs, self.abstract_hits, self.moved_hits = hits
            scored = len(self.docs)
        self._doc_set = set(self.docs) if self.docs is not None else None
        self._abstract_set = set(self.abstract_hits)
        self.count = scored + len(self.abstract_hits) + len(self.moved_hits)
        """How many documents match."""

    def get(self, key: DocKey, default: float = 0.0) -> float:
        """The score of ``key`` (``default`` for none)."""
        a, p = key
        if a < 0:
            value = self.moved.get(p, 0.0)
        elif p == ABSTRACT_POSITION:
            value = self.abstracts[a]
        elif p < 0:
            value = 0.0
        else:
            value = self.values[self.view.doc(a, p)]
        return value if value else default

    def candidate(self, key: DocKey) -> bool:
        """Whether ``key`` matches the query."""
        a, p = key
        if a < 0:
            return p in self.moved_hits
        if p == ABSTRACT_POSITION:
            return a in self._abstract_set
        if p < 0:
            return False
        d = self.view.doc(a, p)
        return d in self._doc_set if self._doc_set is not None else self.values[d] > 0.0

    def best(self, count: int, order: Callable[[DocKey], tuple[float, int, int]]) -> list[DocKey]:
        """The first ``count`` matching documents by ``order`` (best score first): of the
        messages and of the abstracts only those scored at least as high as the ``count``-th
        best of their kind are ordered."""
        values = self.values
        chosen: list[int]
        if self.docs is None:
            if len(values) - values.count(0.0) > count:
                least = _at_least(count, values)
                chosen = [d for d, s in enumerate(values) if s >= least]
            else:
                chosen = [d for d, s in enumerate(values) if s]
        elif len(self.docs) > count:
            least = _at_least(count, [values[d] for d in self.docs])
            chosen = [d for d in self.docs if values[d] >= least]
        else:
            chosen = self.docs
        abstracts = self.abstract_hits
        if len(abstracts) > count:
            scores = self.abstracts
            least = _at_least(count, [scores[a] for a in abstracts])
            abstracts = [a for a in abstracts if scores[a] >= least]
        key = self.view.key
        keys = [key(d) for d in chosen]
        keys += [(a, ABSTRACT_POSITION) for a in abstracts]
        keys += [(-1, m) for m in self.moved_hits]
        return heapq.nsmallest(count, keys, key=order)


def _at_least(count: int, values: list[float]) -> float:
    """A positive score no higher than the ``count``-th highest of ``values`` (which holds more
    than ``count`` positive ones): the ``count``-th highest of every fourth one where that is
    positive (the ``count``-th highest of a part is never higher than of the whole)."""
    if len(values) >= count * 16:
        sample = values[::4]
        least = heapq.nlargest(count, sample)[-1]
        if least > 0.0:
            return least
    return heapq.nlargest(count, values)[-1]


def _docs_with(terms: Sequence[str], view: TimelinePostings, hidden: set[int]) -> list[DocKey]:
    """The visible messages that hold every one of ``terms``, in timeline order."""
    wanted = distinct(terms)
    if not wanted:
        return []
    lists: list[tuple[int, list[int]]] = []
    for term in wanted:
        docs, _, _, _, cut = view.term(term)
        if not cut:
            return []
        lists.append((cut, docs))
    lists.sort(key=lambda x: x[0])
    common = set(itertools.islice(lists[0][1], lists[0][0]))
    for cut, docs in lists[1:]:
        common.intersection_update(itertools.islice(docs, cut))
    return [view.key(d) for d in sorted(common) if d not in hidden]


def _statistics(
    view: TimelinePostings, hidden: set[int], moved: Sequence[Mapping[str, int]]
) -> tuple[int, float]:
    """How many documents (visible messages and moved items) and their mean length."""
    lengths = view.merged.lengths
    documents = len(moved) + view.size - len(hidden)
    total = sum(sum(c.values()) for c in moved)
    total += view.total_length() - sum(lengths[d] for d in hidden)
    return documents, total / documents if documents else 1.0


def _hidden_in(docs: list[int], cut: int, hidden: set[int]) -> int:
    """How many of ``docs[:cut]`` (ascending) are in ``hidden``."""
    if len(hidden) * 8 < cut:
        found = 0
        for d in hidden:
            at = bisect.bisect_left(docs, d, 0, cut)
            found += at < cut and docs[at] == d
        return found
    return sum(1 for d in itertools.islice(docs, cut) if d in hidden)


def _rows(
    docs: list[int], counts: list[float], plus: list[float], sizes: list[float], cut: int
) -> Iterable[tuple[int, float, float, float]]:
    """The first ``cut`` postings (a list may grow meanwhile: never read past ``cut``)."""
    return itertools.islice(zip(docs, counts, plus, sizes, strict=False), cut)


class _Weights:
    """BM25's constants for one query over one corpus."""

    def __init__(
        self,
        view: TimelinePostings,
        hidden: set[int],
        moved: Sequence[Mapping[str, int]],
        abstracts: AbstractTerms,
    ) -> None:
        self.documents, average = _statistics(view, hidden, moved)
        k1, b = BM25_K1, BM25_B
        self.scale = k1 * b / max(average, 1e-9)
        self.base = k1 * (1.0 - b)
        self.moved_lengths = [sum(c.values()) for c in moved]
        self.abstract_scale = k1 * b / max(abstracts.mean, 1e-9)

    def weight(self, frequency: int) -> float:
        return idf(self.documents, max(0, frequency)) * (BM25_K1 + 1.0)


def _scores(
    terms: Sequence[str],
    view: TimelinePostings,
    hidden: set[int],
    moved: Sequence[Mapping[str, int]],
    abstracts: AbstractTerms,
    *,
    question: bool,
) -> _Scores:
    """BM25 of every document (message, moved item, abstract) holding a query term. The term
    statistics are the messages' and moved items' (an abstract repeats its archive's words:
    counted, it would make them look common); an abstract's length is measured against the
    abstracts' mean.

    A question (``question``): every document with a term matches, and a message's score is
    its own plus :data:`CONTEXT_WEIGHT` times each visible neighbour's in its archive (an
    answer follows its question). Keywords: the documents that hold every term match. A
    question reads every posting of its terms: this is the hot loop of a recall, on flat
    per-document lists.
    """
    values = [0.0] * view.size
    summaries = [0.0] * view.count
    moved_scores: dict[int, float] = {}
    if not terms:
        return _Scores(
            view, values, summaries, moved_scores, hits=None if question else ([], [], [])
        )
    w = _Weights(view, hidden, moved, abstracts)
    base, scale, abstract_scale = w.base, w.scale, w.abstract_scale
    touched: list[int] = []  # a question's scored messages, in the order first scored
    matched: dict[int, int] = {}  # keywords: how many terms each message holds
    matched_abstracts: dict[int, int] = {}
    matched_moved: dict[int, int] = {}
    for term in terms:
        docs, counts, plus, sizes, cut = view.term(term)
        moved_tf = [(m, c[term]) for m, c in enumerate(moved) if c.get(term)]
        abstract_tf = abstracts.term(term)
        frequency = cut + len(moved_tf) - (_hidden_in(docs, cut, hidden) if hidden else 0)
        if frequency <= 0 and not abstract_tf:
            continue
        weight = w.weight(frequency)
        # (tf + base) + scale * n: the sum BM25's denominator is, with tf + base precomputed
        rows = _rows(docs, counts, plus, sizes, cut)
        if question and not touched and not hidden:  # the first term: every message is new
            touched.extend(itertools.islice(docs, cut))
            for d, tf, tf_base, n in rows:
                values[d] = weight * tf / (tf_base + scale * n)  # 0.0 + x is x
        elif question:
            for d, tf, tf_base, n in rows:
                if hidden and d in hidden:
                    continue
                score = values[d]
                if not score:
                    touched.append(d)
                values[d] = score + weight * tf / (tf_base + scale * n)
        else:
            for d, tf, tf_base, n in rows:
                if hidden and d in hidden:
                    continue
                values[d] += weight * tf / (tf_base + scale * n)
                matched[d] = matched.get(d, 0) + 1
        for m, tf in moved_tf:
            part = weight * tf / (tf + base + scale * w.moved_lengths[m])
            moved_scores[m] = moved_scores.get(m, 0.0) + part
            matched_moved[m] = matched_moved.get(m, 0) + 1
        for a, length, tf in abstract_tf:
            summaries[a] += weight * tf / (tf + base + abstract_scale * length)
            if not question:
                matched_abstracts[a] = matched_abstracts.get(a, 0) + 1
    if question:
        shown = _with_context(values, touched, view, hidden)
        return _Scores(view, shown, summaries, moved_scores)
    need = len(terms)
    hits = (
        [d for d, n in matched.items() if n >= need],
        [a for a, n in matched_abstracts.items() if n >= need],
        [m for m, n in matched_moved.items() if n >= need],
    )
    return _Scores(view, values, summaries, moved_scores, hits=hits)


NEIGHBOURS = 2
"""A hit shows up to this many messages before it and after it."""
CONTEXT_WEIGHT = 0.4


def _with_context(
    own: list[float], touched: Sequence[int], view: TimelinePostings, hidden: set[int]
) -> list[float]:
    """Each message's score plus :data:`CONTEXT_WEIGHT` times each visible neighbour's in its
    archive (``touched``: the scored messages, in the order their shares are added)."""
    shown = own[:]
    merged = view.merged
    if hidden:
        starts, archive_of = merged.starts, merged.archive_of
        for d in touched:
            share = CONTEXT_WEIGHT * own[d]
            a = archive_of[d]
            low, high = starts[a], starts[a + 1]
            q = d - 1
            while q >= low and q in hidden:
                q -= 1
            if q >= low:
                shown[q] += share
            q = d + 1
            while q < high and q in hidden:
                q += 1
            if q < high:
                shown[q] += share
        return shown
    before, after, weight = merged.before, merged.after, CONTEXT_WEIGHT
    for d in touched:
        share = weight * own[d]
        if before[d]:
            shown[d - 1] += share
        if after[d]:
            shown[d + 1] += share
    return shown


def _text_of(key: DocKey, corpus: Corpus, indexes: Sequence[ArchiveIndex], texts: _Texts) -> str:
    if key[0] < 0:
        return corpus.moved[key[1]][2]
    if key[1] == ABSTRACT_POSITION:
        found = corpus.abstracts.get(indexes[key[0]].archive_id)
        return found.text if found is not None else ""
    messages = texts.messages(indexes[key[0]].archive_id)
    return shown_parts(messages, key[1])[0] if key[1] < len(messages) else ""


def _verified(
    needle: str,
    candidates: Sequence[DocKey],
    indexes: Sequence[ArchiveIndex],
    corpus: Corpus,
    texts: _Texts,
) -> list[DocKey]:
    """The candidates whose text holds ``needle`` literally (case-insensitive)."""
    texts.need([indexes[a].archive_id for a, p in candidates if a >= 0 and p >= 0])
    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    return [k for k in candidates if pattern.search(_text_of(k, corpus, indexes, texts))]


def _literal_scan(
    needle: str,
    indexes: Sequence[ArchiveIndex],
    hidden: set[str],
    moved: Sequence[MovedItem],
    texts: _Texts,
) -> list[DocKey]:
    """Every visible message (and moved item) holding ``needle`` literally, newest first."""
    pattern = re.compile(re.escape(needle.strip()), re.IGNORECASE)
    found: list[DocKey] = [(-1, m) for m, item in enumerate(moved) if pattern.search(item[2])]
    texts.need([index.archive_id for index in indexes])
    for a in range(len(indexes) - 1, -1, -1):
        index = indexes[a]
        messages = texts.messages(index.archive_id)
        for position in range(len(messages)):
            if position < len(index.ids) and index.ids[position] in hidden:
                continue
            if pattern.search(shown_parts(messages, position)[0]):
                found.append((a, position))
    return found


def _bounded(literal: str) -> re.Pattern[str]:
    """``literal`` case-insensitively, not inside a longer word of letters or digits."""
    head = r"(?<![^\W_])" if literal[:1].isalnum() and literal[:1].isascii() else ""
    tail = r"(?![^\W_])" if literal[-1:].isalnum() and literal[-1:].isascii() else ""
    return re.compile(head + re.escape(literal) + tail, re.IGNORECASE)


def _tiers(
    parsed: _Query,
    candidates: Sequence[DocKey],
    indexes: Sequence[ArchiveIndex],
    corpus: Corpus,
    texts: _Texts,
) -> dict[DocKey, tuple[int, int]]:
    """Literal tiers (as negative numbers, for sorting): the whole query; identifiers and
    quoted phrases."""
    whole = " ".join(parsed.text.split())
    if not candidates or (not parsed.literals and (parsed.identifier or " " not in whole)):
        return {}
    # the whole query as a tier only for keywords: a question is rarely written verbatim
    texts.need([indexes[a].archive_id for a, p in candidates if a >= 0 and p >= 0])
    phrase = _bounded(whole)
    literals = [_bounded(x) for x in parsed.literals]
    out: dict[DocKey, tuple[int, int]] = {}
    for key in candidates:
        text = " ".join(_text_of(key, corpus, indexes, texts).split())
        whole_tier = -int(parsed.keywords and bool(phrase.search(text)))
        tier = (whole_tier, -sum(1 for p in literals if p.search(text)))
        if tier != (0, 0):
            out[key] = tier
    return out


SEMANTIC_WEIGHT = 0.5
"""How much the store's similarity (cosine, at most 1) counts beside a candidate's keyword score
relative to the best one (at most 1). Measured with the packaged MiniLM model on the LoCoMo
bench's development conversations (recall@5 at 4k / 8k): keywords alone 81.5 / 80.3%, this
weighting 81.5 / 80.3%, reciprocal rank fusion of the two rankings 72.1% at 4k; a weight of 1.0
gave 82.4 / 81.5% but let an embedding without meaning outvote clear keyword matches."""


def _weighed(
    scores: _Scores,
    keyword: Sequence[DocKey],
    semantic: Mapping[DocKey, float],
    *,
    eligible: Callable[[DocKey], bool],
) -> dict[DocKey, float]:
    """The keyword pool and the semantic hits, each scored by its keyword score relative to the
    best (only where the query's keyword rules let it match: ``eligible``) plus
    :data:`SEMANTIC_WEIGHT` times its similarity; a keyword candidate the semantic search did
    not return counts the lowest similarity it did return (it is at most that similar)."""
    best = max((scores.get(k, 0.0) for k in keyword), default=0.0)
    floor = min(semantic.values(), default=0.0)
    out: dict[DocKey, float] = {}
    for key in [*keyword, *semantic]:
        if key in out:
            continue
        relative = scores.get(key, 0.0) / best if best > 0 and eligible(key) else 0.0
        out[key] = relative + SEMANTIC_WEIGHT * semantic.get(key, floor)
    return out


def _semantic(
    corpus: Corpus,
    parsed: _Query,
    indexes: Sequence[ArchiveIndex],
    hidden: set[str],
    limit: int,
) -> dict[DocKey, float]:
    """The store's semantic hits on this timeline, visible ones only, with their similarity
    (best first)."""
    if corpus.semantic is None or parsed.identifier:
        return {}
    where = {index.archive_id: a for a, index in enumerate(indexes)}
    out: dict[DocKey, float] = {}
    for archive_id, position, similarity in corpus.semantic(parsed.text, max(limit * 4, 20)):
        a = where.get(archive_id)
        if a is None:
            continue
        if position == ABSTRACT_POSITION and archive_id in corpus.abstracts:
            out.setdefault((a, position), similarity)
            continue
        if not 0 <= position < len(indexes[a].ids) or indexes[a].ids[position] in hidden:
            continue
        out.setdefault((a, position), similarity)
    return out


def _finish(
    corpus: Corpus,
    parsed: _Query,
    texts: _Texts,
    ranked: Sequence[DocKey],
    *,
    limit: int,
    total: int,
    scores: Mapping[DocKey, float] | _Scores,
) -> tuple[list[Hit], bool]:
    chosen = list(ranked[:limit])
    return read_hits(corpus, parsed, texts, chosen, scores), total > limit


def read_hits(
    corpus: Corpus,
    parsed: _Query,
    texts: _Texts,
    keys: Sequence[DocKey],
    scores: Mapping[DocKey, float] | _Scores | None = None,
) -> list[Hit]:
    """The hits of ``keys``: each message with its neighbours (when ``texts`` reads them), as
    the tools show them, with its score from ``scores``."""
    indexes = corpus.indexes
    wanted: list[str] = []
    for a, position in keys:
        if a >= 0 and position >= 0:
            wanted.append(indexes[a].archive_id)
            if not texts.neighbours:
                continue
            if position < NEIGHBOURS and a > 0:
                wanted.append(indexes[a - 1].archive_id)
            if position >= len(indexes[a].ids) - NEIGHBOURS and a + 1 < len(indexes):
                wanted.append(indexes[a + 1].archive_id)
    texts.need(wanted)
    dates = _session_dates(corpus, texts, keys) if texts.dates else {}
    if scores is None:
        scores = {}
    hits: list[Hit] = []
    for a, position in keys:
        if a < 0:
            key, section, text = corpus.moved[position]
            start, length = _match_span(text, parsed)
            hits.append(
                Hit(
                    None,
                    0,
                    0,
                    "",
                    text,
                    start,
                    length,
                    section=section,
                    moved_key=key,
                    score=scores.get((a, position), 0.0),
                )
            )
            continue
        index = indexes[a]
        found = corpus.abstracts.get(index.archive_id)
        abstract = found.text if found is not None else ""
        if position == ABSTRACT_POSITION:
            start, length = _match_span(abstract, parsed)
            shown = sum(1 for i in index.ids if i not in corpus.hidden)
            hits.append(
                Hit(
                    archive_id=index.archive_id,
                    number=0,
                    total=shown,
                    role=ABSTRACT_ROLE,
                    text=abstract,
                    start=start,
                    length=length,
                    created_at=index.created_at,
                    seq=index.seq,
                    abstract=abstract,
                    score=scores.get((a, position), 0.0),
                )
            )
            continue
        messages = texts.messages(index.archive_id)
        visible = _visible(messages, corpus.hidden)
        number = _number(visible, position)
        if number is None:
            continue
        text, role, message_id = shown_parts(messages, position)
        start, length = _match_span(text, parsed)
        hits.append(
            Hit(
                archive_id=index.archive_id,
                number=number + 1,
                total=len(visible),
                role=role,
                text=text,
                start=start,
                length=length,
                before=_around(corpus, texts, a, number, -1) if texts.neighbours else (),
                after=_around(corpus, texts, a, number, 1) if texts.neighbours else (),
                created_at=index.created_at,
                seq=index.seq,
                abstract=abstract,
                message_id=message_id,
                score=scores.get((a, position), 0.0),
                session_date=dates.get((a, position), ""),
            )
        )
    return hits


def _with_similarity(
    hit: Hit, semantic: Mapping[DocKey, float], indexes: Sequence[ArchiveIndex]
) -> Hit:
    if hit.archive_id is None:
        return hit
    where = next((a for a, i in enumerate(indexes) if i.archive_id == hit.archive_id), None)
    if where is None:
        return hit
    position = ABSTRACT_POSITION if hit.role == ABSTRACT_ROLE else None
    if position is None:
        ids = indexes[where].ids
        position = next((p for p, i in enumerate(ids) if i == hit.message_id), None)
    if position is None:
        return hit
    return replace(hit, similarity=semantic.get((where, position), 0.0))


DATE_LOOKBACK_ARCHIVES = 2
"""A hit's session date is looked for in its own archive and at most this many before it."""


def _session_dates(corpus: Corpus, texts: _Texts, keys: Sequence[DocKey]) -> dict[DocKey, str]:
    """The session date of each message hit of ``keys``: the newest leading date line at or
    before it (its own archive first, then up to :data:`DATE_LOOKBACK_ARCHIVES` earlier ones,
    read in one batch per step back; an archive's date lines are kept with the timeline's
    postings once read)."""
    indexes = corpus.indexes
    view = corpus.postings()
    out: dict[DocKey, str] = {}
    open_keys = [(a, p) for a, p in keys if a >= 0 and p >= 0]
    cursor = {key: (key[0], key[1]) for key in open_keys}  # (archive, last position to read)
    for _ in range(DATE_LOOKBACK_ARCHIVES + 1):
        if not open_keys:
            break
        unread = [cursor[k][0] for k in open_keys if cursor[k][0] not in view.merged.dates]
        texts.need([indexes[a].archive_id for a in unread])
        still: list[DocKey] = []
        for key in open_keys:
            a, last = cursor[key]
            found = _newest_date(_dates_of(view, a, texts), last, corpus.hidden)
            if found:
                out[key] = found
            elif a > 0:
                cursor[key] = (a - 1, 1 << 30)
                still.append(key)
        open_keys = still
    return out


def _dates_of(view: TimelinePostings, a: int, texts: _Texts) -> Sequence[tuple[int, str, str]]:
    """The leading date lines of archive ``a``: ``(position, message id, date)``, oldest
    first (kept with the merged postings: an archive is immutable)."""
    kept = view.merged.dates.get(a)
    if kept is not None:
        return kept
    index = view.merged.archives[a]
    messages = texts.messages(index.archive_id)
    found: list[tuple[int, str, str]] = []
    for position in range(len(messages)):
        text = messages.text_start(position) if isinstance(messages, StoredMessages) else None
        if text is None:
            text = searchable_text(messages[position])
        if not text.lstrip().startswith("["):
            continue
        when, _ = date_line(text)
        if when is not None:
            found.append((position, _id_at(messages, position), format_date(when)))
    dated = tuple(found)
    if len(messages) == len(index.ids):  # read whole (a record that failed to load is not)
        view.merged.dates[a] = dated
    return dated


def _newest_date(dates: Sequence[tuple[int, str, str]], last: int, hidden: set[str]) -> str:
    """The newest of ``dates`` (see :func:`_dates_of`) at or before position ``last`` whose
    message is not hidden (``""``: none)."""
    for position, message_id, when in reversed(dates):
        if position <= last and not (hidden and message_id in hidden):
            return when
    return ""


def _id_at(messages: Sequence[BaseMessage], position: int) -> str:
    if isinstance(messages, StoredMessages):
        return messages.id_at(position)
    return str(messages[position].id)


def _visible(messages: Sequence[BaseMessage], hidden: set[str]) -> list[int]:
    """The positions of the messages not hidden (without making stored messages)."""
    if not hidden:
        return list(range(len(messages)))
    return [p for p in range(len(messages)) if _id_at(messages, p) not in hidden]


def _number(visible: Sequence[int], position: int) -> int | None:
    """The 0-based number among the visible messages of the one at ``position``."""
    at = bisect.bisect_left(visible, position)
    return at if at < len(visible) and visible[at] == position else None


def _around(corpus: Corpus, texts: _Texts, a: int, number: int, step: int) -> tuple[Neighbour, ...]:
    """Up to :data:`NEIGHBOURS` visible messages before (``step=-1``) or after (``1``) the
    visible message ``number`` (0-based) of archive ``a``, across into the adjacent archive of
    the timeline; oldest first."""
    indexes = corpus.indexes
    found: list[Neighbour] = []
    messages = texts.messages(indexes[a].archive_id)
    visible = _visible(messages, corpus.hidden)
    while len(found) < NEIGHBOURS:
        number += step
        if not 0 <= number < len(visible):
            a += step
            if not 0 <= a < len(indexes):
                break
            messages = texts.messages(indexes[a].archive_id)
            visible = _visible(messages, corpus.hidden)
            if not visible:
                break
            number = len(visible) - 1 if step < 0 else 0
        text, role, message_id = shown_parts(messages, visible[number])
        found.append(
            Neighbour(
                indexes[a].archive_id,
                number + 1,
                len(visible),
                role,
                text,
                seq=indexes[a].seq,
                message_id=message_id,
            )
        )
    return tuple(reversed(found)) if step < 0 else tuple(found)


def _match_span(text: str, parsed: _Query) -> tuple[int, int]:
    """Where the excerpt of a hit centres: the whole query, an identifier or quoted phrase,
    else the first word with a query term."""
    for literal in [" ".join(parsed.text.split()), *parsed.literals]:
        if not literal:
            continue
        found = re.search(re.escape(literal), text, re.IGNORECASE)
        if found:
            return found.start(), found.end() - found.start()
    wanted = set(parsed.terms)
    if wanted:
        for word in _WORD_RE.finditer(text):
            token = word.group().casefold()
            if stem(token) in wanted or any(t in token for t in wanted if len(t) == 2):
                return word.start(), word.end() - word.start()
    return 0, 0
