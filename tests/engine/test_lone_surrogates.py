"""A lone surrogate (``"\\ud800"``, as JSON's ``\\ud800`` escape decodes) is text like any other.

Python strings may hold one; UTF-8 cannot encode it. The engine digests message texts and keys
to tell messages apart (a reused id, an archive's digest, a thread label, the offline writer's
cache), and those digests must not raise on such a string: the turn is archived, folded and read
back on every path, and nothing is lost. (LangGraph's checkpoint serializer itself writes a lone
surrogate as ``?``, so a message that went through a checkpoint comes back with that.)
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from tests.engine._paths import PATHS, archived_ids, conversation_ids, make
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.storage.archives import message_signature

SURROGATE = "\ud800"


def _as_sent(text: str, sent: str) -> bool:
    """``text`` is ``sent`` verbatim, or as the checkpointer's serializer returns it."""
    return text in (sent, sent.replace(SURROGATE, "?"))


EVERY_TURN = WorkingMemoryConfig(
    commit_token_threshold_ratio=0.0, commit_keep_recent_count=2, background=False
)


@pytest.mark.parametrize("kind", PATHS)
def test_a_lone_surrogate_is_archived_and_read_back_on_every_path(kind: str) -> None:
    driver = make(kind, EVERY_TURN, tool_every=2)
    thread = f"surrogate {SURROGATE} {kind}"
    config = {"configurable": {"thread_id": thread}}
    sent = [f"FACT-{n:03d} half a pair {SURROGATE} here, turn {n}" for n in range(6)]
    for text in sent:
        driver.invoke([HumanMessage(text)], config)
    driver.wm.wait(config)

    archived = driver.wm.list_archives(config)
    assert archived, "no commit happened"
    texts = [m.text for record in archived for m in record.messages]
    texts += [m.text for m in driver.live(config)]
    for text in sent:
        assert any(_as_sent(t, text) for t in texts)
    # nothing lost, nothing twice
    ids = archived_ids(driver, config) + conversation_ids(driver.live(config))
    assert len(ids) == len(set(ids))
    assert "FACT-000" in driver.wm.get_working_memory(config)
    page = driver.wm.transcript(config)
    humans = [m.text for m in page.messages if isinstance(m, HumanMessage)]
    assert len(humans) == len(sent)
    assert all(_as_sent(t, s) for t, s in zip(humans, sent, strict=True))


def test_the_signature_tells_a_surrogate_from_its_replacement() -> None:
    a = HumanMessage(f"x {SURROGATE}", id="m1")
    b = HumanMessage("x \ufffd", id="m1")
    assert message_signature(a) != message_signature(b)
    assert message_signature(a) == message_signature(HumanMessage(f"x {SURROGATE}", id="m1"))
