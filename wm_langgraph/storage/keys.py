"""Where a memory lives in a store: labels, memory keys and namespaces (design §2.2).

A thread can hold several memories (two named middlewares, agents in subgraphs of a supervisor
or swarm): each has a *scope* (:func:`memory_scope`: its name and graph namespace). The default
scope (default name, top-level graph) keeps the original layout ``("wm_langgraph", <thread
label>, kind)``, so stores written before scopes existed read unchanged; any other scope adds one
segment, ``("wm_langgraph", <thread label>, "@" + <scope label>, kind)``. The engine addresses a
memory by its *memory key* (:func:`memory_key`), the thread id plus the scope in one injective
string. Re-exported by :mod:`wm_langgraph.storage.archives`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from wm_langgraph._compat import NS_END, NS_SEP, in_graph_run
from wm_langgraph.errors import NoStoreError

__all__ = [
    "ROOT_LABEL",
    "SCOPE_PREFIX",
    "NoStoreError",
    "graph_namespace",
    "memory_key",
    "memory_scope",
    "namespace",
    "split_memory_key",
    "thread_id_from_config",
    "thread_label",
]

ROOT_LABEL = "wm_langgraph"
SCOPE_PREFIX = "@"
"""Marks a scope segment in a namespace (a thread label never starts with it)."""
_KEY_SEP = "\x1f"
_SAFE_LABEL = re.compile(r"[A-Za-z0-9_\-]{1,128}")


def thread_label(thread_id: object) -> str:
    """A store-namespace-safe, injective label for a thread id.

    Plain ids (letters, digits, ``_``, ``-``) are used as they are; any other id is encoded
    as ``~`` + unpadded base32 of its UTF-8 bytes (no ``.``, never empty, never clashes with a
    plain id).
    """
    text = str(thread_id)
    if _SAFE_LABEL.fullmatch(text):
        return text
    return "~" + base64.b32encode(text.encode("utf-8", "surrogatepass")).decode("ascii").rstrip("=")


def memory_scope(name: str, graph_ns: str) -> str:
    """The scope of a memory named ``name`` in the graph at ``graph_ns`` ("" = top level).

    ``""`` (the default scope) for the default name at the top level; otherwise
    ``name|graph_ns`` (neither part contains ``|`` in the name or a key separator).
    """
    if not name and not graph_ns:
        return ""
    return f"{name}|{graph_ns}"


def graph_namespace(configurable: Mapping[str, Any]) -> str:
    """The namespace of the graph a config belongs to, without task ids (``""`` = top level).

    Inside a run LangGraph sets ``checkpoint_ns`` to the path of the running node
    (``"agent:<task id>|tools:<task id>"``): the graph is everything before the last part. A
    config built by hand (a config-only call outside a run) names the graph itself:
    ``{"checkpoint_ns": "research_agent"}``.
    """
    raw = configurable.get("checkpoint_ns") or ""
    parts = [p for p in str(raw).split(NS_SEP) if p and not p.isdigit()]
    if in_graph_run(configurable) and parts:
        parts = parts[:-1]
    return NS_SEP.join(p.split(NS_END)[0] for p in parts)


def memory_key(thread_id: str, scope: str = "") -> str:
    """One injective string for (thread id, scope); the thread id itself for the default scope.

    Raises:
        ValueError: A scope containing the key separator.
    """
    if _KEY_SEP in scope:
        raise ValueError("a memory scope must not contain the unit separator character")
    if not scope and _KEY_SEP not in thread_id:
        return thread_id
    return f"{thread_id}{_KEY_SEP}{scope}"


def split_memory_key(key: str) -> tuple[str, str]:
    """Invert :func:`memory_key`: ``(thread_id, scope)``."""
    thread_id, sep, scope = key.rpartition(_KEY_SEP)
    return (thread_id, scope) if sep else (key, "")


def namespace(key: str, kind: str) -> tuple[str, ...]:
    """The store namespace of ``kind`` ("archives", "wm", "meta") for a memory key."""
    thread_id, scope = split_memory_key(key)
    if not scope:
        return (ROOT_LABEL, thread_label(thread_id), kind)
    return (ROOT_LABEL, thread_label(thread_id), SCOPE_PREFIX + thread_label(scope), kind)


def thread_id_from_config(config: RunnableConfig | Mapping[str, Any] | None) -> str:
    """The ``thread_id`` of a run config.

    Raises:
        ValueError: The config has no ``configurable.thread_id``.
    """
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    if thread_id is None or str(thread_id) == "":
        raise ValueError(
            "Working Memory needs a thread: pass config={'configurable': {'thread_id': '...'}} "
            "(and compile the graph with a checkpointer so the thread's messages persist)"
        )
    return str(thread_id)
