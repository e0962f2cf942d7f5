"""End to end with a real model as the Working Memory writer (scripted writers never make the
mistakes a real small model makes).

``create_agent`` + ``WorkingMemoryMiddleware``; the agent's model is scripted (a short coding
session: a file read, a failing test, a fix, a decision, a TODO, a config file), the WM writer
is the real model behind ``WM_TEST_REALMODEL_URL`` (an OpenAI-compatible server, reached through
ChatOpenAI as users reach it), sampling pinned (temperature 0, seed 0). A commit after every
turn and a final compact.

What is asserted holds for ANY writer reply (``_rm_checks``, behaviour §10): nothing of the
session lost, nothing guarded lost (items judged by identity, as the guards judge them), no
instruction planted by code, budgets kept, every archive folded in or recorded as failed with
a reason, seven canonical sections. How well this model writes (facts, paths, the error and the
TODO kept; valid tool calls; guard interventions; latency and tokens per call) is a figure:
printed and written to ``$WM_REALMODEL_OUT_DIR/e2e_figures.{json,md}``, never asserted: a
check that read the 0.5B model's wording failed a fresh-clone run after two passing ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _rm_checks import play_checked
from _rm_session import (
    ERROR,
    FACTS,
    PATHS,
    TODO,
    CallRecorder,
)
from langchain_openai import ChatOpenAI

from wm_langgraph.cli._report import interventions
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import parse_working_memory

pytestmark = pytest.mark.realmodel

# Per-call bounds for a 0.5B model on CPU: fewer output tokens and a longer timeout than the
# engine's defaults. Sampling pinned: temperature 0 and a fixed seed (the server's own --seed
# is 0 too); the checks do not rely on it, the figures are steadier with it.
MAX_TOKENS = 1024
SEED = 0
CALL_TIMEOUT_S = 600.0

CONFIG = WorkingMemoryConfig(
    token_budget=16_000,
    commit_token_threshold_ratio=0.0,  # commit after every turn
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
    model_timeout_seconds=CALL_TIMEOUT_S + 30,
)


def _writer(recorder: CallRecorder) -> ChatOpenAI:
    return ChatOpenAI(
        model=os.environ.get("WM_LANGGRAPH_MODEL") or "local-model",
        base_url=os.environ["WM_TEST_REALMODEL_URL"],
        api_key=os.environ.get("OPENAI_API_KEY") or "sk-local-no-key-needed",  # type: ignore[arg-type]
        temperature=0,
        max_tokens=MAX_TOKENS,  # type: ignore[call-arg]
        # langchain-openai sends max_tokens as max_completion_tokens, which llama-cpp-python's
        # server ignores: without the field it reads, a call may generate to the end of the
        # model's context (measured: 5,482 tokens in 318 s)
        extra_body={"max_tokens": MAX_TOKENS, "seed": SEED},
        timeout=CALL_TIMEOUT_S,
        max_retries=0,
        callbacks=[recorder],
    )


def _out_dir(tmp_path: Path) -> Path:
    out = Path(os.environ.get("WM_REALMODEL_OUT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _contains(text: str, needle: str) -> bool:
    return " ".join(needle.split()).casefold() in " ".join(text.split()).casefold()


def _markdown(figures: dict[str, Any]) -> str:
    lines = [
        f"# Real model as the WM writer: {figures['model']}",
        "",
        f"valid update tool calls / update calls: {figures['valid_update_calls']} / "
        f"{figures['update_calls']}; create calls {figures['create_calls']} "
        f"(rejected {figures['create_rejected']}); writer calls in all {figures['calls']}",
        f"planted facts kept: {figures['facts_kept']} / {len(FACTS)}; paths "
        f"{figures['paths_kept']} / {len(PATHS)} (dropped on record "
        f"{figures['paths_dropped_on_record']}); error kept: {figures['error_kept']}; "
        f"TODO kept: {figures['todo_kept']}",
        "",
        "| commit | branch | fallback | guard interventions | path and error trail | total s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c['archive']} | {c['branch']} | {c['fallback'] or ''} | "
        f"{len(c['interventions'])}: {'; '.join(c['interventions'])} | "
        f"{', '.join(c['artifact_trail'] + c['error_trail'])} | {c['total_s']} |"
        for c in figures["commits"]
    ]
    lines += [
        "",
        "| call | step | latency s | prompt tokens | completion tokens | finish | valid |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, c in enumerate(figures["writer_calls"], start=1):
        valid = "" if c["step"] == "wm.create" else str(c["valid_tool_call"])
        lines.append(
            f"| {n} | {c['step']} | {c['latency_s']} | {c['prompt_tokens']} | "
            f"{c['completion_tokens']} | {c['finish_reason']} | {valid} |"
        )
    lines += ["", "## Final Working Memory", "", figures["final_wm"]]
    return "\n".join(lines) + "\n"


def test_real_writer_over_a_coding_session(tmp_path: Path) -> None:
    recorder = CallRecorder()
    wm, config = play_checked(_writer(recorder), CONFIG, "realmodel-e2e")

    final = wm.get_working_memory(config)
    records = wm.list_archives(config)
    sections = parse_working_memory(final)
    calls = recorder.calls
    updates = [c for c in calls if c.step == "wm.update"]
    creates = [c for c in calls if c.step == "wm.create"]
    # Code-added (trail) paths are not append-only (behaviour §9): a writer may drop one, and
    # the guard records the drop.
    dropped = " ".join(
        str(d.get("reason") or "")
        for r in records
        for d in r.metadata.get("decisions") or []
        if "code had added" in str(d.get("reason") or "")
    )
    figures: dict[str, Any] = {
        "model": os.environ.get("WM_LANGGRAPH_MODEL") or "local-model",
        "calls": len(calls),
        "create_calls": len(creates),
        "create_rejected": sum(
            1 for r in records for e in [r.metadata.get("error") or ""] if "create" in e
        ),
        "update_calls": len(updates),
        "valid_update_calls": sum(c.valid_tool_call for c in updates),
        "facts_kept": sum(_contains(final, fact) for fact in FACTS),
        "facts_missing": [fact for fact in FACTS if not _contains(final, fact)],
        "paths_kept": sum(path in sections["Files & Context"] for path in PATHS),
        "paths_dropped_on_record": sum(path in dropped for path in PATHS),
        "error_kept": _contains(final, ERROR),
        "todo_kept": _contains(final, TODO),
        "commits": [
            {
                "archive": r.id,
                "status": r.status,
                "branch": r.metadata.get("branch"),
                "fallback": r.metadata.get("fallback"),
                "interventions": interventions(r),
                "artifact_trail": r.metadata.get("artifact_trail") or [],
                "error_trail": r.metadata.get("error_trail") or [],
                "total_s": round(
                    ((r.metadata.get("metrics") or {}).get("total_ms") or 0) / 1000, 1
                ),
                "metrics": r.metadata.get("metrics") or {},
            }
            for r in records
        ],
        "writer_calls": [vars(c) for c in calls],
        "final_wm": final,
    }
    out = _out_dir(tmp_path)
    (out / "e2e_figures.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    (out / "e2e_figures.md").write_text(_markdown(figures), encoding="utf-8")
    print("\n" + _markdown(figures))

    # The invariants were asserted by play_checked after every turn and after the final compact
    # (archives settled included); the figures above are what this model made of the session.
    assert calls, "the writer was never called: the stage measured nothing"
