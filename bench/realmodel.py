"""``python -m bench --real-model``: the "real small model" row.

A short generated coding session played through wm_langgraph (``create_agent`` +
``WorkingMemoryMiddleware``) with a real model as the Working Memory writer, reached through
ChatOpenAI at ``OPENAI_BASE_URL`` (for example the llama.cpp server that
``python scripts/realmodel_server.py run -- python -m bench --real-model`` starts), next to the
scripted summarisers on the same session, scored exactly as the survival table (the needles in
what the agent's model receives). The section is written into RESULTS.md between markers, so a
full ``python -m bench`` run keeps it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.data import generate_coding_session
from bench.measure import kinds_present
from bench.report import REAL_MODEL_BEGIN, REAL_MODEL_END, _survival_rows, _table
from bench.run import run_one
from bench.systems import Tuning

TURNS = 16
TUNING = Tuning(chunk_tokens=1_500, keep_messages=6, token_budget=80_000)
SCRIPTED = ("faithful", "sloppy")
MAX_TOKENS = 1024
TIMEOUT_S = 600.0


def _writer() -> object:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=os.environ.get("WM_LANGGRAPH_MODEL") or "local-model",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY") or "sk-local-no-key-needed",
        temperature=0,
        max_tokens=MAX_TOKENS,
        timeout=TIMEOUT_S,
        max_retries=0,
    )


def run_real_model(out: Path, *, seed: int = 7) -> int:
    """Run the row and write it into ``out/RESULTS.md``; 2 when no server is configured."""
    if not os.environ.get("OPENAI_BASE_URL"):
        print("python -m bench --real-model needs OPENAI_BASE_URL (an OpenAI-compatible server)")
        return 2
    session = generate_coding_session(seed, TURNS)
    label = f"real small model ({os.environ.get('WM_LANGGRAPH_MODEL') or 'local-model'})"
    started = time.perf_counter()
    real = run_one("wm_langgraph", session, label, TUNING, model=_writer())
    seconds = time.perf_counter() - started
    runs = [real] + [run_one("wm_langgraph", session, b, TUNING) for b in SCRIPTED]
    kinds = kinds_present([r.final for r in runs])
    at = max(1, real.compactions)
    header = ["session", "summariser", "system", "compactions", "overall", "summary-only"]
    header += [*kinds, "final", "stale"]
    lines = [
        REAL_MODEL_BEGIN,
        "## Real small model (short coding session)",
        "",
        f"Command: `python scripts/realmodel_server.py run -- python -m bench --real-model "
        f"--seed {seed}`. A {TURNS}-turn coding session (seed {seed}), wm_langgraph with a "
        f"compaction every {TUNING.chunk_tokens:,} pending tokens (keep {TUNING.keep_messages}); "
        f"the writer is the model at OPENAI_BASE_URL (temperature 0, max_tokens {MAX_TOKENS}), "
        f"the other rows the scripted summarisers on the same session. Columns as in the "
        f"survival table, measured after compaction {at}. The real row took {seconds:.0f} s "
        f"({real.compactions} compactions, errors: {len(real.errors)}).",
        "",
        *_table(header, _survival_rows(runs, kinds, at)),
        "",
        REAL_MODEL_END,
    ]
    path = out / "RESULTS.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if REAL_MODEL_BEGIN in text and REAL_MODEL_END in text:
        before, rest = text.split(REAL_MODEL_BEGIN, 1)
        after = rest.split(REAL_MODEL_END, 1)[1]
        text = before + "\n".join(lines) + after
    else:
        text = text.rstrip() + "\n\n" + "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")
    print("\n".join(lines))
    return 0
