"""Forks, time travel and edits on every integration path: state operations a user may apply,
which must keep the invariants (design §3).

A user forks a thread from an earlier checkpoint (``update_state`` on it, or ``invoke`` with its
config) and may edit a message there by re-sending its id. Archive records are immutable once
written: no branch ever overwrites another branch's record, a fork's commit archives the fork's
own messages (the edited text) under a fresh id and folds them into the fork's own Working
Memory lineage, and a fork never sees (or keeps live copies of) what another branch archived.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from tests.engine._paths import PATHS, Driver, archived_ids, conversation_ids, make
from tests.engine._support import FACT_RE, folded_text, user
from wm_langgraph.config import WorkingMemoryConfig

CONFIG = WorkingMemoryConfig(
    token_budget=3000,
    commit_token_threshold_ratio=0.1,  # a commit every few turns
    commit_keep_recent_count=2,
    background=False,
)


def _msg(i: int) -> HumanMessage:
    return user(i).model_copy(update={"id": f"m-{i}"})


def _records(driver: Driver, thread: str) -> dict[str, list[tuple[str, str]]]:
    """Every archive record in the store: id -> [(message id, text)]."""
    ns = driver.wm._archives.namespace(thread, "archives")
    items = driver.wm.store.search(ns, limit=10_000)
    return {
        item.key: [(m["data"]["id"], str(m["data"]["content"])) for m in item.value["messages"]]
        for item in items
    }


def _run_to_first_commit(driver: Driver, cfg: dict) -> tuple[int, dict]:
    """Turns until the first commit; returns the committing turn and the checkpoint config of
    the end of the turn before it."""
    before = None
    for i in range(1, 40):
        previous = driver.graph.get_state(cfg).config if i > 1 else None
        driver.invoke([_msg(i)], cfg)
        if driver.wm.list_archives(cfg):
            assert previous is not None
            before = previous
            return i, before
    raise AssertionError("no commit happened")


@pytest.mark.parametrize("kind", PATHS)
def test_a_fork_with_an_edit_archives_its_own_text_and_never_overwrites_the_other_branch(kind):
    driver = make(kind, CONFIG)
    thread = f"fork-edit-{kind}"
    cfg = {"configurable": {"thread_id": thread}}
    k, fork_point = _run_to_first_commit(driver, cfg)
    for i in range(k + 1, k + 4):  # branch X goes on
        driver.invoke([_msg(i)], cfg)
    x_config = driver.graph.get_state(cfg).config
    x_timeline = driver.timeline(x_config)
    x_records = _records(driver, thread)
    x_wm = driver.wm._archives.current_wm(thread, x_timeline)
    assert x_wm is not None
    assert "FACT-001" in x_wm.text

    # Fork from the end of turn k-1 and edit the first message there (same id, new text).
    edited = HumanMessage("turn 1 (edited): remember FACT-901 instead", id="m-1")
    fork = driver.graph.update_state(fork_point, {"messages": [edited]}, as_node=driver.last_node)
    prompts_before = len(driver.writer.model.calls)
    driver.invoke([_msg(k)], fork)  # the turn that committed on X, now on the fork
    for i in range(k + 1, k + 3):
        driver.invoke([_msg(i)], cfg)  # the thread's latest checkpoint is the fork's now

    # Branch X's records are exactly as they were: nothing overwritten, ids never reused.
    after = _records(driver, thread)
    for archive_id, messages in x_records.items():
        assert after[archive_id] == messages, f"{archive_id} of branch X was rewritten"
    # The fork archived its own (edited) text under ids of its own, folded into its own WM.
    fork_timeline = driver.timeline(cfg)
    assert fork_timeline
    assert not set(fork_timeline) & set(x_timeline)
    fork_messages = dict(m for a in fork_timeline for m in after[a])
    assert fork_messages["m-1"] == edited.text
    fork_text = list(fork_messages.values())
    fork_wm = driver.wm._archives.current_wm(thread, fork_timeline)
    assert fork_wm is not None
    assert "FACT-901" in fork_wm.text
    folded = [folded_text(c.messages[-1].text) for c in driver.writer.model.calls[prompts_before:]]
    assert any("FACT-901" in f for f in folded), "the writer never saw the edited message"
    # X's lineage still reads X's WM.
    again = driver.wm._archives.current_wm(thread, x_timeline)
    assert again is not None
    assert again.text == x_wm.text
    assert "FACT-901" not in again.text
    # Nothing of X's later turns is live on the fork, nothing is both archived and live.
    live = conversation_ids(driver.live(cfg))
    archived = archived_ids(driver, cfg)
    assert len(archived + live) == len(set(archived + live))
    assert set(FACT_RE.findall(" ".join(fork_text))) <= {
        f"FACT-{i:03d}" for i in range(1, k + 3)
    } | {"FACT-901"}


@pytest.mark.parametrize("kind", PATHS)
def test_time_travel_follows_the_checkpoint_the_run_started_from(kind):
    """Invoke from an earlier checkpoint (no edit): the fork's timeline is the one of that
    checkpoint, not the thread's latest, and its prompt shows only turns of its own past."""
    driver = make(kind, CONFIG)
    thread = f"time-travel-{kind}"
    cfg = {"configurable": {"thread_id": thread}}
    k, fork_point = _run_to_first_commit(driver, cfg)
    last = k
    while len(driver.wm.list_archives(cfg)) < 2:
        last += 1
        assert last < k + 30, "no second commit"
        driver.invoke([_msg(last)], cfg)
    fork_turn = HumanMessage("fork turn: remember FACT-777", id="fork-1")
    driver.invoke([fork_turn], fork_point)  # a fork of the end of turn k-1
    prompt = "\n".join(m.text for m in driver.prompts()[-1])
    seen = set(FACT_RE.findall(prompt))
    assert "FACT-777" in seen
    assert not seen & {f"FACT-{i:03d}" for i in range(k, last + 1)}, "turns of another branch"
    live = conversation_ids(driver.live(cfg))
    archived = archived_ids(driver, cfg)
    assert len(archived + live) == len(set(archived + live)), "archived and live at once"
    texts = [m.text for m in driver.live(cfg)]
    assert not any(f"turn {k}:" in t for t in texts)
    # and going on from the fork keeps the invariants (its own commits, its own ids)
    for i in range(1, 6):
        driver.invoke([HumanMessage(f"fork turn {i + 1}: FACT-{780 + i} " + "x " * 30)], cfg)
        live = conversation_ids(driver.live(cfg))
        archived = archived_ids(driver, cfg)
        assert len(archived + live) == len(set(archived + live))
        ids = [i for i in archived + live if i.startswith("m-")]
        assert ids == [f"m-{n}" for n in range(1, k)]


