"""A timeline's term postings merged across its archives (behaviour §7.6, design §2.2).

A search on a thread of a thousand archives read each query term's postings archive by archive
(a thousand dictionary look-ups per term, then tuple keys per message). Here the per-archive
indexes of a timeline are laid end to end: every message of the timeline gets a document
number (the archives' messages in timeline order), and each term has one postings list of
document numbers, ascending, with the term's count and the document's length beside each.

Archives are immutable and a timeline only grows, so the merged postings are extended in
place when a timeline gains archives; a fork of it (another timeline sharing a prefix) gets
its own copy. A reader works on a :class:`TimelinePostings`: the first ``count`` archives
(``size`` documents) of a :class:`MergedPostings`; what is appended after it was taken lies
past ``size`` and is never read, so readers need no lock (writers take one).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wm_langgraph.document.text.ranking import BM25_B, BM25_K1

if TYPE_CHECKING:
    from wm_langgraph.storage.search_index import AbstractIndex, ArchiveIndex

__all__ = [
    "BASE",
    "AbstractPostings",
    "AbstractTerms",
    "MergedPostings",
    "TimelinePostings",
    "merged_view",
]

BASE = BM25_K1 * (1.0 - BM25_B)
"""BM25's part of a term's denominator that does not depend on the document's length."""


class MergedPostings:
    """The postings of a timeline's archives, oldest first, append-only.

    Attributes (each per-document list is indexed by document number):
        archives: The archive indexes, in timeline order.
        archive_ids: Their ids.
        seqs: Their positions in their timeline (:attr:`ArchiveIndex.seq`).
        starts: The first document of each archive, then the number of documents.
        totals: The sum of the lengths of the documents before each archive, then the sum of
            all.
        archive_of: Each document's archive (its position in ``archives``).
        lengths: Each document's length in terms.
        before: Whether each document has a message before it in its archive.
        after: Whether each document has a message after it in its archive.
        position: Each archive id's position in ``archives``.
        by_id: The documents of each message id.
        postings: Each term's documents (ascending), counts, counts plus :data:`BASE` and the
            documents' lengths; the last three as floats (a score adds floats only: the same
            sums as with the integers, computed faster).
    """

    def __init__(self, indexes: Sequence[ArchiveIndex] = ()) -> None:
        """Merged postings of ``indexes`` (in timeline order)."""
        self.archives: list[ArchiveIndex] = []
        self.archive_ids: list[str] = []
        self.seqs: list[int] = []
        self.position: dict[str, int] = {}
        self.starts: list[int] = [0]
        self.totals: list[int] = [0]
        self.archive_of: list[int] = []
        self.lengths: list[int] = []
        self.before: list[bool] = []
        self.after: list[bool] = []
        self.by_id: dict[str, list[int]] = {}
        self.postings: dict[str, tuple[list[int], list[float], list[float], list[float]]] = {}
        self._floats: dict[int, float] = {}
        self._bases: dict[int, float] = {}
        self.dates: dict[int, tuple[tuple[int, str, str], ...]] = {}
        """Each archive's leading date lines once a search read them (``(position, message
        id, date)``; kept by the recall)."""
        self.abstracts: AbstractPostings | None = None
        """The archives' abstracts found so far (kept by the store's index)."""
        self.abstract_generation = 0
        """Raised when the store's abstract records change (:attr:`abstracts` is then read
        anew)."""
        self.lock = threading.Lock()
        self.extend(indexes)

    @property
    def documents(self) -> int:
        """The number of documents merged so far."""
        return self.starts[-1]

    def extend(self, indexes: Sequence[ArchiveIndex]) -> None:
        """Append ``indexes`` (the archives that follow the merged ones on the timeline).
        A reader's view never sees a document appended after the view was taken."""
        with self.lock:
            for index in indexes:
                self._append(index)

    def _append(self, index: ArchiveIndex) -> None:
        a = len(self.archives)
        base = self.starts[-1]
        size = len(index.lengths)
        for position, (message_id, length) in enumerate(zip(index.ids, index.lengths, strict=True)):
            self.archive_of.append(a)
            self.lengths.append(length)
            self.before.append(position > 0)
            self.after.append(position < size - 1)
            self.by_id.setdefault(message_id, []).append(base + position)
        lengths = index.lengths
        floats, bases = self._floats, self._bases
        for term, found in index.postings.items():
            entry = self.postings.get(term)
            if entry is None:
                entry = self.postings[term] = ([], [], [], [])
            docs, counts, plus, sizes = entry
            for position, count in found:
                length = lengths[position]
                sizes.append(floats.get(length) or floats.setdefault(length, float(length)))
                plus.append(bases.get(count) or bases.setdefault(count, count + BASE))
                counts.append(floats.get(count) or floats.setdefault(count, float(count)))
                docs.append(base + position)  # the document last: a reader cuts by it
        self.totals.append(self.totals[-1] + sum(lengths))
        self.seqs.append(index.seq)
        self.archives.append(index)
        self.archive_ids.append(index.archive_id)
        self.position.setdefault(index.archive_id, a)
        self.starts.append(base + size)

    def extend_to(
        self, timeline: Sequence[str], read: Callable[[Sequence[str]], list[ArchiveIndex]]
    ) -> bool:
        """Extend the merged archives to ``timeline`` when they are its start, reading the
        indexes of the archives that follow with ``read``; False when they are not its start
        (another branch) or an archive that follows has no index."""
        with self.lock:
            if not self.prefix_of(timeline):
                return False
            following = timeline[len(self.archive_ids) :]
            indexes = read(following) if following else []
            if [i.archive_id for i in indexes] != list(following):
                return False
            for index in indexes:
                self._append(index)
            return True

    def view(self, count: int) -> TimelinePostings:
        """The first ``count`` archives."""
        return TimelinePostings(self, count, self.starts[count])

    def prefix_of(self, timeline: Sequence[str]) -> bool:
        """Whether every merged archive is, in order, the start of ``timeline``."""
        n = len(self.archive_ids)
        return n <= len(timeline) and self.archive_ids == list(timeline[:n])

    def starts_with(self, timeline: Sequence[str]) -> bool:
        """Whether ``timeline`` is, in order, the start of the merged archives."""
        n = len(timeline)
        return n <= len(self.archive_ids) and self.archive_ids[:n] == list(timeline)


