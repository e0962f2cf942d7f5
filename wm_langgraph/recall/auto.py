"""Recall before the agent asks (behaviour §7.4, SPEC §11): the search a user's turn runs.

When the newest message is the user's, assemble searches the thread's archives with that
message — the ranked search of ``archive_search`` (:func:`wm_langgraph.recall.search.rank`:
messages, abstracts, items moved out of the Working Memory; hybrid where the store has a vector
index) — and shows the best hits in the recalled layer
(:mod:`wm_langgraph.context.recalled`). This module turns the user's message into the query
and the hits into the layer's candidates; :func:`recall_candidates` is the whole step, callable
on its own (the bench times it). It reads only: no model call, no write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from wm_langgraph.context.recalled import RecallCandidate, Recalled
from wm_langgraph.document.text.units import date_line
from wm_langgraph.messages import content_text
from wm_langgraph.recall.search import ABSTRACT_ROLE, Corpus, Hit, Neighbour, rank

__all__ = [
    "MAX_HIT_CHARS",
    "MAX_QUERY_CHARS",
    "RECALL_HITS",
    "RECALL_RUN_NAME",
    "hit_candidate",
    "recall_candidates",
    "recall_query",
    "traced_recall",
]

logger = logging.getLogger("wm_langgraph")

RECALL_RUN_NAME = "wm.recall"
"""The traced run of the recall (its outputs name the hits)."""
RECALL_TAGS = ("wm_langgraph", "nostream")
"""Tags of the recall's run."""
RECALL_HITS = 20
"""Hits asked of the search per user turn (the layer shows those that fit its room)."""
CONTEXT_BEFORE = 0
"""Messages before a message hit shown with it (where the input does not show them)."""
CONTEXT_AFTER = 0
"""Messages after a message hit shown with it (the reply that answers a question follows it,
but on the development conversations showing it cost more room than it gained: see
docs/budgets.md, "The split of the budget")."""
MIN_SIMILARITY = 0.5
"""With a vector index, a hit whose keyword score is under the minimum is still recalled when
the store's similarity (cosine) reaches this."""
MAX_QUERY_CHARS = 1_000
"""A longer user message is searched by its start and its end (half each): a paste is long,
and the question about it is usually at one of its ends."""
MAX_HIT_CHARS = 1_200
"""A longer hit (a tool output, a paste) is shown by an excerpt of this many characters around
the match, as ``archive_search`` shows it; ``archive_expand`` reads the whole message."""


def recall_query(messages: Sequence[BaseMessage]) -> str:
    """The query of a turn: the newest message's text when it is the user's (a leading
    session-date line left out; a long one by its start and end), else ``""`` (a tool result,
    an answer: the recall runs on the user's turn only)."""
    if not messages or not isinstance(messages[-1], HumanMessage):
        return ""
    text = content_text(messages[-1].content)
    _, text = date_line(text)
    text = text.strip()
    if len(text) > MAX_QUERY_CHARS:
        half = MAX_QUERY_CHARS // 2
        text = f"{text[:half]} {text[-half:]}"
    return text


