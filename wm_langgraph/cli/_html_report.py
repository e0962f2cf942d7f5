"""The ``report`` command: one thread of a database as a self-contained HTML report.

Private helper of the CLI. Opens the database as ``inspect`` does (a SQLite file, or a
``postgresql://`` URL), reads the thread's archives, Working Memory versions and checkpoints
through :meth:`WorkingMemory.report`, and writes the report's file. Nothing is changed and no
model is called. Each call is rebuilt with the settings the thread recorded for it
(``storage.settings``); the options give the settings of calls from before settings were
recorded, and without them those calls are not rebuilt (the report says so): the library's
defaults are never assumed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TextIO

from langchain_core.runnables import RunnableConfig

from wm_langgraph.cli._inspect import thread_ids
from wm_langgraph.cli._runtime import (
    DatabaseOpenError,
    database_label,
    is_database_url,
    persistence,
)
from wm_langgraph.cli._terminal import line_safe
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory

__all__ = ["default_output", "report_thread"]


def default_output(thread_id: str) -> Path:
    """``wm-report-<thread>.html`` in the working directory (the id made safe for a file name)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", thread_id).strip("._") or "thread"
    return Path(f"wm-report-{safe[:80]}.html")


def report_thread(
    db: str,
    thread_id: str,
    *,
    config: WorkingMemoryConfig | None,
    given: str = "",
    output: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Write the report of ``thread_id`` in ``db``.

    ``config``: the settings of the calls the thread recorded none for (None: not rebuilt);
    ``given``: the options they come from, as the report names them.

    Returns:
        0 on success, 2 when the database or the thread does not exist or cannot be read.
    """
    if not is_database_url(db) and not Path(db).is_file():
        print(f"wm-langgraph report: no such database file: {db}", file=err)
        return 2
    target = Path(output) if output else default_output(thread_id)
    try:
        with persistence(db) as (checkpointer, store):
            threads = thread_ids(checkpointer, store)
            if thread_id not in threads:
                known = ", ".join(line_safe(t) for t in threads) or "none"
                print(
                    f"wm-langgraph report: no thread {line_safe(repr(thread_id))} in "
                    f"{database_label(db)} "
                    f"(threads: {known})",
                    file=err,
                )
                return 2
            memory = WorkingMemory(
                config=config or WorkingMemoryConfig(), store=store, checkpointer=checkpointer
            )
            thread: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            where = "PostgreSQL" if is_database_url(db) else f"SQLite {Path(db).name}"
            report = memory.report(
                thread, checkpointer=checkpointer, where=where, assume=config, assumed_from=given
            )
            html = report.html  # read everything while the database is open
    except DatabaseOpenError as exc:  # a missing extra
        print(f"wm-langgraph report: {exc}", file=err)
        return 2
    target.write_text(html, encoding="utf-8")
    calls = len(report.calls)
    print(
        f"wrote {target}: thread {line_safe(thread_id)}, {len(report.archives)} archives, "
        f"{len(report.commits)} Working Memory versions, {calls} model calls",
        file=out,
    )
    if not report.settings_known:
        rebuilt = (
            f"its calls are rebuilt with {given}"
            if config is not None
            else f"{report.unknown_settings} call(s) not rebuilt: pass --budget (and --reserve, "
            "--wm-tokens, --no-verbatim-fill) as the agent ran"
        )
        print(f"the settings this thread ran with are not recorded: {rebuilt}", file=out)
    return 0
