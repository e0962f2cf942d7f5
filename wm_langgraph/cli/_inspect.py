"""The ``inspect`` command: what a wm-langgraph database (a SQLite file, or a PostgreSQL database
named by a ``postgresql://`` URL) holds, read-only.

Private helper of the CLI. Threads come from the checkpointer (live state) and from the store
(archives and WM versions under ``("wm_langgraph", <thread label>, …)``); for each thread it shows
the live messages and the meta (``pending_tokens``, ``keep_recent_count``), the settings it ran
with as it recorded them (or that they are not recorded), the archives (status, size), the
Phase 2 breaker and the current Working Memory. Every stored string is printed on its line
(newlines and hidden characters as visible escapes). A thread whose checkpoints were
deleted is shown as deleted, without its content (the memory reads it through the file's
checkpointer: behaviour §6.8). No content is changed and no model is called (opening the file
only makes sure its tables exist).
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
from wm_langgraph.cli._terminal import json_safe, line_safe
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import ROOT_LABEL, SCOPE_PREFIX, ArchiveStore
from wm_langgraph.storage.settings import read_settings
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__all__ = ["inspect_db", "thread_ids", "thread_report"]

_MEMORY_KINDS = frozenset({"archives", "wm", "meta", "ids"})
_DELETED = (
    "deleted (no checkpoint): its memory is unreadable; its records stay in the store until "
    "memory.purge"
)


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
    recorded = read_settings(ArchiveStore(memory.store), memory.memory_key(config))
    return {
        "thread_id": thread_id,
        # records of a thread whose checkpoints were deleted: kept until purge, never shown
        "deleted": saved is None,
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
        # what the thread ran with, as it recorded it (None: not recorded, older data)
        "settings": dict(recorded[-1].values) if recorded else None,
        "settings_recorded_at": (
            recorded[-1].at.isoformat() if recorded and recorded[-1].at else None
        ),
        "settings_changes": max(0, len(recorded) - 1),
    }


def _settings_line(report: dict[str, Any]) -> str:
    settings = report["settings"]
    if settings is None:
        return "settings: not recorded (the thread ran before wm_langgraph recorded them)"
    values = " ".join(f"{k}={line_safe(str(v))}" for k, v in settings.items())
    when = report["settings_recorded_at"] or "?"
    changes = report["settings_changes"]
    more = f"; changed {changes} time(s) before" if changes else ""
    return f"settings (recorded {line_safe(when)}{more}): {values}"


def _print_summary(report: dict[str, Any], out: TextIO) -> None:
    thread = line_safe(report["thread_id"])
    if report["deleted"]:
        print(f"{thread}: {_DELETED}", file=out)
        return
    done = sum(1 for a in report["archives"] if a["status"] == "done")
    wm = "yes" if report["working_memory"] else "no"
    settings = report["settings"]
    budget = (
        f"budget {settings['token_budget']:,}"
        if settings and isinstance(settings.get("token_budget"), int)
        else "settings not recorded"
    )
    print(
        f"{thread}: {report['live_messages']} live messages, pending_tokens "
        f"{report['pending_tokens']:,}, {len(report['archives'])} archives ({done} done), WM: "
        f"{wm}, {budget}",
        file=out,
    )


def _print_detail(report: dict[str, Any], out: TextIO) -> None:
    print(f"thread {line_safe(report['thread_id'])}", file=out)
    if report["deleted"]:
        print(f"  {_DELETED}", file=out)
        return
    print(
        f"  live messages: {report['live_messages']}; pending_tokens: "
        f"{report['pending_tokens']:,}; keep_recent_count: {report['keep_recent_count']}",
        file=out,
    )
    print(f"  {_settings_line(report)}", file=out)
    phase2 = report["phase2"]
    paused = " (Phase 2 paused)" if phase2.get("paused") else ""
    print(
        f"  Phase 2 consecutive failures: {phase2.get('consecutive_failures', 0)}{paused}", file=out
    )
    if report["pending_archives"]:
        pending = ", ".join(line_safe(a) for a in report["pending_archives"])
        print(f"  archives not yet in the WM: {pending}", file=out)
    print(f"  archives ({len(report['archives'])}):", file=out)
    for archive in report["archives"]:
        abstract = f"  {line_safe(archive['abstract'][:70])}" if archive["abstract"] else ""
        print(
            f"    {line_safe(archive['id']):<14} #{archive['seq']:<3} "
            f"{line_safe(archive['status']):<8} "
            f"{archive['messages']:>4} messages {archive['tokens']:>7,} tokens{abstract}",
            file=out,
        )
    print("  Working Memory:", file=out)
    wm = report["working_memory"].rstrip() or "(none yet)"
    # Split on newlines only: any other line break a text holds is shown as its escape.
    lines = wm.replace("\r\n", "\n").split("\n")
    print("\n".join("    " + line_safe(line) if line else "" for line in lines), file=out)


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
            memory = WorkingMemory(
                OfflineWorkingMemoryModel(), store=store, checkpointer=checkpointer
            )
            threads = thread_ids(checkpointer, store)
            if thread_id is not None and thread_id not in threads:
                known = ", ".join(line_safe(t) for t in threads) or "none"
                print(
                    f"wm-langgraph inspect: no thread {line_safe(repr(thread_id))} in "
                    f"{database_label(db)} "
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
