"""``python -m bench --locomo DIR --answer``: end-to-end answers by a real agent model.

Each system replays each conversation exactly as the coverage run does (the scripted agent, the
offline writers, the same budget); then a stated, seeded sample of the conversation's scored
questions is asked at the end of the replay, each on a fork of the final state (the same
checkpoint), through ``create_agent`` with a real model as the agent: any OpenAI-compatible
server (``--agent-url``, ``--agent-model``; ``scripts/realmodel_server.py serve`` works). Every
question sees the same conversation prefix, so a server that keeps its prompt cache (llama.cpp
does) evaluates the long prefix once per system and conversation.

For each question the run records the answer, its LoCoMo token F1 against the gold answer
(:mod:`bench.locomo.f1`), whether an evidence message was in the agent's first input (*in
view*), whether the agent called ``archive_search`` (*searched*) and whether a search output
held an evidence message (*found*), the model calls and the time. Systems: ``full`` (the whole
transcript), ``trimming``, ``summarization`` (LangChain's ``SummarizationMiddleware``) and
``wm_langgraph``; the agent gets the memory's tools only where the system has them.

Small models often write a tool call as text (``{"name": …, "arguments": …}``, or inside
``<tool_call>`` tags) instead of the API's tool-call field; :class:`TextToolCalls` reads such a
reply as the call when it names a tool the request offers (for every system alike).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from bench.locomo.data import CATEGORIES, Conversation, Question
from bench.locomo.f1 import answer_f1
from bench.locomo.score import evidence_in_hits
from bench.locomo.systems import SystemRun, build_system

__all__ = [
    "ANSWER_INSTRUCTION",
    "ANSWER_SYSTEMS",
    "DEFAULT_SAMPLE",
    "DEFAULT_SEED",
    "TextToolCalls",
    "answer_rows",
    "answer_section",
    "sample_questions",
    "tool_call_in_text",
]

ANSWER_SYSTEMS: tuple[str, ...] = ("full", "trimming", "summarization", "wm_langgraph")
DEFAULT_SAMPLE = 10
"""Questions per conversation (seeded sample of the scored ones)."""
DEFAULT_SEED = 40
ANSWER_INSTRUCTION = (
    "Answer in a short phrase, using the conversation's own words where you can. For a "
    "question about when something happened, give the date."
)
"""Appended to each question (our wording of what LoCoMo's evaluation asks for)."""
_RECURSION_LIMIT = 12
_TAGGED_RE = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|\Z)", re.S)


def sample_questions(conversation: Conversation, size: int, seed: int) -> list[Question]:
    """``size`` of the conversation's scored questions (all when it has fewer), drawn with a
    generator seeded by ``seed`` and the conversation id, in the conversation's order."""
    questions = list(conversation.questions)
    rng = random.Random(f"{seed}:{conversation.conv_id}")
    picked = sorted(rng.sample(range(len(questions)), min(size, len(questions))))
    return [questions[i] for i in picked]


