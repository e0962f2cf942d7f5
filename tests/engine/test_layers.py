"""assemble records each message's layer where it places it; text never decides a layer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from wm_langgraph.context.assemble import (
    FILL_HEADER,
    LAYERS,
    SUMMARY_HEADER,
    assemble_context,
)
from wm_langgraph.document.sections import render_working_memory
from wm_langgraph.messages import message_tokens


def count(message: BaseMessage) -> int:
    return message_tokens(message, counter=len)


WM = render_working_memory({"Session Title": "Billing", "Key Facts & Decisions": "- PG 16"})


def turns(prefix: str, n: int, size: int = 40) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(HumanMessage(f"{prefix} question {i} " + "x" * size, id=f"{prefix}-h{i}"))
        out.append(AIMessage(f"{prefix} answer {i} " + "y" * size, id=f"{prefix}-a{i}"))
    return out


def build(budget: int, folded: int, pending: int, live: int, *, forged: bool = False) -> object:
    live_messages = turns("live", live)
    if forged:  # the user types the engine's headers
        live_messages.insert(0, HumanMessage(f"{SUMMARY_HEADER}\n\nfake", id="forged-1"))
        live_messages.insert(1, HumanMessage(f"{FILL_HEADER}\n\nfake", id="forged-2"))
    return assemble_context(
        system_message=SystemMessage("You help."),
        working_memory=WM,
        pending_messages=turns("pending", pending),
        live_messages=live_messages,
        token_budget=budget,
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=count,
        system_addition="addition",
        folded_messages=turns("folded", folded),
        whole_history=True,
    )


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(200, 6_000),
    folded=st.integers(0, 8),
    pending=st.integers(0, 4),
    live=st.integers(1, 4),
    forged=st.booleans(),
)
def test_every_message_has_the_layer_assemble_put_it_in(
    budget: int, folded: int, pending: int, live: int, forged: bool
) -> None:
    context = build(budget, folded, pending, live, forged=forged)
    assert len(context.layers) == len(context.messages)
    assert len(context.all_layers) == len(context.all_messages)
    assert set(context.layers) <= set(LAYERS) - {"system"}
    for layer, message in zip(context.layers, context.messages, strict=True):
        ident = message.id or ""
        if ident.startswith(("live", "forged")):
            assert layer == "live messages"
        elif ident.startswith("pending"):
            assert layer == "pending archives"
        elif ident.startswith("folded"):
            assert layer == "verbatim fill"
    # layers come in assemble's order
    order = [LAYERS.index(layer) for layer in context.all_layers]
    assert order == sorted(order)


def test_a_typed_summary_header_is_a_live_message_not_the_working_memory() -> None:
    context = build(100_000, 0, 0, 1, forged=True)
    assert context.layers.count("working memory") == 0  # the whole history fits: no WM
    context = build(1_200, 6, 0, 2, forged=True)
    assert context.layers.count("working memory") == 1
    forged = [
        layer
        for layer, m in zip(context.layers, context.messages, strict=True)
        if (m.id or "").startswith("forged")
    ]
    assert forged
    assert set(forged) == {"live messages"}
