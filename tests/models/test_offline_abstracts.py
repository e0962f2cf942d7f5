"""The offline writer's extractive abstracts: one per marked archive, in the archive's own
words (who, when, the most salient statements), in both the create and the update reply."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.abstracts import (
    MAX_ABSTRACT_CHARS,
    archive_marker,
    clean_abstract,
    read_abstracts,
)
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, update_tool_schema
from wm_langgraph.messages import render_messages
from wm_langgraph.writer.generate import request_create, request_update

FIRST = [
    HumanMessage(
        "[10:05 am on 3 February, 2022] Hey Ruben! I adopted a tabby kitten named Quince."
    ),
    AIMessage("Hi Lotte! I started pottery classes in Utrecht last week."),
]
SECOND = [
    HumanMessage("[6:40 pm on 20 March, 2022] Hey Ruben! I got a new job as a florist in Haarlem."),
    AIMessage("Congrats Lotte! I sold 14 bowls at the market last weekend."),
]


def _marked() -> str:
    return "\n\n".join(
        [
            archive_marker("archive_001"),
            render_messages(FIRST),
            archive_marker("archive_002"),
            render_messages(SECOND),
        ]
    )


def test_an_update_gives_each_marked_archive_its_extractive_abstract() -> None:
    model = OfflineWorkingMemoryModel()
    reply = request_update(
        model, working_memory="# Working Memory\n\n## Session Title\nChat", messages_text=_marked()
    )
    found = read_abstracts(reply.abstracts, ["archive_001", "archive_002"])
    assert set(found) == {"archive_001", "archive_002"}
    first, second = found["archive_001"], found["archive_002"]
    assert "Lotte" in first
    assert "Ruben" in first
    assert "3 February 2022" in first
    assert "Quince" in first
    assert "Utrecht" in first
    assert "Haarlem" not in first
    assert "Haarlem" in second
    assert "14 bowls" in second
    assert "Quince" not in second
    for text in found.values():
        assert clean_abstract(text) == text
        assert len(text) <= MAX_ABSTRACT_CHARS


def test_a_create_reply_writes_the_abstracts_after_the_document_only_when_asked() -> None:
    model = OfflineWorkingMemoryModel()
    created = request_create(model, prior="", messages_text=_marked())
    assert created.document.startswith("# Working Memory")
    assert "archive_abstracts" not in created.document
    found = read_abstracts(created.abstracts, ["archive_001", "archive_002"])
    assert "Quince" in found["archive_001"]
    # a custom create prompt that does not ask for them gets none
    custom = (
        "Notes:\n<prior_summary>\n{{prior_summary}}\n</prior_summary>\n"
        "<messages>\n{{messages}}\n</messages>"
    )
    plain = request_create(model, prior="", messages_text=_marked(), prompt=custom)
    assert plain.abstracts == ""


def test_messages_without_markers_get_no_abstracts() -> None:
    model = OfflineWorkingMemoryModel()
    bound = model.bind_tools([update_tool_schema()], tool_choice=UPDATE_TOOL_NAME)
    prompt = (
        f"<working_memory>\n</working_memory>\n<messages>\n{render_messages(FIRST)}\n</messages>"
    )
    reply = bound.invoke([HumanMessage(prompt)])
    assert "abstracts" not in reply.tool_calls[0]["args"]
    created = request_create(model, prior="", messages_text=render_messages(FIRST))
    assert created.abstracts == ""
