"""Token counting covers every content-block type: the text inside ``document``,
``search_result``, ``json`` and tool-result blocks counts as text, reasoning counts its text,
and a block of an unknown type counts its serialised size, never a placeholder's few tokens.
A RAG tool returning ``search_result`` blocks must make the memory commit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.integrations.helpers import wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.messages import message_tokens, render_messages
from wm_langgraph.testing import ScriptedChatModel, tool_reply

TEXT = " ".join(f"clause{n} of the retrieved contract says payment is due" for n in range(300))
FLOOR = count_tokens(TEXT)  # what the block's text alone costs


def _tokens(content: Any) -> int:
    return message_tokens(HumanMessage(content=content))


@pytest.mark.parametrize(
    "block",
    [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": TEXT}},
        {
            "type": "document",
            "source": {"type": "content", "content": [{"type": "text", "text": TEXT}]},
            "title": "contract",
        },
        {
            "type": "search_result",
            "source": "https://example.com/c",
            "title": "contract",
            "content": [{"type": "text", "text": TEXT}],
        },
        {"type": "json", "json": {"clauses": TEXT.split(" of ")}},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": TEXT}]},
        {"type": "tool_result", "tool_use_id": "t1", "content": TEXT},
        {"type": "text-plain", "text": TEXT, "mime_type": "text/plain"},
        {"type": "refusal", "refusal": TEXT},
        {"type": "reasoning", "reasoning": TEXT},
        {"type": "thinking", "thinking": TEXT, "signature": "sig"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": TEXT}]},
        {"type": "non_standard", "value": {"payload": TEXT}},
        {"type": "future_block_kind", "payload": {"deep": [TEXT]}},
    ],
    ids=lambda b: str(b.get("type")) + ("-" + str(sorted(b)) if len(b) > 2 else ""),
)
def test_every_block_type_counts_its_text(block: dict[str, Any]) -> None:
    assert _tokens([block]) >= FLOOR
    assert message_tokens(ToolMessage(content=[block], tool_call_id="c1")) >= FLOOR


def test_text_bearing_blocks_are_shown_to_the_writer_and_reasoning_is_not() -> None:
    shown = render_messages(
        [
            HumanMessage(
                content=[
                    {
                        "type": "search_result",
                        "source": "s",
                        "title": "T",
                        "content": [{"type": "text", "text": "SEARCH-TEXT"}],
                    },
                    {"type": "document", "source": {"type": "text", "data": "DOC-TEXT"}},
                    {"type": "json", "json": {"k": "JSON-TEXT"}},
                ]
            ),
            AIMessage(content=[{"type": "reasoning", "reasoning": "SECRET-THOUGHT"}, "answer"]),
        ]
    )
    for needle in ("SEARCH-TEXT", "DOC-TEXT", "JSON-TEXT", "answer"):
        assert needle in shown
    assert "SECRET-THOUGHT" not in shown


def test_binary_documents_and_media_are_charged_like_images() -> None:
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "QUJD" * 10},
    }
    audio = {"type": "audio", "base64": "QUJD", "mime_type": "audio/wav"}
    assert _tokens([pdf]) >= 765
    assert _tokens([audio]) >= 765


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(kind=st.text(min_size=1, max_size=12), payload=_json_values)
def test_an_unknown_block_counts_at_least_its_serialised_size(kind: str, payload: Any) -> None:
    block = {"type": "x-" + kind, "payload": payload}
    serialised = json.dumps(block, ensure_ascii=False)
    assert _tokens([block]) >= count_tokens(serialised)


# -- a RAG tool returning search_result blocks, 10 turns at token_budget=16,000 ---------------

BUDGET = WorkingMemoryConfig(token_budget=16_000, background=False)
CHUNK = " ".join(f"passage{n} about the billing migration plan" for n in range(420))


@tool
def search(query: str) -> list[dict[str, Any]]:
    """Search the knowledge base."""
    return [
        {
            "type": "search_result",
            "source": f"kb://{query}",
            "title": query,
            "content": [{"type": "text", "text": CHUNK}],
        }
    ]


class _Agent:
    """Calls ``search`` once per user turn, then answers; records the size of each input."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        self.sizes.append(sum(message_tokens(m) for m in messages))
        if isinstance(messages[-1], HumanMessage):
            return tool_reply("search", {"query": f"q{len(self.sizes)}"})
        return "Done."


@pytest.mark.slow
@pytest.mark.parametrize("path", ["create_agent", "create_react_agent"])
def test_search_result_blocks_make_the_memory_commit(path: str) -> None:
    agent_model = _Agent()
    store = InMemoryStore()
    if path == "create_agent":
        mw = WorkingMemoryMiddleware(wm_model(), config=BUDGET)
        memory = mw.memory
        agent = create_agent(
            agent_model.model,
            [search],
            middleware=[mw],
            checkpointer=InMemorySaver(),
            store=store,
        )
    else:
        memory = WorkingMemory(wm_model(), config=BUDGET)
        agent = create_react_agent(
            agent_model.model,
            [search],
            pre_model_hook=memory.pre_model_hook,
            post_model_hook=memory.post_model_hook,
            checkpointer=InMemorySaver(),
            store=store,
            version="v2",
        )
    config = thread_config(f"rag-{path}")
    for n in range(10):
        agent.invoke({"messages": [HumanMessage(f"find the billing plan part {n}")]}, config)
    assert memory.list_archives(config), "never committed"
    assert memory.get_working_memory(config), "never called the writer"
    assert max(agent_model.sizes) <= 16_000
