"""Scripted summariser models, the same for every system compared.

One script, :class:`ScriptedSummariser`, answers for a real LangChain chat model
(:func:`make_model`: a ``wm_langgraph.testing.ScriptedChatModel``, ``bind_tools`` included). It
recognises which system is asking from the prompt and the bound tools it receives and answers in
the representation that system asks for:

* wm_langgraph create call (plain completion, ``<prior_summary>`` / ``<messages>`` blocks):
  a whole seven-section Working Memory document;
* wm_langgraph update call (``update_working_memory`` tool bound): one tool call with a KEEP /
  UPDATE / APPEND decision for each section;
* LangChain ``SummarizationMiddleware`` (its extraction prompt): a free-text summary under the
  four headings that prompt asks for;
* LangMem ``SummarizationNode`` (messages + "Create a summary…" / "Extend this summary…"): a
  free-text running summary.

Every answer is produced by one information process, whatever the representation:

1. *read* the prior memory (WM bullets, or summary lines) into items per topic;
2. *carry forward*: each prior item except the title is dropped with probability
   ``carry_loss`` (an item is a WM bullet or a summary line — the same unit);
3. *capture*: every catalogue item whose source text occurs in the new messages is noted,
   except that each is missed with probability ``capture_miss``; a corrected fact replaces the
   old line and adds a "Superseded: …" line, a resolved TODO replaces the open one;
4. *write* it back: wm_langgraph gets protocol ops (a careful model APPENDs and KEEPs; a lossy
   model rewrites every section with UPDATE, which is where the loss shows), the peers get the
   full rewritten summary text.

Misbehaviours are layered on top (see :data:`BEHAVIOURS`).
"""

from __future__ import annotations

import html
import json
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from bench.data import ERRORS, FACTS, FILES, GOALS, OPEN, STATE, TITLE, Item
from wm_langgraph.document.sections import (
    SECTIONS,
    parse_working_memory,
    render_working_memory,
    section_items,
)
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.testing import ScriptedChatModel

__all__ = [
    "BEHAVIOURS",
    "Behaviour",
    "CallRecord",
    "ScriptedSummariser",
    "make_model",
    "make_summariser",
    "records_of",
]

UPDATE_TOOL = "update_working_memory"
CAPTURE_TOOL = "capture_working_memory"
_CAPTURE_LINE = re.compile(r'^(?P<n>\d+)\. \[(?P<kind>[^,\]]+), from [^\]]*\] "(?P<text>.*)"$')
_CAPTURE_SECTIONS = frozenset({GOALS, FACTS, FILES, ERRORS, OPEN})


@dataclass(frozen=True)
class Behaviour:
    """How a scripted summariser behaves.

    Attributes:
        name: Label used in the results.
        carry_loss: Probability that an item carried forward is dropped on a rewrite.
        capture_miss: Probability that a new item is not noted at all.
        misbehaviour: ``None`` or one of "title", "update_not_append", "malformed", "empty",
            "raises".
        period: The misbehaviour strikes on every ``period``-th call ("title" and
            "update_not_append" strike on every call).
        bloat: Extra verbose, redundant lines added to the facts on every call; the model never
            consolidates when warned.
        follow_up: Whether the model answers the capture check's follow-up as it notes things;
            ``False``: it adds nothing there and dismisses nothing (it left the facts out
            silently, and stays silent when asked).
    """

    name: str
    carry_loss: float = 0.0
    capture_miss: float = 0.0
    misbehaviour: str | None = None
    period: int = 3
    bloat: int = 0
    follow_up: bool = True

    @property
    def rewrites(self) -> bool:
        """A lossy model rewrites every section (UPDATE) instead of appending."""
        return self.carry_loss > 0


FAITHFUL = Behaviour("faithful")
BEHAVIOURS: dict[str, Behaviour] = {
    "faithful": FAITHFUL,
    "drifting": Behaviour("drifting", carry_loss=0.30),
    "sloppy": Behaviour("sloppy", carry_loss=0.30, capture_miss=0.20),
    "title": replace(FAITHFUL, name="title", misbehaviour="title"),
    "update_not_append": replace(
        FAITHFUL, name="update_not_append", misbehaviour="update_not_append"
    ),
    "malformed": replace(FAITHFUL, name="malformed", misbehaviour="malformed"),
    "empty": replace(FAITHFUL, name="empty", misbehaviour="empty"),
    "raises": replace(FAITHFUL, name="raises", misbehaviour="raises"),
    "bloating": replace(FAITHFUL, name="bloating", bloat=8),
    "omitting": Behaviour("omitting", capture_miss=0.30, follow_up=False),
}
"""Every behaviour the benchmark runs, by name."""