@pytest.mark.parametrize("kind", PATHS)
def test_a_fork_from_before_any_hook_ran_starts_without_the_other_branch_memory(kind):
    driver = make(kind, CONFIG)
    cfg = {"configurable": {"thread_id": f"fork-first-{kind}"}}
    k, _ = _run_to_first_commit(driver, cfg)
    driver.invoke([_msg(k + 1)], cfg)
    first = list(driver.graph.get_state_history(cfg))[-1]  # the thread's very first checkpoint
    driver.invoke([HumanMessage("a new start: FACT-555", id="new-1")], first.config)
    prompt = driver.prompts()[-1]
    assert not any(m.text.startswith("[Session History Summary]") for m in prompt)
    assert set(FACT_RE.findall("\n".join(m.text for m in prompt))) <= {"FACT-001", "FACT-555"}
    assert driver.timeline(cfg) == []


def test_an_empty_meta_channel_is_an_empty_lineage_only_outside_subgraphs():
    from wm_langgraph.phase1.session import graph_meta

    def config(namespace: str, value):
        return {
            "configurable": {
                "__pregel_read": lambda keys: {} if value is None else {"working_memory": value},
                "checkpoint_ns": namespace,
            }
        }

    assert graph_meta(config("agent:1", None)) == {}
    assert graph_meta(config("outer:1|agent:2", None)) is None  # the store keeps it there
    assert graph_meta(config("outer:1|agent:2", {"archives": ["a"]})) == {"archives": ["a"]}
    assert graph_meta({"configurable": {}}) is None
