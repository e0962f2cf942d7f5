"""The peer *trimming + retrieval*: what a LangChain user writes in an afternoon.

Every model call: LangChain's ``trim_messages`` keeps the newest messages in ``usable`` less a
*slice* (``strategy="last"``, ``start_on="human"``, the system message kept, as the
``trimming`` peer); LangChain's ``BM25Retriever`` (langchain-community, over ``rank_bm25``)
indexes the messages trimming left out, one document per message, and is asked with the
newest user message (at question time: the question); the hits, in score order, go into one
block placed before the kept messages (in the system message) while the block stays within
the slice and the whole input within ``usable``. A hit that does not fit is skipped and the
next one tried; a message that shares no term with the query (BM25 score 0) is not a hit.
The retriever's own tokenizer is used (its default: ``str.split``).

Both extras are bench-only (``[bench]``, and ``[dev]`` so the smoke test covers the peer);
without them :func:`retrieval_available` is false and the bench skips the system with a
message.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    trim_messages,
)

__all__ = [
    "DEFAULT_SLICE",
    "HEADER",
    "SLICES",
    "TrimRetrieveMiddleware",
    "retrieval_available",
]

SLICES: tuple[float, ...] = (0.15, 0.25, 0.50)
"""The slices tried on conversations 26 and 30 (share of ``usable``)."""
DEFAULT_SLICE = 0.25
"""The slice when no tuning conversation is run (bench/locomo/run.py says which applied)."""
HEADER = "Earlier messages of this conversation that may be relevant (found by search):"
"""The first line of the block of hits."""

Count = Callable[[list[BaseMessage]], int]


def retrieval_available() -> bool:
    """Whether langchain-community's BM25 retriever and rank_bm25 are installed."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("langchain_community", "rank_bm25")
    )


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    return message.type


class TrimRetrieveMiddleware(AgentMiddleware[Any, Any]):
    """``trim_messages`` to ``usable - slice_tokens``, then BM25 hits over what it dropped,
    placed before the kept messages (the state keeps every message).

    Args:
        usable: The whole input's room (system message included), by ``count``.
        slice_tokens: The room of the block of hits.
        count: The token counter of every system.
    """

    def __init__(self, usable: int, slice_tokens: int, count: Count) -> None:
        super().__init__()
        self.usable = usable
        self.slice_tokens = slice_tokens
        self.count = count

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The request trimmed, with the block of hits in its system message."""
        system, kept = self.model_input(request.messages, request.system_message)
        return handler(
            request.override(messages=cast("list[AnyMessage]", kept), system_message=system)
        )

    def messages_for(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The model input for ``messages`` with no system prompt: the system message (the
        block of hits, when any) and the kept messages."""
        system, kept = self.model_input(messages, None)
        return [system, *kept] if system is not None else kept

    def model_input(
        self, messages: Sequence[BaseMessage], system_message: SystemMessage | None
    ) -> tuple[SystemMessage | None, list[BaseMessage]]:
        """(system message with the block of hits, kept messages) for ``messages``."""
        system = [system_message] if system_message is not None else []
        room = self.usable - self.slice_tokens - self.count(list(system))
        kept = trim_messages(
            list(messages),
            strategy="last",
            token_counter=self.count,
            max_tokens=max(0, room),
            start_on="human",
            include_system=True,
        )
        kept_ids = {id(m) for m in kept} | {m.id for m in kept if m.id}
        dropped = [
            m
            for m in messages
            if id(m) not in kept_ids
            and not (m.id and m.id in kept_ids)
            and not isinstance(m, SystemMessage)
            and m.text.strip()
        ]
        query = next((m.text for m in reversed(kept) if isinstance(m, HumanMessage)), "")
        hits = _bm25_hits(dropped, query) if dropped and query.strip() else []
        return self._with_hits(system_message, kept, hits), kept

    def _with_hits(
        self,
        system_message: SystemMessage | None,
        kept: list[BaseMessage],
        hits: list[BaseMessage],
    ) -> SystemMessage | None:
        """The system message with as many hits as fit (score order, skipping one that does
        not fit): the block within the slice, the whole input within ``usable``."""
        if not hits:
            return system_message
        kept_tokens = self.count(kept)
        prefix = f"{system_message.text}\n\n" if system_message is not None else ""
        chosen: list[str] = []
        spent = self.count([SystemMessage(HEADER)])
        overhead = self.count([SystemMessage("")]) - 1  # a line costs its text and a separator
        for hit in hits:
            line = f"[{_role(hit)}] {hit.text}"
            cost = self.count([SystemMessage(line)]) - overhead  # an estimate: checked below
            if spent + cost > self.slice_tokens:
                continue
            chosen.append(line)
            spent += cost
        while chosen:  # the exact count of the block and of the whole input
            block = "\n\n".join([HEADER, *chosen])
            merged = SystemMessage(prefix + block)
            fits_slice = self.count([SystemMessage(block)]) <= self.slice_tokens
            if fits_slice and self.count([merged]) + kept_tokens <= self.usable:
                return merged
            chosen.pop()
        return system_message


def _bm25_hits(dropped: list[BaseMessage], query: str) -> list[BaseMessage]:
    """The messages of ``dropped`` that share a term with ``query``, best BM25 score first
    (LangChain's ``BM25Retriever`` over one document per message)."""
    from langchain_core.documents import Document

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-community's deprecation notice
        from langchain_community.retrievers import BM25Retriever

    docs = [Document(m.text, metadata={"at": i}) for i, m in enumerate(dropped)]
    retriever = BM25Retriever.from_documents(docs, k=len(docs))
    scores = retriever.vectorizer.get_scores(retriever.preprocess_func(query))
    ranked = retriever.invoke(query)
    return [dropped[d.metadata["at"]] for d in ranked if scores[d.metadata["at"]] > 0]
