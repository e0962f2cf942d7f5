"""``python -m bench --real-model``: the "real small model" row.

A generated coding session played through wm_langgraph (``create_agent`` +
``WorkingMemoryMiddleware``) with a real model as the Working Memory writer, reached through
ChatOpenAI at ``OPENAI_BASE_URL`` (for example the llama.cpp server that
``python scripts/realmodel_server.py run -- python -m bench --real-model`` starts), next to the
scripted summarisers on the same session, scored exactly as the survival table (the needles in
what the agent's model receives). It writes REALMODEL.md, stamped with the code it measured
(RESULTS.md names it; ``python -m bench`` cannot regenerate it without a model server).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from bench.data import generate_coding_session
from bench.measure import kinds_present
from bench.notes_quality import note_counts
from bench.play import run_one
from bench.provenance import (
    Stamp,
    code_fingerprint,
    git_commit,
    load_average,
    machine,
    settled_fingerprint,
    stamp_lines,
)
from bench.report import (
    CAPTURE_HEADER,
    REALMODEL_CAPTURE_BEGIN,
    REALMODEL_CAPTURE_END,
    _survival_rows,
    _table,
    capture_rows,
)
from bench.systems import Tuning

TURNS = 48
# A session that outgrows its window many times over: the final input holds the Working
# Memory and only the newest part verbatim, and the Working Memory itself must consolidate and
# move items out (its share of a 3,000-token window is small). With 16 turns it held the whole
# session and every row, the sloppy scripted writer's too, scored 100%: the row measured
# nothing (measured with the scripted rows, session seed 7: 16 turns 100% / 100%; 48 turns
# 85.7% faithful, 92.1% sloppy, 7 compactions).
TUNING = Tuning(chunk_tokens=1_500, keep_messages=6, token_budget=80_000, window=3_000)
SCRIPTED = ("faithful", "sloppy")
MAX_TOKENS = 1024
TIMEOUT_S = 600.0
WRITER_SEED = 0
"""The real writer's sampling seed, sent with every request (with temperature 0)."""


def _writer() -> object:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=os.environ.get("WM_LANGGRAPH_MODEL") or "local-model",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY") or "sk-local-no-key-needed",
        temperature=0,
        max_tokens=MAX_TOKENS,
        # langchain-openai sends max_tokens as max_completion_tokens, which an older
        # OpenAI-compatible server (llama-cpp-python's) ignores: without the plain field a
        # call ran to the end of the context (5,482 tokens, 318 s)
        extra_body={"max_tokens": MAX_TOKENS, "seed": WRITER_SEED},
        timeout=TIMEOUT_S,
        max_retries=0,
    )


