"""Delete a chat on LangGraph Platform: the thread, then the memory's records ("delete my chat").

The platform's thread delete removes the thread's checkpoints and runs; the store is shared by
every thread, so the Working Memory's records (archives, Working Memory versions, indexes) stay
in it. From the moment the checkpoints are gone the memory reads nothing of the thread (a
deleted thread is unreadable); this removes the records, as ``memory.purge(config)`` does in a
process that runs the memory: everything under the namespace prefix
``("wm_langgraph", <thread id>)``. Run it once the thread's runs have ended (a background
Phase 2 round still folding may write one more Working Memory version; running it again removes
that too)::

    from langgraph_sdk import get_sync_client
    from delete_thread import delete_thread

    client = get_sync_client(url="http://127.0.0.1:2024")
    delete_thread(client, thread_id)
"""

from __future__ import annotations

from typing import Any

PAGE = 100


def delete_thread(client: Any, thread_id: str) -> int:
    """Delete the thread (``client.threads.delete``) and every Working Memory record of it
    through the platform's store API; returns how many records were deleted.

    ``client`` is a ``langgraph_sdk`` sync client. Platform thread ids (UUIDs) are their own
    store label; another id is labelled as ``wm_langgraph.storage.keys.thread_label`` says.
    """
    client.threads.delete(thread_id)
    deleted = 0
    prefix = ["wm_langgraph", thread_id]
    while items := client.store.search_items(prefix, limit=PAGE)["items"]:
        for item in items:
            client.store.delete_item(item["namespace"], key=item["key"])
        deleted += len(items)
    return deleted