@dataclass
class CallRecord:
    """One summariser call: what kind, and its sizes in tokens."""

    kind: str  # "wm_create" | "wm_update" | "langchain" | "langmem"
    prompt_tokens: int
    prior_tokens: int
    new_tokens: int
    reply_tokens: int
    outcome: str = "ok"


# ------------------------------------------------------------------------------------------
# peer summary text: labels <-> topics

_LANGMEM_LABELS = {
    TITLE: "Session:",
    STATE: "Current state:",
    GOALS: "Goals:",
    FACTS: "Key facts and decisions:",
    FILES: "Files:",
    ERRORS: "Errors and corrections:",
    OPEN: "Open items:",
}
_LANGCHAIN_LAYOUT = (
    ("## SESSION INTENT", (TITLE, GOALS)),
    ("## SUMMARY", (STATE, FACTS, ERRORS)),
    ("## ARTIFACTS", (FILES,)),
    ("## NEXT STEPS", (OPEN,)),
)
_LABEL_TO_SECTION = {label.lower(): sec for sec, label in _LANGMEM_LABELS.items()}
_LABEL_TO_SECTION.update(
    {"## session intent": TITLE, "## summary": FACTS, "## artifacts": FILES, "## next steps": OPEN}
)


def render_summary(memory: dict[str, list[str]], style: str) -> str:
    """The peers' free-text representation of the same items."""
    out: list[str] = []
    if style == "langchain":
        for heading, sections in _LANGCHAIN_LAYOUT:
            out.append(heading)
            for sec in sections:
                out.append(_LANGMEM_LABELS[sec])
                out.extend(f"- {line}" for line in memory.get(sec, []))
            out.append("")
    else:
        for sec in SECTIONS:
            out.append(_LANGMEM_LABELS[sec])
            out.extend(f"- {line}" for line in memory.get(sec, []))
    return "\n".join(out).strip()


def parse_summary(text: str) -> dict[str, list[str]]:
    """Read a peer summary back into items per topic (unknown lines go to the facts)."""
    memory: dict[str, list[str]] = {sec: [] for sec in SECTIONS}
    current = FACTS
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        sec = _LABEL_TO_SECTION.get(line.lower())
        if sec is not None:
            current = sec
            continue
        memory[current].append(line[2:] if line.startswith("- ") else line)
    return memory


def parse_wm(text: str) -> dict[str, list[str]]:
    """Read a Working Memory document into items per section."""
    return {sec: section_items(body) for sec, body in parse_working_memory(text).items()}


def _block(text: str, tag: str) -> str | None:
    """Content of the last ``<tag>…</tag>`` block of a prompt, or None."""
    start = text.rfind(f"<{tag}>")
    if start < 0:
        return None
    start += len(tag) + 2
    end = text.find(f"</{tag}>", start)
    return text[start:] if end < 0 else text[start:end]


def _message_text(message: BaseMessage) -> str:
    parts = [message.text]
    parts.extend(
        f"{call.get('name')}({json.dumps(call.get('args'), ensure_ascii=False)})"
        for call in getattr(message, "tool_calls", None) or []
    )
    return "\n".join(p for p in parts if p)


# ------------------------------------------------------------------------------------------
# the model


