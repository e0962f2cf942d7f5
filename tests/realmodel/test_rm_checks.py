"""The real-model stage's invariant checks, run here on a fake writer (no server needed).

A real writer can fail on one archive for a deterministic reason (an unreadable reply, a
rejected prompt): that archive is deferred, the archives after it fold, and it is folded late
(behaviour §6.6). The checks must follow that fold order, not the timeline order: CI's real-model
run failed the lineage check on exactly this case while the engine did what it should.
"""

from __future__ import annotations

import json
import re
from typing import Any

from _rm_checks import play_checked
from _rm_session import PATHS, session_messages
from fake_openai import Answer, FakeOpenAIServer, chat_openai, prompt_of

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import SECTIONS, render_working_memory

CONFIG = WorkingMemoryConfig(
    token_budget=16_000,
    commit_token_threshold_ratio=0.0,  # commit after every turn, as the real-model test does
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
)


def _folded(request: dict[str, Any]) -> str:
    text = prompt_of(request)
    match = re.search(r"<messages>(.*)</messages>", text, re.S)
    return match.group(1) if match else text


class _Writer:
    """A careful writer that fails once, deterministically, on the archive holding ``poison``:
    the first request folding it gets a 400, every later one is answered."""

    def __init__(self, poison: str) -> None:
        self.poison = poison
        self.failed = 0
        self.served = 0

    def __call__(self, request: dict[str, Any]) -> Answer:
        folded = _folded(request)
        if self.poison in folded and not self.failed:
            self.failed += 1
            return Answer(status=400, error={"message": "Invalid prompt: flagged", "code": None})
        self.served += 1
        paths = sorted({p for p in PATHS if p in folded})
        note = f"Turn {self.served} folded"
        if not request.get("tools"):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Orders service totals"
            body["Current State"] = note
            body["Key Facts & Decisions"] = f"- {note}"
            body["Files & Context"] = "\n".join(f"- {p}: read" for p in paths)
            return Answer(text=render_working_memory(body))
        sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        sections["Current State"] = {"op": "UPDATE", "content": note}
        sections["Key Facts & Decisions"] = {"op": "APPEND", "items": [note]}
        if paths:
            sections["Files & Context"] = {"op": "APPEND", "items": [f"{p}: read" for p in paths]}
        return Answer(tool_args=json.dumps({"sections": sections}))


def test_the_checks_follow_a_deferred_archive_folded_late() -> None:
    poison = session_messages()[1][0].text[:40]  # the second turn's user message
    writer = _Writer(poison)
    wm, config = play_checked(chat_openai(FakeOpenAIServer(writer)), CONFIG, "rm-checks")
    records = wm.list_archives(config)
    assert writer.failed == 1
    late = [r for r in records if r.metadata.get("late")]
    assert late, "the poisoned archive was never folded late: the scenario did not happen"
    assert all(r.status == "done" for r in records)