def run_real_model(out: Path, *, seed: int = 7) -> int:
    """Run the rows and write ``out/REALMODEL.md`` (``out`` is created when missing); 2 when
    no server is configured."""
    if not os.environ.get("OPENAI_BASE_URL"):
        print("python -m bench --real-model needs OPENAI_BASE_URL (an OpenAI-compatible server)")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    fingerprint, commit, load = code_fingerprint(), git_commit(), load_average()
    session = generate_coding_session(seed, TURNS)
    label = f"real small model ({os.environ.get('WM_LANGGRAPH_MODEL') or 'local-model'})"
    started = time.perf_counter()
    # a CPU-only local model needs minutes per call: the engine's 120 s default would end
    # every round at its deadline (the archives then stay pending and verbatim)
    slow = {"model_timeout_seconds": TIMEOUT_S + 30}
    real = run_one(
        "wm_langgraph",
        session,
        label,
        TUNING,
        model=_writer(),
        wm_overrides=slow,
        track_memory=True,
    )
    seconds = time.perf_counter() - started
    runs = [real] + [
        run_one("wm_langgraph", session, b, TUNING, track_memory=True) for b in SCRIPTED
    ]
    sizes = {r.behaviour: ", ".join(f"{tokens:,}" for _, tokens in r.memory_tokens) for r in runs}
    kinds = kinds_present([r.final for r in runs])
    at = max(1, real.compactions)
    header = ["session", "summariser", "system", "compactions", "overall", "summary-only"]
    header += [*kinds, "final", "stale"]
    stamp = Stamp(
        command=f"python scripts/realmodel_server.py run -- python -m bench --real-model "
        f"--seed {seed}",
        seeds=f"session seed {seed}; the scripted rows' loss process seeded from it; the real "
        f"model at temperature 0, sampling seed {WRITER_SEED}",
        fingerprint=settled_fingerprint(fingerprint),
        commit=commit,
        machine=f"{machine()}; load average (1 / 5 / 15 min) {load} at the start, "
        f"{load_average()} at the end",
        extra=(
            (
                "Writer",
                f"{label} at OPENAI_BASE_URL, temperature 0, seed {WRITER_SEED}, "
                f"max_tokens {MAX_TOKENS}",
            ),
        ),
    )
    lines = [
        "# Real small model (a coding session that outgrows its window)",
        "",
        "The real model's output depends on the model file and its server, so "
        "`python -m bench` does not regenerate this file and the freshness test only reports "
        "(skips) when the code has changed since.",
        "",
        *stamp_lines(stamp),
        "## Survival",
        "",
        f"A {TURNS}-turn coding session, wm_langgraph with a compaction every "
        f"{TUNING.chunk_tokens:,} pending tokens (keep {TUNING.keep_messages}) in a "
        f"{TUNING.window:,}-token window; the writer is the "
        f"model at OPENAI_BASE_URL, the other rows the scripted summarisers on the same session. "
        f"Columns as in the survival table of RESULTS.md, measured after compaction {at} "
        f"({real.compactions} compactions, errors: {len(real.errors)}). The real row took "
        f"{seconds:.0f} s (wall time on the machine above).",
        "",
        *_table(header, _survival_rows(runs, kinds, at)),
        "",
        "The Working Memory's size in tokens after each compaction (the session outgrows the "
        "window, so the memory has to consolidate and move items out; *summary-only* is what it "
        "kept of what no longer fits verbatim):",
        "",
        *[f"- {name}: {tokens}" for name, tokens in sizes.items()],
        "",
        "## Capture check",
        "",
        "The capture check's fates over each row's rounds, as in RESULTS.md: *follow-up calls* "
        "are the rounds in which the writer was asked about what it left out. A row with 0 "
        "rounds completed none (its writer failed or ran past its deadline every time). "
        "*Notes quality* reads each row's final Working Memory (`bench/notes_quality.py`): "
        "items repeating another item (under another marker, speaker prefix or echo) and items "
        "outside their section (an error, fix or correction outside Errors & Corrections, a "
        "follow-up outside Open Issues, small talk, a file entry naming no file).",
        "",
        REALMODEL_CAPTURE_BEGIN,
        *_table(CAPTURE_HEADER, capture_rows(runs)),
        "",
        *notes_quality_table(runs),
        REALMODEL_CAPTURE_END,
        "",
        *notes_examples(real.memory),
    ]
    path = out / "REALMODEL.md"
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


def notes_quality_table(runs: list[Any]) -> list[str]:
    """One row per run: its final Working Memory's items, duplicates and misplaced items."""
    rows = []
    for run in runs:
        counts = note_counts(run.memory)
        rows.append(
            [
                run.kind,
                run.behaviour,
                f"{counts.items}",
                f"{counts.duplicates}",
                f"{counts.misplaced}",
            ]
        )
    header = ["session", "summariser", "items (kept sections)", "duplicates", "misplaced"]
    return _table(header, rows)


def notes_examples(document: str) -> list[str]:
    """The real writer's flagged items, quoted (the generated session holds no private data)."""
    counts = note_counts(document)
    if not counts.examples:
        return []
    return [
        "The real writer's flagged items (at most the first few):",
        "",
        *[f"- {why} in *{section}*: `{item[:160]}`" for why, section, item in counts.examples],
        "",
    ]