class ScriptedSummariser:
    """A deterministic scripted summariser (see the module docstring): the ``respond`` function
    of the summariser model, ``(messages, tools, tool_choice) -> AIMessage``.

    Attributes:
        catalogue: The session's items (bench.data.Item), in order.
        behaviour: The Behaviour.
        seed: Seed of the loss process.
    """

    def __init__(self, *, catalogue: Sequence[Item], behaviour: Behaviour, seed: int = 0) -> None:
        self.catalogue = list(catalogue)
        self.behaviour = behaviour
        self.seed = seed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._calls = 0
        self._records: list[CallRecord] = []
        self._by_id: dict[str, Item] = {it.id: it for it in self.catalogue}

    @property
    def records(self) -> list[CallRecord]:
        """Every call so far."""
        return list(self._records)

    def __call__(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> AIMessage:
        """Answer one call (``tools``: the bound tools in OpenAI format, or None)."""
        with self._lock:
            self._calls += 1
            return self._answer(messages, tools or [], self._calls)

    def _strikes(self, call: int, kind: str) -> bool:
        b = self.behaviour
        if b.misbehaviour != kind:
            return False
        if kind == "title":
            return call > 1  # the first call writes the real title; every later one rewrites it
        return kind == "update_not_append" or call % b.period == 0

    def _answer(self, messages: list[BaseMessage], tools: list[Any], call: int) -> AIMessage:
        prompt = "\n".join(m.text for m in messages)
        prompt_tokens = count_tokens(prompt)
        names = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict)}
        if CAPTURE_TOOL in names:
            record = CallRecord("wm_capture", prompt_tokens, 0, 0, 0)
            self._records.append(record)
            reply = self._wm_capture(prompt)
            record.reply_tokens = count_tokens(json.dumps([c["args"] for c in reply.tool_calls]))
            return reply
        if UPDATE_TOOL in names:
            kind = "wm_update"
            prior_text = _block(prompt, "working_memory") or ""
            new_text = _block(prompt, "messages") or prompt
            prior = parse_wm(prior_text)
        elif "Messages to summarize:" in prompt:
            kind = "langchain"
            body = html.unescape(prompt.rsplit("Messages to summarize:", 1)[-1])
            marker = "Here is a summary of the conversation to date:"
            prior_text = ""
            if marker in body:
                head, rest = body.split(marker, 1)
                prior_text, _, tail = rest.partition("</message>")
                new_text = head + tail
            else:
                new_text = body
            prior = parse_summary(prior_text)
        elif _block(prompt, "prior_summary") is not None:
            kind = "wm_create"
            prior_text = _block(prompt, "prior_summary") or ""
            prior_text = "" if prior_text.strip() == "(none)" else prior_text
            new_text = _block(prompt, "messages") or prompt
            prior = parse_wm(prior_text) if "## " in prior_text else parse_summary(prior_text)
        else:
            kind = "langmem"
            last = messages[-1].text if messages else ""
            m = re.search(
                r"summary of the conversation so far: (.*)\n\nExtend this summary", last, re.S
            )
            prior_text = m.group(1) if m else ""
            new_text = "\n".join(_message_text(msg) for msg in messages[:-1])
            prior = parse_summary(prior_text)
        record = CallRecord(
            kind, prompt_tokens, count_tokens(prior_text), count_tokens(new_text), 0
        )
        self._records.append(record)

        if self._strikes(call, "raises"):
            record.outcome = "raised"
            raise RuntimeError(f"scripted outage (call {call})")
        if self._strikes(call, "empty"):
            record.outcome = "empty"
            return AIMessage(content="")

        memory, added, replaced = self._fold(prior, new_text, call)
        if kind == "wm_update":
            reply = self._wm_update(prior, memory, added, replaced, prompt, call)
        else:
            if self._strikes(call, "update_not_append"):
                memory = _only_new(memory, added)
            if self._strikes(call, "title"):
                memory[TITLE] = [_stray_title(call)]
            if kind == "wm_create":
                text = render_working_memory({s: _bullets(memory[s]) for s in SECTIONS})
            else:
                text = render_summary(memory, kind)
            if self._strikes(call, "malformed"):
                record.outcome = "truncated"
                text = text[: int(len(text) * 0.6)]
            reply = AIMessage(content=text)
        record.reply_tokens = count_tokens(
            reply.text + json.dumps([c["args"] for c in reply.tool_calls])
        )
        return reply

    # -- the capture check's follow-up -------------------------------------------------------

    def _wm_capture(self, prompt: str) -> AIMessage:
        """Answer the capture follow-up as this model notes things: each listed statement that
        reveals a catalogue item is added as that item's bullet (still missed with probability
        ``capture_miss``: the same note-taker), every other one is dismissed."""
        block = _block(prompt, "capture_items") or ""
        entries: list[dict[str, Any]] = []
        for line in block.strip().splitlines() if self.behaviour.follow_up else ():
            match = _CAPTURE_LINE.match(line.strip())
            if match is None:
                continue
            number, statement = int(match.group("n")), match.group("text").rstrip(" …")
            item = next((it for it in self.catalogue if _reveals(it, statement)), None)
            if item is None or item.section not in _CAPTURE_SECTIONS:
                entries.append({"id": number, "action": "dismiss", "reason": "not worth keeping"})
                continue
            b = self.behaviour
            if b.capture_miss > 0 and self._rng.random() < b.capture_miss:
                continue  # overlooked again
            entries.append(
                {"id": number, "action": "add", "section": item.section, "text": item.text}
            )
        return AIMessage(
            content="",
            tool_calls=[{"name": CAPTURE_TOOL, "args": {"items": entries}, "id": "wm_capture"}],
        )

    # -- the information process -------------------------------------------------------------

    def _fold(
        self, prior: dict[str, list[str]], new_text: str, call: int
    ) -> tuple[dict[str, list[str]], dict[str, list[str]], set[str]]:
        """Carry forward (lossy), capture new items, apply corrections.

        Returns:
            (the full new memory, the items added per section, sections where a line was
            replaced or removed on purpose).
        """
        b = self.behaviour
        memory: dict[str, list[str]] = {}
        for sec in SECTIONS:
            lines = prior.get(sec, [])
            if sec == TITLE or b.carry_loss <= 0:
                memory[sec] = list(lines)
            else:
                memory[sec] = [ln for ln in lines if self._rng.random() >= b.carry_loss]
        added: dict[str, list[str]] = {sec: [] for sec in SECTIONS}
        replaced: set[str] = set()
        present = "\n".join(line for lines in memory.values() for line in lines)
        for item in self.catalogue:
            if item.source not in new_text:
                continue
            if b.capture_miss > 0 and self._rng.random() < b.capture_miss:
                continue
            if item.section == TITLE:
                if not memory[TITLE]:
                    memory[TITLE] = [item.text]
                    added[TITLE].append(item.text)
                continue
            if item.section == STATE:
                memory[STATE] = [item.text]
                added[STATE] = [item.text]
                replaced.add(STATE)
                continue
            if item.text in present:
                continue
            if item.replaces is not None:
                if item.superseded_note and item.superseded_note not in present:
                    memory[ERRORS].append(item.superseded_note)
                    added[ERRORS].append(item.superseded_note)
                old = self._by_id[item.replaces].text
                lines = memory[item.section]
                if any(old in ln for ln in lines):  # edit the old value in place
                    memory[item.section] = [ln.replace(old, item.text) for ln in lines]
                    replaced.add(item.section)
                    present += "\n" + item.text
                    continue
            memory[item.section].append(item.text)
            added[item.section].append(item.text)
            present += "\n" + item.text
        for k in range(b.bloat):
            line = (
                f"Observation {call}.{k}: the assistant re-read the recent messages and the "
                "configuration once more and found nothing new, noted here for completeness."
            )
            memory[FACTS].append(line)
            added[FACTS].append(line)
        return memory, added, replaced

    def _wm_update(
        self,
        prior: dict[str, list[str]],
        memory: dict[str, list[str]],
        added: dict[str, list[str]],
        replaced: set[str],
        prompt: str,
        call: int,
    ) -> AIMessage:
        b = self.behaviour
        warned = _warned_sections(prompt) if b.bloat == 0 else set()
        ops: dict[str, dict[str, Any]] = {}
        for sec in SECTIONS:
            lines, new = memory[sec], added[sec]
            if sec == TITLE:
                if self._strikes(call, "title"):
                    ops[sec] = {"op": "UPDATE", "content": _stray_title(call)}
                elif not prior[TITLE] and lines:
                    ops[sec] = {"op": "UPDATE", "content": lines[0]}
                else:
                    ops[sec] = {"op": "KEEP"}
            elif self._strikes(call, "update_not_append") and new and sec != STATE:
                ops[sec] = {"op": "UPDATE", "content": _bullets(new)}
            elif sec in warned:
                ops[sec] = {"op": "UPDATE", "content": _bullets(_consolidate(lines))}
            elif b.rewrites:
                if lines != prior[sec]:
                    ops[sec] = {"op": "UPDATE", "content": _bullets(lines)}
                else:
                    ops[sec] = {"op": "KEEP"}
            elif sec in replaced or (sec == GOALS and new):
                ops[sec] = {"op": "UPDATE", "content": _bullets(lines)}
            elif new:
                ops[sec] = {"op": "APPEND", "items": list(new)}
            else:
                ops[sec] = {"op": "KEEP"}
        args: dict[str, Any] = {"sections": ops}
        if self._strikes(call, "malformed"):
            self._records[-1].outcome = "malformed"
            return _malformed(args, call)
        return AIMessage(
            content="", tool_calls=[{"name": UPDATE_TOOL, "args": args, "id": f"wm_{call}"}]
        )


