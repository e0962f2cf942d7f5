"""A deliberately careless Working Memory writer for ``wm-langgraph demo --careless``.

Private helper of the demo. :class:`CarelessWorkingMemoryModel` is a **fault-injecting
wrapper for demonstration**: it asks a careful model (by default the offline heuristic
summariser) for its ``update_working_memory`` call and then damages that call the way real
models do, so that the demo can show what the per-section guards are for:

- the Session Title is replaced by an unrelated title (some calls, seeded);
- APPEND (and UPDATE) ops of Key Facts & Decisions, Files & Context and Open Issues become an
  UPDATE that rewrites the section and silently drops about 30% of its old bullets;
- Errors & Corrections is always rewritten with an UPDATE that drops old items;
- every ``truncate_every``-th update call returns its arguments as truncated JSON (cut off
  inside the last section, as a max-tokens stop would), reported as an invalid tool call.

Current State and Task & Goals are passed through untouched (no guard covers them). Create
calls (no tool bound) are passed through unchanged. The damage is deterministic: the random
choices come from ``random.Random`` seeded with ``seed`` and the update call's number.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, InvalidToolCall, ToolCall
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, parse_update_arguments
from wm_langgraph.document.sections import SECTIONS, item_key, parse_working_memory, section_items
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel
from wm_langgraph.writer.offline.tools import asks_for_update
from wm_langgraph.writer.prompts import extract_block

__all__ = ["CarelessWorkingMemoryModel"]

_TAGS_RE = re.compile(r"^(?:\[[^\]\n]{0,40}\]\s*)+")
_TITLE = "Session Title"
_LISTS = ("Key Facts & Decisions", "Files & Context", "Open Issues")
_ERRORS = "Errors & Corrections"
_UNRELATED_TITLES = (
    "Refactor the billing module",
    "Debug a flaky CI pipeline",
    "Migrate the user database to PostgreSQL 16",
    "Write onboarding documentation for new hires",
    "Tune the search index for faster queries",
)


def _prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n\n".join(m.text for m in messages)


class CarelessWorkingMemoryModel(ScriptedChatModel):
    """A fault-injecting wrapper (for demonstration) that damages Working Memory updates.

    Wraps a careful Working Memory model and, on every ``update_working_memory`` call, turns
    its ops into the mistakes real models make: an unrelated Session Title, section rewrites
    that silently drop about ``drop_ratio`` of the old bullets (Key Facts & Decisions, Files &
    Context, Open Issues, Errors & Corrections), and now and then truncated JSON arguments.
    Create calls pass through unchanged. Deterministic: the same ``seed`` and the same sequence
    of prompts give the same damage. Not a model to use for real work: it exists so that
    ``wm-langgraph demo --careless`` can show the guards repairing what it breaks.

    A :class:`~wm_langgraph.testing.ScriptedChatModel` whose script asks ``inner`` (with the
    bound tools) and damages its answer; it keeps the ids of the inner model's reply.

    Attributes:
        inner: The careful model whose update calls are damaged (default: the offline
            heuristic summariser).
        seed: Seed of the random choices (which title, which bullets).
        drop_ratio: Share of a section's old bullets a rewrite drops (at least one).
        title_drift_rate: Probability that an update call replaces the title.
        truncate_every: Every this-many-th update call returns truncated JSON arguments
            (0: never).

    Example:
        >>> model = CarelessWorkingMemoryModel(seed=3)
        >>> model.inner.__class__.__name__
        'OfflineWorkingMemoryModel'
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    inner: BaseChatModel = Field(default_factory=OfflineWorkingMemoryModel)
    seed: int = 7
    drop_ratio: float = Field(default=0.3, gt=0.0, lt=1.0)
    title_drift_rate: float = Field(default=0.5, ge=0.0, le=1.0)
    truncate_every: int = Field(default=3, ge=0)
    keep_ids: bool = True

    _update_calls: int = PrivateAttr(default=0)
    _notes: deque[list[str]] = PrivateAttr(default_factory=deque)
    _cut_off: list[str] = PrivateAttr(default_factory=list)
    _damage_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _careless_script(self) -> Self:
        """Answer every call by asking the inner model and damaging its update calls."""
        if self.respond is None:
            self.respond = self._careless_reply
        return self

    @property
    def _llm_type(self) -> str:
        return "wm-careless-fault-injecting-wrapper"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self._llm_type,
            "seed": self.seed,
            "drop_ratio": self.drop_ratio,
            "title_drift_rate": self.title_drift_rate,
            "truncate_every": self.truncate_every,
        }

    @property
    def update_calls(self) -> int:
        """Number of update calls answered (and damaged) so far."""
        with self._damage_lock:
            return self._update_calls

    @property
    def cut_off(self) -> list[str]:
        """Per truncated update call, in order: the text of the ops it made unreadable."""
        with self._damage_lock:
            return list(self._cut_off)

    def pop_damage(self) -> list[str]:
        """What the oldest not yet reported update call damaged (``[]`` when none is left)."""
        with self._damage_lock:
            return self._notes.popleft() if self._notes else []

    def _careless_reply(
        self, messages: list[BaseMessage], tools: list[dict[str, Any]] | None, tool_choice: Any
    ) -> AIMessage:
        """The inner model's reply; with ``update_working_memory`` bound, a damaged one."""
        config: RunnableConfig = {"run_name": f"careless.{self.inner.get_name()}"}
        if not tools:
            return self.inner.invoke(messages, config)
        reply = self.inner.bind_tools(tools, tool_choice=tool_choice).invoke(messages, config)
        if asks_for_update(tools, tool_choice) and isinstance(reply, AIMessage):
            reply = self._damage(reply, _prompt_text(messages))
        return reply

    def _damage(self, reply: AIMessage, prompt: str) -> AIMessage:
        call = next((c for c in reply.tool_calls if c["name"] == UPDATE_TOOL_NAME), None)
        if call is None:
            return reply
        with self._damage_lock:
            self._update_calls += 1
            number = self._update_calls
        rng = random.Random(self.seed * 1_000_003 + number)
        old = parse_working_memory(extract_block(prompt, "working_memory") or "")
        raw = call["args"].get("sections", call["args"])
        ops: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        notes: list[str] = []
        if section_items(old[_TITLE]) and rng.random() < self.title_drift_rate:
            title = rng.choice(_UNRELATED_TITLES)
            ops[_TITLE] = {"op": "UPDATE", "content": title}
            notes.append(f"title rewritten to {title!r}")
        for name in (n for n in SECTIONS if n in (*_LISTS, _ERRORS)):
            note = self._rewrite(name, old[name], ops, rng)
            if note:
                notes.append(note)
        args = {"sections": {name: ops[name] for name in SECTIONS if name in ops}}
        meta = {**reply.response_metadata, "model_name": self._llm_type}
        if not (self.truncate_every and number % self.truncate_every == 0):
            self._record(notes)
            damaged = ToolCall(name=UPDATE_TOOL_NAME, args=args, id=call["id"], type="tool_call")
            return AIMessage(content="", tool_calls=[damaged], response_metadata=meta)
        full = json.dumps(args, ensure_ascii=False)
        text = _truncate(full, rng)
        recovered = parse_update_arguments(text)
        lost = {k: v for k, v in args["sections"].items() if recovered.get(k) != v}
        notes.append(
            f"arguments truncated: {len(text):,} of {len(full):,} characters of JSON"
            + (f", unreadable: {', '.join(lost)}" if lost else "")
        )
        self._record(notes, cut_off="\n".join(_op_text(op) for op in lost.values()))
        bad = InvalidToolCall(
            name=UPDATE_TOOL_NAME,
            args=text,
            id=call["id"],
            error="truncated JSON arguments (fault injected for the demo)",
            type="invalid_tool_call",
        )
        return AIMessage(content="", invalid_tool_calls=[bad], response_metadata=meta)

    def _record(self, notes: list[str], *, cut_off: str | None = None) -> None:
        with self._damage_lock:
            self._notes.append(notes)
            if cut_off is not None:
                self._cut_off.append(cut_off)

    def _rewrite(
        self, name: str, old_body: str, ops: dict[str, Any], rng: random.Random
    ) -> str | None:
        """Turn the section's op into a lossy UPDATE; return what was done (None: untouched)."""
        old_items = section_items(old_body)
        op = ops.get(name)
        kind = str(op.get("op", "")).upper() if isinstance(op, dict) else "KEEP"
        if not old_items or (kind == "KEEP" and name != _ERRORS):
            return None
        count = max(1, round(len(old_items) * self.drop_ratio))
        lost = [_bare(old_items[i]) for i in rng.sample(range(len(old_items)), count)]
        if kind == "UPDATE" and isinstance(op, dict):
            base = section_items(str(op.get("content", "")))
        else:
            base = list(old_items)
        new: list[str] = []
        if kind == "APPEND" and isinstance(op, dict):
            new = [str(item) for item in op.get("items") or [] if str(item).strip()]
        # An item that still carries a dropped old bullet (e.g. "[resolved] <old item>") goes too.
        kept = [item for item in base if not any(key in _bare(item) for key in lost)]
        content = "\n".join(f"- {item}" for item in [*kept, *new])
        ops[name] = {"op": "UPDATE", "content": content}
        return f"{name}: {kind} -> lossy UPDATE (drops {len(lost)} of {len(old_items)} old bullets)"


def _op_text(op: Any) -> str:
    """The text an op carries: its UPDATE content or its APPEND items, one per line."""
    if not isinstance(op, dict):
        return ""
    items = op.get("items")
    if isinstance(items, list):
        return "\n".join(str(item) for item in items)
    return str(op.get("content") or "")


def _bare(item: str) -> str:
    """Comparison key of an item without its leading ``[tags]`` (``[new]``, ``[resolved]``…)."""
    return item_key(_TAGS_RE.sub("", item.strip()))


def _truncate(text: str, rng: random.Random) -> str:
    """Cut ``text`` inside its last section's op, as a max-tokens stop would."""
    start = text.rfind('"op"')
    start = start if start > 0 else len(text) // 2
    end = max(start + 1, len(text) - 3)
    return text[: rng.randint(start, end)]
