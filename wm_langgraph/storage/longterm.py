"""Long-term memory (behaviour §8): a user's durable facts, shared across that user's threads.

After each completed Working Memory, the items of its ``Key Facts & Decisions`` section are
written to ``(*prefix, <user label>, "facts")`` in the store, one item per fact (keyed by a hash
of its normalised text, so a fact repeated by later versions is written once and refreshed).
Any thread of the same user can search them. Off by default
(``WorkingMemoryConfig(long_term_memory=True)`` turns it on; the user id comes from
``config["configurable"]["user_id"]``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import BaseStore

from wm_langgraph.document.sections import item_key, parse_working_memory, section_items
from wm_langgraph.storage.archives import now_iso, thread_label

__all__ = [
    "FACTS_SECTION",
    "facts_namespace",
    "search_facts",
    "write_after_commit",
    "write_key_facts",
]

logger = logging.getLogger("wm_langgraph")

FACTS_SECTION = "Key Facts & Decisions"
_SENTINEL_PREFIX = "[⚠ CONSOLIDATION REQUIRED"
_PAGE = 200


def facts_namespace(prefix: Sequence[str], user_id: str) -> tuple[str, ...]:
    """The namespace holding one user's facts."""
    return (*prefix, thread_label(user_id), "facts")


def write_key_facts(
    store: BaseStore,
    prefix: Sequence[str],
    user_id: str,
    working_memory: str,
    *,
    thread_id: str,
    archive_id: str,
) -> int:
    """Write the Key Facts items of ``working_memory`` for ``user_id``.

    Returns:
        How many items were written.
    """
    items = [
        item
        for item in section_items(parse_working_memory(working_memory).get(FACTS_SECTION, ""))
        if not item.startswith(_SENTINEL_PREFIX)
    ]
    namespace = facts_namespace(prefix, user_id)
    for item in items:
        key = hashlib.sha256(item_key(item).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        store.put(
            namespace,
            key,
            {
                "text": item,
                "user_id": user_id,
                "thread_id": thread_id,
                "archive_id": archive_id,
                "updated_at": now_iso(),
            },
            ttl=None,  # durable facts: a store's default TTL never expires them
        )
    return len(items)


def search_facts(
    store: BaseStore,
    prefix: Sequence[str],
    user_id: str,
    query: str | None = None,
    *,
    limit: int = 10,
) -> list[dict[str, Any]]:
    """A user's facts, newest first, whose text contains every word of ``query`` (any case).

    Literal matching works on every store (no vector index needed).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    namespace = facts_namespace(prefix, user_id)
    words = [w.casefold() for w in (query or "").split()]
    hits: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = store.search(namespace, limit=_PAGE, offset=offset)
        for item in page:
            text = str(item.value.get("text", ""))
            if all(w in text.casefold() for w in words):
                hits.append(dict(item.value))
        if len(page) < _PAGE:
            break
        offset += _PAGE
    hits.sort(key=lambda v: str(v.get("updated_at", "")), reverse=True)
    return hits[:limit]


def write_after_commit(store: BaseStore, prefix: Sequence[str], state: Mapping[str, Any]) -> None:
    """Write the Key Facts of a completed commit (its state) for the run's ``user_id``.

    Never raises: long-term memory must not undo a completed Working Memory.
    """
    user_id = state.get("user_id")
    if not user_id:
        logger.warning("wm_langgraph: long_term_memory is on but the run has no user_id")
        return
    try:
        write_key_facts(
            store,
            prefix,
            str(user_id),
            state["text"],
            thread_id=state["thread_id"],
            archive_id=state["batch"][-1],
        )
    except Exception:
        logger.exception("wm_langgraph: writing long-term facts failed")
