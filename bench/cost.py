"""What each system costs: the input tokens of every agent-model call and the writer's tokens
(prompt and output) per turn, for the bench sessions (bench/play.py) and LoCoMo
(bench/locomo/run.py).

Every token here is counted with the memory's own counter for every system
(:func:`wm_langgraph.messages.message_tokens`: a message's text without a standard role label
plus 4, tool calls with their names, ids and JSON arguments, 765 per image), so the systems are
compared on one scale. A writer call's prompt also counts the tools bound to it (their JSON
schema: a provider is sent them) and its output the reply's text and tool-call arguments.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.messages import message_tokens

__all__ = [
    "LABELS",
    "WRITER_SYSTEMS",
    "CostRow",
    "WriterMeter",
    "cost_lines",
    "equal_while_it_fits",
    "input_tokens",
    "metered",
    "pool",
]

WRITER_SYSTEMS = frozenset(
    {"wm_langgraph", "wm_no_guards", "wm_langgraph_minilm", "langchain", "summarization", "langmem"}
)
"""The systems that call a writer (their memory's summariser); the others have none."""

LABELS = {
    "plain": "no memory (full)",
    "full": "no memory (full)",
    "trimming": "trimming",
    "langchain": "SummarizationMiddleware",
    "summarization": "SummarizationMiddleware",
    "langmem": "LangMem",
    "wm_langgraph": "wm_langgraph",
    "wm_langgraph_minilm": "wm_langgraph (MiniLM index)",
}
"""How the cost tables name each system (the bench sessions' and LoCoMo's names)."""


def input_tokens(messages: Sequence[BaseMessage]) -> int:
    """Tokens of one model input, by the memory's counter."""
    return sum(message_tokens(m) for m in messages)


class WriterMeter(BaseCallbackHandler):
    """Counts a writer model's calls, prompt tokens and output tokens (a callback handler:
    attach it with :func:`metered`). Thread-safe."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.output_tokens = 0
        self._lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        """One call: its messages, and the tools bound to it (their schema is sent too)."""
        tokens = sum(input_tokens(batch) for batch in messages)
        params = kwargs.get("invocation_params") or {}
        tools = params.get("tools") if isinstance(params, dict) else None
        if tools:
            tokens += count_tokens(json.dumps(tools, ensure_ascii=False, default=str))
        with self._lock:
            self.calls += 1
            self.prompt_tokens += tokens

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """The reply: its text and tool calls."""
        tokens = sum(
            message_tokens(g.message) if isinstance(g, ChatGeneration) else count_tokens(g.text)
            for batch in response.generations
            for g in batch
        )
        with self._lock:
            self.output_tokens += tokens

    def figures(self) -> dict[str, int]:
        """``{"calls", "prompt", "output"}``: what the meter counted so far."""
        with self._lock:
            return {
                "calls": self.calls,
                "prompt": self.prompt_tokens,
                "output": self.output_tokens,
            }


def metered(model: Any, meter: WriterMeter) -> Any:
    """``model`` with ``meter`` among its callbacks (the same object: a chat model's own
    callbacks run on every call, whatever wraps or binds it later)."""
    current = list(getattr(model, "callbacks", None) or [])
    model.callbacks = [*current, meter]
    return model


@dataclass(frozen=True)
class CostRow:
    """One system (at one budget) over some runs.

    Attributes:
        label: The system (and budget) as the table shows it.
        system: The system's name (``WRITER_SYSTEMS`` decides whether writer columns apply).
        calls: Agent-model calls.
        tokens: Input tokens of those calls, summed.
        turns: Turns played (user messages sent).
        writer: The writer's ``{"calls", "prompt", "output"}`` summed over the runs.
        runs: How many runs the row pools.
    """

    label: str
    system: str
    calls: int
    tokens: int
    turns: int
    writer: dict[str, int]
    runs: int = 1

    @property
    def mean(self) -> float:
        """Mean input tokens per agent call (0 without a call)."""
        return self.tokens / self.calls if self.calls else 0.0


def pool(label: str, system: str, runs: Iterable[dict[str, Any]]) -> CostRow:
    """A :class:`CostRow` from runs given as ``{"tokens": [per call], "turns": n, "writer":
    {...}}`` dicts."""
    runs = list(runs)
    writer = {"calls": 0, "prompt": 0, "output": 0}
    for run in runs:
        for key in writer:
            writer[key] += int((run.get("writer") or {}).get(key, 0))
    return CostRow(
        label=label,
        system=system,
        calls=sum(len(r["tokens"]) for r in runs),
        tokens=sum(sum(r["tokens"]) for r in runs),
        turns=sum(int(r["turns"]) for r in runs),
        writer=writer,
        runs=len(runs),
    )


def cost_lines(rows: Sequence[CostRow]) -> list[str]:
    """The cost table (Markdown lines, a blank line after it)."""
    header = [
        "system",
        "agent calls",
        "mean input / call",
        "total input",
        "writer calls / turn",
        "writer prompt / turn",
        "writer output / turn",
        "total / turn (input + writer)",
    ]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    for row in rows:
        mean = row.mean
        turns = max(1, row.turns)
        has_writer = row.system in WRITER_SYSTEMS
        writer = row.writer
        spent = row.tokens + (writer["prompt"] + writer["output"] if has_writer else 0)
        cells = [
            row.label,
            f"{row.calls:,}",
            f"{mean:,.0f}",
            f"{row.tokens:,}",
            f"{writer['calls'] / turns:.2f}" if has_writer else "-",
            f"{writer['prompt'] / turns:,.0f}" if has_writer else "-",
            f"{writer['output'] / turns:,.0f}" if has_writer else "-",
            f"{spent / turns:,.0f}",
        ]
        out.append("| " + " | ".join(cells) + " |")
    return [*out, ""]


def equal_while_it_fits(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]], usable: int
) -> tuple[int, int]:
    """Over pairs of runs of one conversation (a system's input tokens per call, no memory's
    per call: the same calls), the calls whose whole history (no memory's input) fits
    ``usable``: how many of them the system sent exactly as many tokens as no memory, and how
    many there are. Runs of different lengths are skipped."""
    same = fitting = 0
    for mine, full in pairs:
        if len(mine) != len(full):
            continue
        for a, b in zip(mine, full, strict=True):
            if b <= usable:
                fitting += 1
                same += a == b
    return same, fitting