_STRAY_TITLES = (
    "Weekend grocery list",
    "Random thoughts about gardening",
    "Holiday photo captions",
    "Misc reminders for later",
)


def _stray_title(call: int) -> str:
    """An unrelated title (the 'rewrites the title' misbehaviour)."""
    return _STRAY_TITLES[call % len(_STRAY_TITLES)]


def _reveals(item: Item, statement: str) -> bool:
    """Whether a quoted statement is where ``item`` comes from (either holds the other)."""
    source, said = item.source.casefold(), statement.casefold()
    return len(said) >= 12 and (source in said or said in source)


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _only_new(memory: dict[str, list[str]], added: dict[str, list[str]]) -> dict[str, list[str]]:
    """The 'UPDATE where APPEND was due' failure in free text: the new part replaces the rest."""
    out = dict(memory)
    for sec in (FACTS, FILES, ERRORS, OPEN, GOALS):
        if added[sec]:
            out[sec] = list(added[sec])
    return out


_WARN_RE = re.compile("|".join(re.escape(s) for s in SECTIONS))


def _warned_sections(prompt: str) -> set[str]:
    block = _block(prompt, "section_size_warnings") or ""
    return set(_WARN_RE.findall(block))


def _consolidate(lines: list[str], per_line: int = 3) -> list[str]:
    """Merge bullets into fewer ones, keeping every word (what a careful model does when warned)."""
    return ["; ".join(lines[i : i + per_line]) for i in range(0, len(lines), per_line)]


