"""Switched off, the recall changes nothing: the input is what assemble built before the
recalled layer existed (SPEC §11, "off gives exactly today's input").

``data/assemble_before_recall.json`` holds, for 300 random histories (the generator below,
seeded: message sizes, parallel tool calls, system prompts and notes, Working Memories of any
size with an oversized item at times, archives folded or pending, budgets from 400 to 12,000),
the input that ``assemble_context`` built at commit 6773ae6, before the recall: a digest of
each message's layer, id, type and text (of all of them, and of those outside the verbatim
fill), the token total and the items the Working Memory left out. The same histories through
today's code with the recall off must give the same input, message for message — with one
documented exception, the fix of the room a fitted-down Working Memory left empty
(tests/engine/test_fill_after_fit.py): where the old input cut the Working Memory and showed no
fill, today's may add the fill's turns in that room, and is then the old input plus those
turns, larger (1 of the 300).

Regenerate (only when a change of assemble's output is intended, and say so in its commit)
from a checkout of the code whose output is the reference::

    python -m tests.engine.test_recall_off --write
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from wm_langgraph.context.assemble import assemble_context
from wm_langgraph.messages import message_tokens

GOLDEN = Path(__file__).parent / "data" / "assemble_before_recall.json"
CASES = 300


def _count(message: BaseMessage) -> int:
    return message_tokens(message, lambda text: len(text) // 4 + 1)


def _case(seed: int) -> dict[str, Any]:
    """One random history, cut at archive boundaries, with a Working Memory and a budget."""
    rng = random.Random(seed)
    history: list[BaseMessage] = []
    for t in range(rng.randint(1, 18)):
        history.append(HumanMessage(f"q{t} " + "u " * rng.randint(1, 300), id=f"u{t}"))
        for step in range(rng.choice([0, 0, 1, 2])):
            ids = [f"c{t}_{step}_{k}" for k in range(rng.randint(1, 3))]
            history.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "f", "args": {"k": i}, "id": i} for i in ids],
                    id=f"a{t}_{step}",
                )
            )
            history.extend(
                ToolMessage("r " * rng.randint(1, 400), tool_call_id=i, id=f"t{i}") for i in ids
            )
        if rng.random() < 0.1:
            history.append(SystemMessage(f"note {t}", id=f"n{t}"))
        history.append(AIMessage(f"a{t} " + "a " * rng.randint(1, 200), id=f"f{t}"))
    cuts = [i for i, m in enumerate(history) if not isinstance(m, ToolMessage)]
    folded_end = rng.choice(cuts)
    pending_end = rng.choice([c for c in cuts if c >= folded_end])
    items = [f"- fact {k} " + "w " * rng.randint(3, 30) for k in range(rng.randint(0, 40))]
    if items and rng.random() < 0.3:
        items[rng.randrange(len(items))] += " v" * rng.randint(100, 2_000)
    wm = "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n" + "\n".join(items)
    system = rng.choice([None, "You are careful. " * rng.randint(1, 40)])
    return {
        "folded": history[:folded_end],
        "pending": history[folded_end:pending_end],
        "live": history[pending_end:],
        "wm": wm if folded_end or pending_end else "",
        "system": system,
        "budget": rng.randint(400, 12_000),
        "verbatim_fill": rng.random() < 0.85,
    }


def _assembled(case: dict[str, Any]) -> Any:
    system = SystemMessage(case["system"], id="sys") if case["system"] else None
    return assemble_context(
        system_message=system,
        working_memory=case["wm"],
        pending_messages=case["pending"],
        live_messages=case["live"],
        token_budget=case["budget"],
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=_count,
        system_addition="Working Memory: read the summary below.",
        folded_messages=case["folded"],
        folded_sizes=[_count(m) for m in case["folded"]],
        whole_history=True,
        verbatim_fill=case["verbatim_fill"],
    )


def _digest(message: BaseMessage) -> str:
    raw = json.dumps([message.type, message.content], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _picture(context: Any) -> dict[str, Any]:
    """The input in brief: a digest of every message (layer, id, type and text), one of the
    messages outside the fill, the token total, the items the Working Memory left out, and
    whether a fill is shown."""
    shown = [
        [layer, message.id or "", _digest(message)]
        for layer, message in zip(context.all_layers, context.all_messages, strict=True)
    ]
    unfilled = [m for m in shown if m[0] != "verbatim fill"]
    return {
        "all": hashlib.sha256(json.dumps(shown).encode()).hexdigest()[:24],
        "unfilled": hashlib.sha256(json.dumps(unfilled).encode()).hexdigest()[:24],
        "tokens": context.tokens,
        "wm_omitted": context.wm_omitted,
        "fill": len(unfilled) < len(shown),
    }


def test_switched_off_the_input_is_what_it_was_before_the_recall() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(golden) == CASES
    grown = 0
    for seed in range(CASES):
        before = golden[str(seed)]
        now = _picture(_assembled(_case(seed)))
        if now == before:
            continue
        # the one intended change: a cut Working Memory's freed room now holds fill turns
        assert before["wm_omitted"] > 0, f"seed {seed}: the input changed"
        assert not before["fill"], f"seed {seed}"
        assert now["fill"], f"seed {seed}"
        assert now["unfilled"] == before["unfilled"], f"seed {seed}"
        assert now["tokens"] > before["tokens"], f"seed {seed}"
        assert now["wm_omitted"] == before["wm_omitted"], f"seed {seed}"
        grown += 1
    assert grown < CASES // 10  # the exception stays an exception


def _write() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    pictures = {str(seed): _picture(_assembled(_case(seed))) for seed in range(CASES)}
    GOLDEN.write_text(json.dumps(pictures, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({CASES} cases)")


if __name__ == "__main__" and "--write" in sys.argv:
    _write()
