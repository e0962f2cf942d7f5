"""Engine measurements (not a test; no assertions on time).

    python -m tests.engine.measure_engine

1. after_turn cost per turn (2 new messages, no commit) at 100 and 10,000 live messages;
2. commit prompt size vs. prior WM + delta over a long session;
3. assembled context size vs. the budget, every turn.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.engine._support import agent_model, build_agent
from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemory, WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.document import count_tokens


def _msgs(start: int, n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(start, start + n):
        out.append(
            HumanMessage(f"question {i} about module_{i}.py and port {5000 + i}", id=f"h{i}")
        )
        out.append(AIMessage(f"answer {i}: done, see module_{i}.py", id=f"a{i}"))
    return out


def after_turn_cost(live: int, repeats: int = 200) -> tuple[float, float]:
    """Median and p95 ms of one after_turn that accounts 2 new messages."""
    wm = WorkingMemory(
        OfflineWorkingMemoryModel(),
        config=WorkingMemoryConfig(token_budget=100_000_000),
        store=InMemoryStore(),
    )
    cfg = {"configurable": {"thread_id": f"cost-{live}"}}
    messages = _msgs(0, live // 2)
    meta = wm.after_turn({"messages": messages}, cfg)["working_memory"]
    times = []
    for r in range(repeats):
        messages = [*messages, *_msgs(live + 2 * r, 1)]
        state = {"messages": messages, "working_memory": meta}
        t0 = time.perf_counter()
        meta = wm.after_turn(state, cfg)["working_memory"]
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)]


class _Prompts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.sizes: list[int] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        if "wm_langgraph" in (kwargs.get("tags") or []):
            self.sizes.append(sum(count_tokens(m.text) for batch in messages for m in batch))


def session(turns: int = 300, budget: int = 16_000) -> None:
    """A long session: WM prompt sizes per commit and assembled context sizes per turn."""
    config = WorkingMemoryConfig(token_budget=budget, background=False)
    wm = WorkingMemory(OfflineWorkingMemoryModel(), config=config, store=InMemoryStore())
    graph = build_agent(wm, agent_model(tool_every=5, parallel=2), checkpointer=InMemorySaver())
    prompts = _Prompts()
    cfg: Any = {"configurable": {"thread_id": "measure"}, "callbacks": [prompts]}
    usable = compute_budgets(budget, config.reserve_tokens, config.archive_memory_tokens).usable
    assembled = []
    for i in range(1, turns + 1):
        text = f"turn {i}: FACT-{i:03d} the service svc-{i} listens on port {6000 + i}. "
        out = graph.invoke({"messages": [HumanMessage(text + "context " * 60)]}, cfg)
        assembled.append(wm.count_tokens(out["llm_input_messages"]))
    archives = wm.list_archives(cfg)
    total_archived = sum(a.token_count for a in archives)
    print(f"\n== session: {turns} turns, token_budget {budget}, usable {usable}")
    print(f"archives: {len(archives)}, archived tokens in total: {total_archived}")
    print("commit | prior WM tok | delta tok | prompt tok | prompt - (WM + delta)")
    for n, (record, size) in enumerate(zip(archives, prompts.sizes, strict=False), start=1):
        metrics = record.metadata.get("metrics", {})
        wm_tok, delta = metrics.get("prior_wm_tokens", 0), metrics.get("delta_tokens", 0)
        print(f"{n:6d} | {wm_tok:12d} | {delta:9d} | {size:10d} | {size - wm_tok - delta:6d}")
    print(
        f"assembled context: max {max(assembled)}, mean {statistics.mean(assembled):.0f}, "
        f"budget usable {usable} (token_budget {budget}); over budget: "
        f"{sum(a > usable for a in assembled)} of {len(assembled)} turns"
    )


def main() -> None:
    """Print all measurements."""
    for live in (100, 10_000):
        median, p95 = after_turn_cost(live)
        print(f"after_turn, {live} live messages, 2 new: median {median:.3f} ms, p95 {p95:.3f} ms")
    session()


if __name__ == "__main__":
    main()