def _malformed(args: dict[str, Any], call: int) -> AIMessage:
    """Arguments as a provider might mangle them, rotating through four shapes."""
    text = json.dumps(args, ensure_ascii=False)
    shape = (call // 3) % 4
    if shape == 0:  # truncated JSON, as with a max_tokens cut
        bad = text[: int(len(text) * 0.6)]
        return AIMessage(
            content="",
            invalid_tool_calls=[
                {"name": UPDATE_TOOL, "args": bad, "id": f"wm_{call}", "error": "truncated"}
            ],
        )
    if shape == 1:  # wrapped as a raw string
        return AIMessage(
            content="",
            tool_calls=[{"name": UPDATE_TOOL, "args": {"raw": text}, "id": f"wm_{call}"}],
        )
    if shape == 2:  # sections without the wrapper
        return AIMessage(
            content="",
            tool_calls=[{"name": UPDATE_TOOL, "args": args["sections"], "id": f"wm_{call}"}],
        )
    curly = text.replace('"', "\u201c", 2)  # curly quotes break the JSON
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {"name": UPDATE_TOOL, "args": curly, "id": f"wm_{call}", "error": "bad json"}
        ],
    )


def make_summariser(
    behaviour: str | Behaviour, catalogue: Sequence[Item], seed: int
) -> ScriptedSummariser:
    """A fresh summariser script (same behaviour and seed for every system)."""
    b = BEHAVIOURS[behaviour] if isinstance(behaviour, str) else behaviour
    return ScriptedSummariser(catalogue=catalogue, behaviour=b, seed=seed)


def make_model(
    behaviour: str | Behaviour, catalogue: Sequence[Item], seed: int
) -> ScriptedChatModel:
    """A fresh summariser model for one system run (same behaviour and seed for every system):
    a ``ScriptedChatModel`` answering with a :class:`ScriptedSummariser`."""
    script = make_summariser(behaviour, catalogue, seed)
    return ScriptedChatModel(
        respond=script, keep_ids=True, record_calls=False, name="bench-scripted-summariser"
    )


def records_of(model: Any) -> list[CallRecord]:
    """The call records of a :func:`make_model` summariser (``[]`` for any other model)."""
    script = getattr(model, "respond", None)
    return script.records if isinstance(script, ScriptedSummariser) else []