def tool_call_in_text(text: str, tools: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a tool call a reply wrote as text, when it names one of
    ``tools`` (a whole-reply JSON object, or one inside ``<tool_call>`` tags)."""
    tagged = _TAGGED_RE.search(text)
    candidate = tagged.group(1) if tagged else text.strip()
    if not candidate.startswith("{"):
        return None
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in tools:
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    return (str(value["name"]), args) if isinstance(args, dict) else None


class TextToolCalls(AgentMiddleware[Any, Any]):
    """Reads a tool call written as text as the call, and records each model input.

    Attributes:
        inputs: The messages of every model call, in order (system message first).
    """

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[list[BaseMessage]] = []

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        system = [request.system_message] if request.system_message else []
        self.inputs.append([*system, *request.messages])
        response = handler(request)
        names = [str(getattr(t, "name", "")) for t in request.tools]
        out: list[BaseMessage] = []
        for message in response.result:
            found = None
            if isinstance(message, AIMessage) and not message.tool_calls and names:
                found = tool_call_in_text(message.text, names)
            if found is None:
                out.append(message)
                continue
            name, args = found
            call_id = f"call_text_{len(self.inputs)}"
            out.append(
                AIMessage(
                    content="",
                    tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}],
                    id=message.id,
                    response_metadata=message.response_metadata,
                )
            )
        return ModelResponse(result=out, structured_response=response.structured_response)


def _agent_model(url: str, model: str, max_tokens: int) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        base_url=url,
        api_key="none",  # type: ignore[arg-type]
        temperature=0,
        max_tokens=max_tokens,  # type: ignore[call-arg]
        extra_body={"max_tokens": max_tokens},  # an older server reads only the plain field
        timeout=1_800,
        max_retries=0,
    )


def _evidence_in(texts: Sequence[str], evidence: Sequence[str]) -> bool:

    return evidence_in_hits(texts, evidence)


def _ask(
    run: SystemRun, model: Any, question: Question, conversation: Conversation
) -> dict[str, Any]:
    """One question on a fork of the run's final state."""
    recorder = TextToolCalls()
    extra = run.extra
    graph = create_agent(
        model,
        [],
        middleware=[*extra["middlewares"], recorder],
        checkpointer=extra["saver"],
        store=extra.get("store"),
    )
    final = run.graph.get_state(run.config)
    fork = {
        "configurable": {
            "thread_id": run.config["configurable"]["thread_id"],
            "checkpoint_id": final.config["configurable"]["checkpoint_id"],
        },
        "recursion_limit": _RECURSION_LIMIT,
    }
    prompt = f"{question.question}\n\n{ANSWER_INSTRUCTION}"
    started = time.perf_counter()
    error = ""
    new: list[BaseMessage] = []
    try:
        state = graph.invoke({"messages": [HumanMessage(prompt)]}, fork)
        messages = list(state.get("messages", []))
        index = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        new = messages[index + 1 :]
    except Exception as exc:  # a model or server failure: recorded, the run goes on
        error = f"{type(exc).__name__}: {exc}"[:300]
    seconds = time.perf_counter() - started
    answers = [m for m in new if isinstance(m, AIMessage) and not m.tool_calls]
    answer = answers[-1].text.strip() if answers else ""
    evidence = conversation.evidence_texts(question)
    searches = [m for m in new if isinstance(m, ToolMessage) and m.name == "archive_search"]
    first = recorder.inputs[0] if recorder.inputs else []
    return {
        "conv": conversation.conv_id,
        "system": run.name,
        "budget": run.budget,
        "category": question.category,
        "f1": answer_f1(answer, question.answer, question.category),
        "answer_words": len(answer.split()),
        "in_view": _evidence_in(["\n".join(m.text for m in first)], evidence),
        "searched": bool(searches),
        "found": bool(searches) and _evidence_in([m.text for m in searches], evidence),
        "calls": len(recorder.inputs),
        "first_input_tokens": sum(_tokens(m) for m in first),
        "seconds": round(seconds, 2),
        "error": error,
    }


def _tokens(message: BaseMessage) -> int:
    from bench.locomo.systems import message_tokens

    return message_tokens(message)


def answer_rows(
    conversation: Conversation,
    systems: Sequence[str],
    budget: int,
    *,
    url: str,
    model: str,
    sample: int,
    seed: int,
    max_tokens: int = 64,
    log: Callable[[str], None] = print,
    sink: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every sampled question of ``conversation`` asked of every system (rows of :func:`_ask`,
    plus the replay's time per system)."""
    agent = _agent_model(url, model, max_tokens)
    questions = sample_questions(conversation, sample, seed)
    rows: list[dict[str, Any]] = []
    for system in systems:
        started = time.perf_counter()
        run = build_system(system, conversation, budget, None)
        for exchange in conversation.exchanges:
            run.play(exchange)
        replay = time.perf_counter() - started
        for number, question in enumerate(questions, 1):
            row = _ask(run, agent, question, conversation)
            row["replay_seconds"] = round(replay, 2)
            rows.append(row)
            if sink is not None:
                sink(row)
            log(
                f"{conversation.conv_id} {system} q{number}/{len(questions)}: F1 {row['f1']:.2f}"
                f", in view {row['in_view']}, searched {row['searched']}, found {row['found']}"
                f", {row['calls']} call(s), {row['seconds']:.0f}s"
                + (f", error {row['error']}" if row["error"] else "")
            )
    return rows


def _mean(values: Sequence[float]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "n/a"


def _share(rows: Sequence[dict[str, Any]], key: str) -> str:
    return (
        f"{100 * sum(bool(r[key]) for r in rows) / len(rows):.0f}% ({len(rows)})" if rows else "n/a"
    )


def answer_section(meta: dict[str, Any], rows: Sequence[dict[str, Any]]) -> list[str]:
    """The end-to-end section of LOCOMO.md (markdown lines)."""
    systems = [s for s in ANSWER_SYSTEMS if any(r["system"] == s for r in rows)]
    lines = [
        "## End to end: answers by a real agent model",
        "",
        f"`{meta['command']}`. Agent: `{meta['model']}` at an OpenAI-compatible server "
        f"({meta['server']}); temperature 0, at most {meta['max_tokens']} answer tokens. "
        f"Sample: {meta['sample']} scored questions per conversation, drawn with seed "
        f"{meta['seed']} (`bench/locomo/answer.py: sample_questions`), conversations "
        f"{', '.join(meta['conversations'])}, budget {meta['budget']:,} tokens. Each system "
        "replays the conversation with the offline writers, then each question is asked on a "
        "fork of the final state. Run time: "
        f"{meta['seconds'] / 60:.1f} min on {meta['machine']}.",
        "",
        "F1: LoCoMo's token F1 against the gold answer (`bench/locomo/f1.py`). In view: an "
        "evidence message was in the agent's first input. Searched: the agent called "
        "`archive_search`. Found: a search output held an evidence message.",
        "",
    ]
    header = ["system", "F1", *(f"F1 {c} {CATEGORIES[c]}" for c in (1, 2, 3, 4))]
    header += ["in view", "searched", "searched, not in view", "found", "mean s / question"]
    table = []
    for system in systems:
        own = [r for r in rows if r["system"] == system]
        unseen = [r for r in own if not r["in_view"]]
        by_category = [_mean([r["f1"] for r in own if r["category"] == c]) for c in (1, 2, 3, 4)]
        table.append(
            [
                system if system == "full" else f"{system} @ {meta['budget'] / 1000:g}k",
                _mean([r["f1"] for r in own]),
                *by_category,
                _share(own, "in_view"),
                _share(own, "searched"),
                _share(unseen, "searched"),
                _share(own, "found"),
                _mean([r["seconds"] for r in own]),
            ]
        )
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table]
    errors = sum(1 for r in rows if r["error"])
    if errors:
        lines += ["", f"{errors} question(s) failed (model or server error; F1 0)."]
    return [*lines, ""]


def write_answers(meta: dict[str, Any], rows: Sequence[dict[str, Any]], out: Path) -> Path:
    """Write ``locomo_answers.json`` and put the section into ``out/LOCOMO.md`` (replacing the
    previous one; the file is created when missing)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "locomo_answers.json").write_text(
        json.dumps({"meta": meta, "rows": list(rows)}, indent=1), encoding="utf-8"
    )
    path = out / "LOCOMO.md"
    section = "\n".join([ANSWERS_BEGIN, *answer_section(meta, rows), ANSWERS_END])
    text = path.read_text(encoding="utf-8") if path.exists() else "# LoCoMo\n"
    path.write_text(with_answers(text, section), encoding="utf-8")
    return path


ANSWERS_BEGIN = "<!-- answers -->"
ANSWERS_END = "<!-- /answers -->"


def with_answers(text: str, section: str) -> str:
    """``text`` with its answers section replaced by ``section`` (appended when it has none)."""
    start, end = text.find(ANSWERS_BEGIN), text.find(ANSWERS_END)
    if start >= 0 and end > start:
        return text[:start] + section + text[end + len(ANSWERS_END) :]
    return text.rstrip() + "\n\n" + section + "\n"