def _excerpt(text: str, start: int, length: int, limit: int) -> str:
    if len(text) <= limit:
        return text
    centre = start + length // 2
    begin = max(0, min(len(text) - limit, centre - limit // 2))
    head = "… " if begin > 0 else ""
    tail = " …" if begin + limit < len(text) else ""
    return f"{head}{text[begin : begin + limit]}{tail}"


def hit_candidate(hit: Hit, *, limit: int = MAX_HIT_CHARS) -> RecallCandidate:
    """The recalled layer's candidate for a search hit (its text cut to ``limit`` characters
    around the match)."""
    text = _excerpt(hit.text, hit.start, hit.length, limit)
    if hit.archive_id is None:
        return RecallCandidate(
            record=Recalled(None, 0, None, hit.score),
            kind="moved",
            text=text,
            section=hit.section,
        )
    if hit.role == ABSTRACT_ROLE:
        return RecallCandidate(
            record=Recalled(hit.archive_id, 0, None, hit.score),
            kind="abstract",
            text=text,
            total=hit.total,
            seq=hit.seq,
        )
    context = [
        *(hit.before[len(hit.before) - CONTEXT_BEFORE :] if CONTEXT_BEFORE else ()),
        *hit.after[:CONTEXT_AFTER],
    ]
    return RecallCandidate(
        record=Recalled(hit.archive_id, hit.number, hit.message_id or None, hit.score),
        kind="message",
        text=text,
        role=hit.role,
        total=hit.total,
        seq=hit.seq,
        session_date=hit.session_date,
        context=tuple(_neighbour(n, hit, limit) for n in context),
    )


def _neighbour(neighbour: Neighbour, hit: Hit, limit: int) -> RecallCandidate:
    return RecallCandidate(
        record=Recalled(
            neighbour.archive_id, neighbour.number, neighbour.message_id or None, hit.score
        ),
        kind="message",
        text=_excerpt(neighbour.text, 0, 0, limit),
        role=neighbour.role,
        total=neighbour.total,
        seq=neighbour.seq,
        session_date=hit.session_date if neighbour.archive_id == hit.archive_id else "",
    )


def recall_candidates(
    corpus: Corpus,
    query: str,
    *,
    limit: int = RECALL_HITS,
    min_score: float = 0.0,
) -> list[RecallCandidate]:
    """The recall step: the best ``limit`` hits for ``query`` in ``corpus`` whose keyword score
    is at least ``min_score`` (or, with a vector index, whose similarity is at least
    :data:`MIN_SIMILARITY`), best first, as candidates of the recalled layer (with their session
    dates; without their neighbours, which the layer does not show).

    Raises:
        wm_langgraph.recall.search.StaleIndexError: The corpus's cached index no longer
            matches the store (the cache is dropped: a new corpus reads it anew).
    """
    if not query.strip() or (not corpus.indexes and not corpus.moved):
        return []
    neighbours = bool(CONTEXT_BEFORE or CONTEXT_AFTER)
    hits, _ = rank(corpus, query, limit, neighbours=neighbours, dates=True)
    return [
        hit_candidate(h) for h in hits if h.score >= min_score or h.similarity >= MIN_SIMILARITY
    ]


def _record(candidate: RecallCandidate) -> dict[str, Any]:
    record = candidate.record
    return {
        "archive_id": record.archive_id,
        "position": record.position,
        "message_id": record.message_id,
        "score": round(record.score, 4),
        "kind": candidate.kind,
    }


def traced_recall(
    search: Callable[[], list[RecallCandidate]],
    query: str,
    *,
    thread_id: str,
    callbacks: Any = None,
) -> list[RecallCandidate]:
    """Run the recall ``search`` as a traced run named :data:`RECALL_RUN_NAME` under
    ``callbacks`` (the hook's, without streaming handlers): its input is the query, its output
    the hits found (archive id, position, message id, score). A recall that fails is logged and
    finds nothing: the model call goes on without the layer.
    """
    found: list[RecallCandidate] = []

    def run(_: str) -> dict[str, Any]:
        found[:] = search()
        return {"hits": [_record(c) for c in found]}

    config: RunnableConfig = {
        "run_name": RECALL_RUN_NAME,
        "tags": list(RECALL_TAGS),
        "metadata": {"thread_id": thread_id},
    }
    if callbacks is not None:
        config["callbacks"] = callbacks
    try:
        RunnableLambda(run, name=RECALL_RUN_NAME).invoke(query, config)
    except Exception as exc:  # the recall helps the turn; it never stops it
        logger.warning(
            "recall for thread %s failed (%s: %s); the model is called without the recalled layer",
            thread_id,
            type(exc).__name__,
            exc,
        )
        return []
    return found