@dataclass(frozen=True, slots=True)
class TimelinePostings:
    """What one search reads: the first ``count`` archives (``size`` documents) of ``merged``."""

    merged: MergedPostings
    count: int
    size: int

    @property
    def archives(self) -> list[ArchiveIndex]:
        """The archive indexes of the view, in timeline order."""
        return self.merged.archives[: self.count]

    @property
    def seqs(self) -> list[int]:
        """Each archive's :attr:`ArchiveIndex.seq` (the view's are the first ``count``)."""
        return self.merged.seqs

    def matches(self, indexes: Sequence[ArchiveIndex]) -> bool:
        """Whether the view's archives are exactly ``indexes`` (the same objects, in order)."""
        if len(indexes) != self.count:
            return False
        merged = self.merged.archives
        if len(merged) == self.count:
            return merged == list(indexes)  # identical objects compare at once
        return all(x is y for x, y in zip(indexes, merged, strict=False))

    def term(self, term: str) -> tuple[list[int], list[float], list[float], list[float], int]:
        """The term's documents, counts, counts plus :data:`BASE` and document lengths (see
        :attr:`MergedPostings.postings`), and how many of them the view holds (the first)."""
        entry = self.merged.postings.get(term)
        if entry is None:
            return [], [], [], [], 0
        docs = entry[0]
        cut = len(docs)
        if cut and docs[cut - 1] >= self.size:
            cut = bisect.bisect_left(docs, self.size, 0, cut)
        return entry[0], entry[1], entry[2], entry[3], cut

    def doc(self, archive: int, position: int) -> int:
        """The document number of message ``position`` of archive ``archive``."""
        return self.merged.starts[archive] + position

    def key(self, doc: int) -> tuple[int, int]:
        """``(archive, position)`` of document ``doc``."""
        a = self.merged.archive_of[doc]
        return a, doc - self.merged.starts[a]

    def hidden_docs(self, hidden: set[str]) -> set[int]:
        """The documents of the view whose message id is in ``hidden``."""
        if not hidden:
            return set()
        by_id = self.merged.by_id
        size = self.size
        return {d for i in hidden for d in by_id.get(i, ()) if d < size}

    def total_length(self) -> int:
        """The sum of the lengths of the view's documents."""
        return self.merged.totals[self.count]


def merged_view(indexes: Sequence[ArchiveIndex]) -> TimelinePostings:
    """A view of ``indexes`` merged now (not cached)."""
    merged = MergedPostings(indexes)
    return merged.view(len(indexes))


