"""The ``inspect`` command: what a wm-langgraph database (a SQLite file, or a PostgreSQL database
named by a ``postgresql://`` URL) holds, read-only.

Private helper of the CLI. Threads come from the checkpointer (live state) and from the store
(archives and WM versions under ``("wm_langgraph", <thread label>, …)``); for each thread it shows
the live messages and the meta (``pending_tokens``, ``keep_recent_count``), the archives (status,
size), the Phase 2 breaker and the current Working Memory. No content is changed and no model
is called (opening the file only makes sure its tables exist).
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any, TextIO

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from wm_langgraph.cli._runtime import (
    DatabaseOpenError,
    database_label,
    is_database_url,
    persistence,
)
from wm_langgraph.cli._terminal import json_safe
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import ROOT_LABEL, SCOPE_PREFIX
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__all__ = ["inspect_db", "thread_ids", "thread_report"]

_MEMORY_KINDS = frozenset({"archives", "wm", "meta", "ids"})


def _label_to_thread_id(label: str) -> str:
    """Invert ``storage.archives.thread_label`` (``~`` + base32 for ids that are not plain)."""
    if not label.startswith("~"):
        return label
    encoded = label[1:]
    try:
        return base64.b32decode(encoded + "=" * (-len(encoded) % 8)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return label


def thread_ids(checkpointer: BaseCheckpointSaver[Any], store: BaseStore) -> list[str]:
    """Every thread with a checkpoint or with Working Memory data, in first-seen order."""
    found: list[str] = []
    conn = getattr(checkpointer, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        rows = conn.execute("SELECT thread_id, MIN(rowid) FROM checkpoints GROUP BY thread_id")
        found.extend(str(row[0]) for row in sorted(rows, key=lambda row: row[1]))
    else:  # other checkpointers (PostgreSQL): walk their checkpoints
        for item in checkpointer.list(None):
            thread = str(item.config["configurable"]["thread_id"])
            if thread not in found:
                found.append(thread)
    for namespace in store.list_namespaces(prefix=(ROOT_LABEL,), max_depth=3, limit=10_000):
        # A memory's namespaces are (root, thread, kind) or (root, thread, "@scope", kind);
        # anything else under the root (the long-term facts of users) is not a thread.
        if len(namespace) < 3 or not _is_memory_segment(namespace[2]):
            continue
        thread = _label_to_thread_id(namespace[1])
        if thread not in found:
            found.append(thread)
    return found


def _is_memory_segment(segment: str) -> bool:
    return segment in _MEMORY_KINDS or segment.startswith(SCOPE_PREFIX)


def thread_report(
    memory: WorkingMemory, checkpointer: BaseCheckpointSaver[Any], thread_id: str
) -> dict[str, Any]:
    """A JSON-plain description of one thread (live state, meta, archives, breaker, WM)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    saved = checkpointer.get_tuple(config)
    values: dict[str, Any] = dict(saved.checkpoint.get("channel_values", {})) if saved else {}
    meta = values.get(META_KEY) or {}
    archives = memory.list_archives(config)
    return {
        "thread_id": thread_id,
        "live_messages": len(values.get("messages") or []),
        "pending_tokens": int(meta.get("pending_tokens", 0) or 0),
        "keep_recent_count": int(meta.get("keep_recent_count", 0) or 0),
        "archives": [
            {
                "id": record.id,
                "seq": record.seq,
                "status": record.status,
                "messages": record.message_count,
                "tokens": record.token_count,
                "abstract": record.abstract,
            }
            for record in archives
        ],
        "pending_archives": [r.id for r in archives if r.status != "done"],
        "phase2": memory.phase2_status(config),
        "working_memory": memory.get_working_memory(config),
    }


def _print_summary(report: dict[str, Any], out: TextIO) -> None:
    done = sum(1 for a in report["archives"] if a["status"] == "done")
    wm = "yes" if report["working_memory"] else "no"
    print(
        f"{report['thread_id']}: {report['live_messages']} live messages, pending_tokens "
        f"{report['pending_tokens']:,}, {len(report['archives'])} archives ({done} done), WM: {wm}",
        file=out,
    )


def _print_detail(report: dict[str, Any], out: TextIO) -> None:
    print(f"thread {report['thread_id']}", file=out)
    print(
        f"  live messages: {report['live_messages']}; pending_tokens: "
        f"{report['pending_tokens']:,}; keep_recent_count: {report['keep_recent_count']}",
        file=out,
    )
    phase2 = report["phase2"]
    paused = " (Phase 2 paused)" if phase2.get("paused") else ""
    print(
        f"  Phase 2 consecutive failures: {phase2.get('consecutive_failures', 0)}{paused}", file=out
    )
    if report["pending_archives"]:
        print(f"  archives not yet in the WM: {', '.join(report['pending_archives'])}", file=out)
    print(f"  archives ({len(report['archives'])}):", file=out)
    for archive in report["archives"]:
        abstract = f"  {archive['abstract'][:70]}" if archive["abstract"] else ""
        print(
            f"    {archive['id']:<14} #{archive['seq']:<3} {archive['status']:<8} "
            f"{archive['messages']:>4} messages {archive['tokens']:>7,} tokens{abstract}",
            file=out,
        )
    print("  Working Memory:", file=out)
    wm = report["working_memory"].rstrip() or "(none yet)"
    print("\n".join("    " + line if line else "" for line in wm.splitlines()), file=out)


def inspect_db(db: str, *, thread_id: str | None, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Print the threads of ``db`` (all as a summary, or one in detail).

    Returns:
        0 on success, 2 when the file does not exist or the thread is unknown.
    """
    if not is_database_url(db) and not Path(db).is_file():
        print(f"wm-langgraph inspect: no such database file: {db}", file=err)
        return 2
    try:
        with persistence(db) as (checkpointer, store):
            memory = WorkingMemory(OfflineWorkingMemoryModel(), store=store)
            threads = thread_ids(checkpointer, store)
            if thread_id is not None and thread_id not in threads:
                known = ", ".join(threads) or "none"
                print(
                    f"wm-langgraph inspect: no thread {thread_id!r} in {database_label(db)} "
                    f"(threads: {known})",
                    file=err,
                )
                return 2
            chosen = [thread_id] if thread_id is not None else threads
            reports = [thread_report(memory, checkpointer, t) for t in chosen]
    except DatabaseOpenError as exc:  # a missing extra, a database that cannot be reached
        print(f"wm-langgraph inspect: {exc}", file=err)
        return 2
    if as_json:
        text = json.dumps(
            {"db": database_label(db), "threads": reports}, ensure_ascii=False, indent=2
        )
        print(json_safe(text), file=out)
        return 0
    if thread_id is None:
        print(f"{database_label(db)}: {len(reports)} thread(s)", file=out)
        for report in reports:
            _print_summary(report, out)
        if reports:
            print("use --thread ID for the archives and the Working Memory", file=out)
        return 0
    _print_detail(reports[0], out)
    return 0
