"""The Postgres deployment shape used by the scale-out tests (and shown in the README):
one connection pool per process, shared by a ``PostgresSaver`` and a ``PostgresStore``.

Also runnable as a worker process (``python _rel_pg.py <url> <name>``) that serves turns of any
thread from commands on stdin, one per line, answering one line each on stdout:

    turn <thread_id> <n>  run turn n of the thread (harness agent + after_turn) -> "ok"
    wait                  wait for this process's background Phase 2 work
                          -> "waited <bool> <model calls> <messages folded>"
    block <path>          every later model call first creates ``path`` (its text: the
                          markers it folds), then blocks for good: the process is inside the
                          model call from then on, and a test kills it there -> "ok"
    quit                  finish background work and exit

Only the command thread writes stdout (one answer per command); the model call signals through
its own file. The test side (``test_postgres_scaleout._Worker``) sends stdout and stderr to
files, never to pipes that a busy worker could fill and block on.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from wm_langgraph.config import WorkingMemoryConfig

__all__ = ["CONFIG", "postgres_backend", "setup_postgres"]

CONFIG = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,  # a commit, and a background Phase 2 job, every turn
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=True,
    phase2_workers=4,
)


@contextmanager
def postgres_backend(
    url: str, *, max_size: int = 8
) -> Iterator[tuple[PostgresSaver, PostgresStore]]:
    """A checkpointer and a store over one connection pool (autocommit, dict rows)."""
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    try:
        yield PostgresSaver(pool), PostgresStore(pool)
    finally:
        pool.close()


def setup_postgres(url: str) -> None:
    """Create or migrate the checkpointer's and the store's tables (once, before the workers)."""
    with postgres_backend(url, max_size=2) as (saver, store):
        saver.setup()
        store.setup()


def _worker(url: str, name: str) -> None:
    from _rel_harness import Conversation, MarkerModel, build_agent, markers_in

    from wm_langgraph.memory import WorkingMemory

    blocked: dict[str, Path] = {}
    never = threading.Event()

    def pause(kind: str, prompt: str, healthy: Any) -> Any:
        signal_file = blocked.get("path")
        if signal_file is not None:
            marks = " ".join(sorted(set(markers_in(prompt))))
            partial = signal_file.with_suffix(".part")
            partial.write_text(f"{kind} {marks}\n", encoding="utf-8")
            partial.replace(signal_file)  # appears whole: the test reads it once it exists
            never.wait()  # inside the model call until the process is killed
        time.sleep(0.02)  # lets Phase 2 jobs of two processes overlap; nothing is timed
        return None

    model = MarkerModel(fault=pause)
    with postgres_backend(url) as (saver, store):
        wm = WorkingMemory(model.model, config=CONFIG, store=store)
        graph = build_agent(wm, checkpointer=saver, store=store)
        print(f"ready {name}", flush=True)
        for line in sys.stdin:
            command = line.split()
            if not command:
                continue
            if command[0] == "turn":
                conversation = Conversation(command[1])
                conversation.turns = int(command[2])
                conversation.turn(graph)
                print("ok", flush=True)
            elif command[0] == "wait":
                finished = wm.wait(timeout=120)
                folded = sum(len(marks) for _, marks in model.calls)
                print(f"waited {finished} {len(model.calls)} {folded}", flush=True)
            elif command[0] == "block":
                blocked["path"] = Path(command[1])
                print("ok", flush=True)
            elif command[0] == "quit":
                break
        wm.close()


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