class AbstractPostings:
    """The abstracts of a timeline's archives as they are found (Phase 2 writes them after
    the archives), with each term's postings; append-only, for one generation of the store's
    abstract records (a rewrite makes a new one).

    Attributes:
        generation: The generation of the abstract records it was read from.
        known: How many archives of the merged postings it has looked at.
        pending: The archives (positions) whose abstract may still come.
        found: The abstracts found, by archive id, in the order found.
        positions: The archive position of each abstract of ``found``, in the same order.
        postings: Each term's ordinals in ``found``, archive positions, lengths and counts.
    """

    def __init__(self, generation: int) -> None:
        """An empty set of abstracts of records of ``generation``."""
        self.generation = generation
        self.known = 0
        self.pending: set[int] = set()
        self.found: dict[str, AbstractIndex] = {}
        self.positions: list[int] = []
        self.lengths: list[int] = []
        self.last = -1
        self.postings: dict[str, tuple[list[int], list[int], list[int], list[int]]] = {}
        self.lock = threading.Lock()

    def add(self, position: int, abstract: AbstractIndex) -> None:
        """Add the abstract of the archive at ``position`` (call under :attr:`lock`)."""
        ordinal = len(self.positions)
        for term, count in abstract.counts.items():
            entry = self.postings.get(term)
            if entry is None:
                entry = self.postings[term] = ([], [], [], [])
            entry[1].append(position)
            entry[2].append(abstract.length)
            entry[3].append(count)
            entry[0].append(ordinal)  # last: a reader cuts by the ordinals
        self.lengths.append(abstract.length)
        self.positions.append(position)
        self.last = max(self.last, position)
        self.found[abstract.archive_id] = abstract

    def terms(self, view: TimelinePostings) -> AbstractTerms:
        """What a search of ``view`` reads of them: those found so far, of its archives."""
        with self.lock:
            ordinals = len(self.positions)
            if self.last < view.count:
                found = dict(self.found)
                total = sum(self.lengths)
            else:
                found = {
                    i: x
                    for (i, x), a in zip(self.found.items(), self.positions, strict=True)
                    if a < view.count
                }
                total = sum(
                    n for n, a in zip(self.lengths, self.positions, strict=True) if a < view.count
                )
        mean = total / len(found) if found else 1.0
        whole = self.last < view.count
        return AbstractTerms(found, mean, view=view, source=self, ordinals=ordinals, whole=whole)


@dataclass(frozen=True, slots=True)
class AbstractTerms:
    """The abstracts one search reads (``found``, by archive id; ``mean``: their mean length
    in terms): of ``view``, the first ``ordinals`` of ``source`` (``whole``: all of them are
    of the view's archives); or indexed now (``by_term``)."""

    found: dict[str, AbstractIndex]
    mean: float
    view: TimelinePostings | None = None
    source: AbstractPostings | None = None
    ordinals: int = 0
    whole: bool = True
    by_term: dict[str, list[tuple[int, int, int]]] | None = None

    def term(self, term: str) -> list[tuple[int, int, int]]:
        """``(archive position, length, count)`` of each abstract holding ``term``."""
        if self.source is None or self.view is None:
            return (self.by_term or {}).get(term, [])
        entry = self.source.postings.get(term)
        if entry is None:
            return []
        ordinals, positions, lengths, counts = entry
        cut = bisect.bisect_left(ordinals, self.ordinals)
        rows = zip(positions[:cut], lengths[:cut], counts[:cut], strict=True)
        if self.whole:  # every abstract of the snapshot is of the view's archives
            return list(rows)
        count = self.view.count
        return [row for row in rows if row[0] < count]

    @classmethod
    def of(cls, indexes: Sequence[ArchiveIndex], found: dict[str, AbstractIndex]) -> AbstractTerms:
        """The abstracts ``found`` (by archive id) of ``indexes``, indexed now."""
        by_term: dict[str, list[tuple[int, int, int]]] = {}
        lengths: list[int] = []
        for a, index in enumerate(indexes):
            abstract = found.get(index.archive_id)
            if abstract is None:
                continue
            lengths.append(abstract.length)
            for term, count in abstract.counts.items():
                by_term.setdefault(term, []).append((a, abstract.length, count))
        mean = sum(lengths) / len(lengths) if lengths else 1.0
        return cls(found, mean, by_term=by_term)
