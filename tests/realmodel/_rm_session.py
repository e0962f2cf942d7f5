"""A short scripted coding session with planted facts, and a recorder of the writer's calls.

The agent's own model is scripted (it replays the session's assistant messages, tool calls
included); the tools answer from the script too. The Working Memory writer is the real model.
:class:`CallRecorder` is a LangChain callback handler on the writer: for every call it keeps
which step it was (``wm.create`` / ``wm.update``), latency, prompt and completion tokens, the
finish reason, and whether an update call came back as a valid ``update_working_memory`` call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import LLMResult
from langchain_core.tools import tool

from wm_langgraph.document import SECTIONS
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME

__all__ = [
    "ERROR",
    "FACTS",
    "PATHS",
    "SESSION",
    "TODO",
    "CallRecord",
    "CallRecorder",
    "session_messages",
    "session_tools",
]

ERROR = "AssertionError: expected '42.50', got '42.5'"
TODO = "add a test for negative totals"
PATHS = ("src/orders/api.py", "tests/test_orders.py", "src/orders/money.py", "config/settings.toml")
# Planted facts: each must be findable (case-insensitively) in the final WM to count as kept.
FACTS = ("FastAPI 0.110", "Python 3.11", "Decimal", "ROUND_HALF_UP", "format_total", "EUR")

_API = """from fastapi import FastAPI

app = FastAPI()


def format_total(total: float) -> str:
    return str(round(total, 2))
"""

_FAILED = f"""============================= test session starts ==============================
collected 3 items

tests/test_orders.py ..F                                                  [100%]

=================================== FAILURES ===================================
_________________________________ test_total __________________________________
    def test_total():
>       assert format_total(42.5) == "42.50"
E       {ERROR}

tests/test_orders.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_orders.py::test_total - {ERROR}
========================= 1 failed, 2 passed in 0.31s ==========================
"""

# One turn = the user's message, then the assistant's messages with the tool results between.
SESSION: list[dict[str, Any]] = [
    {
        "user": "The orders service (FastAPI 0.110, Python 3.11) prints totals like 42.5 but "
        "invoices need 42.50. Please fix it; the code is in src/orders/api.py.",
        "steps": [
            ("read_file", {"path": "src/orders/api.py"}, _API),
            ("run_tests", {"path": "tests/test_orders.py"}, _FAILED),
        ],
        "answer": f"test_total fails with {ERROR}: format_total rounds a float and drops the "
        "trailing zero. I will move the money code to src/orders/money.py.",
    },
    {
        "user": "Use Decimal with ROUND_HALF_UP for money, never float, and keep the public "
        "name format_total.",
        "steps": [
            (
                "edit_file",
                {"path": "src/orders/money.py", "patch": "+def format_total(total: Decimal)"},
                "edited src/orders/money.py (+14 -0)",
            ),
            ("run_tests", {"path": "tests/test_orders.py"}, "3 passed in 0.28s"),
        ],
        "answer": f"All 3 tests pass: format_total now quantizes a Decimal with ROUND_HALF_UP. "
        f"TODO: {TODO}.",
    },
    {
        "user": "The currency is EUR; it is set in config/settings.toml.",
        "steps": [
            ("read_file", {"path": "config/settings.toml"}, '[invoice]\ncurrency = "EUR"\n'),
        ],
        "answer": "Confirmed: config/settings.toml sets currency = EUR. Still open: the "
        "negative totals test.",
    },
]


def session_messages() -> list[list[BaseMessage]]:
    """Per turn: the user message, then every assistant and tool message, in order."""
    turns: list[list[BaseMessage]] = []
    for number, turn in enumerate(SESSION, start=1):
        messages: list[BaseMessage] = [HumanMessage(id=f"u{number}", content=turn["user"])]
        for index, (name, args, result) in enumerate(turn["steps"], start=1):
            call_id = f"call_{number}_{index}"
            messages.append(
                AIMessage(
                    id=f"a{number}_{index}",
                    content="",
                    tool_calls=[{"id": call_id, "name": name, "args": args, "type": "tool_call"}],
                )
            )
            messages.append(ToolMessage(content=result, tool_call_id=call_id, name=name))
        messages.append(AIMessage(id=f"a{number}", content=turn["answer"]))
        turns.append(messages)
    return turns


def session_tools() -> list[Any]:
    """The three tools of the session, answering with the scripted results in order."""
    results: dict[str, list[str]] = {}
    for turn in SESSION:
        for name, _, result in turn["steps"]:
            results.setdefault(name, []).append(result)

    def answer(name: str) -> str:
        return results[name].pop(0)

    @tool
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return answer("read_file")

    @tool
    def run_tests(path: str) -> str:
        """Run pytest on a test file."""
        return answer("run_tests")

    @tool
    def edit_file(path: str, patch: str) -> str:
        """Apply a patch to a file."""
        return answer("edit_file")

    return [read_file, run_tests, edit_file]


@dataclass
class CallRecord:
    """One writer call."""

    step: str
    started: float
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    tool_call: bool = False
    valid_tool_call: bool = False
    error: str | None = None
    reply_excerpt: str = ""


def _valid_update_args(args: Any) -> bool:
    """A well-formed update call: a ``sections`` object of the seven names, each with a known op
    and the field that op needs (``content`` for UPDATE, ``items`` for APPEND)."""
    sections = args.get("sections") if isinstance(args, dict) else None
    if not isinstance(sections, dict) or set(sections) != set(SECTIONS):
        return False
    for value in sections.values():
        op = value.get("op") if isinstance(value, dict) else None
        if op not in ("KEEP", "UPDATE", "APPEND"):
            return False
        if op == "UPDATE" and not isinstance(value.get("content"), str):
            return False
        if op == "APPEND" and not isinstance(value.get("items"), list):
            return False
    return True


@dataclass
class CallRecorder(BaseCallbackHandler):
    """Records every call of the model it is attached to (see the module docstring)."""

    calls: list[CallRecord] = field(default_factory=list)
    _open: dict[UUID, CallRecord] = field(default_factory=dict)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        step = name if name in ("wm.create", "wm.update") else ""
        if not step:
            step = "wm.update" if params.get("tools") else "wm.create"
        record = CallRecord(step=step, started=time.monotonic())
        self._open[run_id] = record
        self.calls.append(record)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._open.pop(run_id, None)
        if record is None:
            return
        record.latency_s = round(time.monotonic() - record.started, 2)
        generation = response.generations[0][0] if response.generations else None
        message = getattr(generation, "message", None)
        if isinstance(message, AIMessage):
            usage = message.usage_metadata or {}
            record.prompt_tokens = usage.get("input_tokens")
            record.completion_tokens = usage.get("output_tokens")
            record.finish_reason = (message.response_metadata or {}).get("finish_reason")
            calls = [c for c in message.tool_calls if c.get("name") == UPDATE_TOOL_NAME]
            record.tool_call = bool(calls or message.invalid_tool_calls)
            record.valid_tool_call = bool(calls) and _valid_update_args(calls[0].get("args"))
            raw = str(calls[0].get("args")) if calls else message.text
            record.reply_excerpt = raw[:600]

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._open.pop(run_id, None)
        if record is not None:
            record.latency_s = round(time.monotonic() - record.started, 2)
            record.error = repr(error)[:300]
