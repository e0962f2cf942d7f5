"""The offline heuristic summariser, driven exactly as the engine drives a model: the real
create / update prompts (writer.generate), messages rendered by messages, and the guarded merge.
"""

from __future__ import annotations

import json
import logging

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, UPDATE_WORKING_MEMORY_TOOL
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, section_items
from wm_langgraph.document.text import extract_anchors
from wm_langgraph.messages import render_messages
from wm_langgraph.writer.generate import generate_create, generate_update


def _call(name: str, args: dict[str, object], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _result(content: str, call_id: str, *, status: str = "success") -> ToolMessage:
    return ToolMessage(content, tool_call_id=call_id, status=status)


ROUND_1: list[BaseMessage] = [
    HumanMessage(
        "Please add retry logic to the HTTP client in src/client.py. We must never retry POST "
        "requests because they are not idempotent."
    ),
    AIMessage(
        "Reading the client first.",
        tool_calls=[{"name": "read_file", "args": {"path": "src/client.py"}, "id": "c1"}],
    ),
    _result("import httpx\n\ndef fetch(url):\n    return httpx.get(url)\n", "c1"),
    _call("edit_file", {"path": "src/client.py", "old": "return", "new": "retry"}, "c2"),
    _result("edited", "c2"),
    _call("run", {"command": "pytest tests/test_client.py -q"}, "c3"),
    _result(
        "FAILED tests/test_client.py::test_retry - AssertionError: expected 3 attempts, got 1\n"
        "1 failed in 0.12s",
        "c3",
        status="error",
    ),
    _call("edit_file", {"path": "src/client.py", "old": "range(1)", "new": "range(3)"}, "c4"),
    _result("edited", "c4"),
    _call("run", {"command": "pytest tests/test_client.py -q"}, "c5"),
    _result("3 passed in 0.10s", "c5"),
    AIMessage("Retries added with exponential backoff, max 3 attempts. The tests pass now."),
    HumanMessage(
        "No, the backoff cap must be a fixed 5 seconds, not 10 seconds. "
        "TODO: document the retry policy in docs/retries.md. Should we also retry on HTTP 429?"
    ),
    AIMessage("Understood: the cap is now a fixed 5 seconds."),
]

ROUND_2: list[BaseMessage] = [
    HumanMessage("We decided to retry on HTTP 429 too, because the API rate-limits bursts."),
    _call("write_file", {"path": "docs/retries.md", "content": "# Retry policy\n"}, "d1"),
    _result("written", "d1"),
    AIMessage("I documented the retry policy in docs/retries.md, so that TODO is done."),
]


def _create(model: OfflineWorkingMemoryModel, messages: list[BaseMessage], prior: str = "") -> str:
    return generate_create(model, prior=prior, messages_text=render_messages(messages))


def _update(model: OfflineWorkingMemoryModel, wm: str, messages: list[BaseMessage]) -> dict:
    ops = generate_update(model, working_memory=wm, messages_text=render_messages(messages))
    assert ops is not None, "the offline model must answer the update call with a tool call"
    return ops


@pytest.fixture
def model() -> OfflineWorkingMemoryModel:
    return OfflineWorkingMemoryModel()


def test_create_writes_all_sections_with_title_decision_files_error_and_todo(model):
    wm = parse_working_memory(_create(model, ROUND_1))
    assert wm["Session Title"] == "Add retry logic to the HTTP client in src/client.py"
    assert (
        "never retry POST requests because they are not idempotent" in wm["Key Facts & Decisions"]
    )
    assert "src/client.py" in wm["Files & Context"]
    assert "edited" in wm["Files & Context"]
    errors = wm["Errors & Corrections"]
    assert "AssertionError: expected 3 attempts, got 1" in errors
    assert "(passed)" in errors  # the fix was verified by a re-run
    assert "User correction: No, the backoff cap must be a fixed 5 seconds" in errors
    open_issues = wm["Open Issues"]
    assert "[new] TODO: document the retry policy in docs/retries.md" in open_issues
    assert "Should we also retry on HTTP 429?" in open_issues
    state_sentences = wm["Current State"].count(". ") + 1
    assert 2 <= state_sentences <= 6
    assert "Add retry logic" in wm["Task & Goals"]


def test_update_returns_one_forced_tool_call_with_all_seven_sections(model):
    bound = model.bind_tools([UPDATE_WORKING_MEMORY_TOOL], tool_choice=UPDATE_TOOL_NAME)
    wm = _create(model, ROUND_1)
    prompt = f"<working_memory>\n{wm}\n</working_memory>\n<messages>\n"
    prompt += render_messages(ROUND_2) + "\n</messages>\n<section_size_warnings>\n"
    prompt += "</section_size_warnings>"
    reply = bound.invoke(prompt)
    assert isinstance(reply, AIMessage)
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert call["name"] == UPDATE_TOOL_NAME
    assert set(call["args"]["sections"]) == set(SECTIONS)
    assert call["args"]["sections"]["Session Title"] == {"op": "KEEP"}


def test_update_tracks_question_then_resolution_and_passes_guards_untouched(model):
    wm = _create(model, ROUND_1)
    ops = _update(model, wm, ROUND_2)
    assert ops["Session Title"]["op"] == "KEEP"
    assert ops["Errors & Corrections"]["op"] in {"KEEP", "APPEND"}
    assert ops["Key Facts & Decisions"]["op"] == "APPEND"
    assert any("HTTP 429" in item for item in ops["Key Facts & Decisions"]["items"])
    result = merge_working_memory(wm, ops)
    rejected = [d for d in result.decisions if d.requested != d.applied or d.reason]
    assert rejected == [], "a careful model's ops pass the guards unchanged"
    new = parse_working_memory(result.text)
    issues = section_items(new["Open Issues"])
    assert any(i.startswith("[resolved]") and "docs/retries.md" in i for i in issues)
    assert any("retry on HTTP 429" in i and i.startswith("[resolved]") for i in issues)
    assert "docs/retries.md" in new["Files & Context"]
    # nothing of round 1 is lost
    old = parse_working_memory(wm)
    for name in ("Key Facts & Decisions", "Files & Context", "Errors & Corrections"):
        for item in section_items(old[name]):
            assert item in new[name]


def test_chinese_session(model):
    messages: list[BaseMessage] = [
        HumanMessage(
            "请帮我把订单服务从 MySQL 迁移到 PostgreSQL 15。"
            "我们决定使用 pgloader，因为它支持增量迁移。"
        ),
        AIMessage(
            "先看一下配置文件。",
            tool_calls=[
                {"name": "read_file", "args": {"path": "config/database.yaml"}, "id": "z1"}
            ],
        ),
        _result("host: db1\nport: 3306", "z1"),
        _call("run", {"command": "pgloader config/migrate.load"}, "z2"),
        _result("错误：连接被拒绝 port 5433", "z2", status="error"),
        HumanMessage("不对，端口应该是 5432，不是 5433。"),
        AIMessage("明白，已把端口改为 5432。"),
        _call("run", {"command": "pgloader config/migrate.load"}, "z3"),
        _result("迁移完成，共 120 张表", "z3"),
        AIMessage("迁移完成。还需要确认索引是否重建？"),
    ]
    wm = parse_working_memory(_create(model, messages))
    assert wm["Session Title"] == "把订单服务从 MySQL 迁移到 PostgreSQL 15"
    assert "因为它支持增量迁移" in wm["Key Facts & Decisions"]
    assert "5432" in wm["Key Facts & Decisions"]
    assert "用户纠正：不对，端口应该是 5432" in wm["Errors & Corrections"]
    assert "失败" in wm["Errors & Corrections"]
    assert "config/database.yaml" in wm["Files & Context"]
    assert "[new] 还需要确认索引是否重建？" in wm["Open Issues"]
    assert wm["Current State"].startswith("最新请求：")


def _big_facts_wm() -> str:
    facts = [
        f"Service {name} runs on port {5400 + i} since 2024-03-{i + 1:02d} because of "
        f"ticket FACT-{i:03d}; owner {owner} keeps the runbook in ops/{name}.md"
        for i, (name, owner) in enumerate(
            [(f"svc{i}", o) for i, o in enumerate(["Alice", "Bruno", "Chen", "Dana"] * 8)]
        )
    ]
    body = "\n".join(f"- {fact}" for fact in facts)
    return (
        "# Working Memory\n\n## Session Title\nPlatform services inventory\n\n"
        "## Current State\nListing services.\n\n## Task & Goals\n- Keep an inventory\n\n"
        f"## Key Facts & Decisions\n{body}\n\n## Files & Context\n- `ops/index.md` — read\n\n"
        "## Errors & Corrections\n\n## Open Issues\n- Which team owns svc3?\n"
    )


def test_consolidates_key_facts_when_warned_and_keeps_every_anchor(model):
    wm = _big_facts_wm()
    messages: list[BaseMessage] = [
        HumanMessage("We decided to move svc40 to port 6000 because 5400 clashes."),
        AIMessage("Noted."),
    ]
    ops = _update(model, wm, messages)
    facts_op = ops["Key Facts & Decisions"]
    assert facts_op["op"] == "UPDATE"
    new_body = facts_op["content"]
    assert len(section_items(new_body)) <= 25
    old_anchors = extract_anchors(parse_working_memory(wm)["Key Facts & Decisions"])
    new_anchors = extract_anchors(new_body)
    assert old_anchors <= new_anchors
    assert "port 6000" in new_body
    result = merge_working_memory(wm, ops)
    facts = next(d for d in result.decisions if d.section == "Key Facts & Decisions")
    assert facts.applied == "UPDATE"
    assert "[restored]" not in result.text


def test_same_input_same_output_and_fresh_messages(model):
    first = model.invoke(
        "<prior_summary>(none)</prior_summary>\n<messages>\n"
        + render_messages(ROUND_1)
        + "\n</messages>"
    )
    second = model.invoke(
        "<prior_summary>(none)</prior_summary>\n<messages>\n"
        + render_messages(ROUND_1)
        + "\n</messages>"
    )
    assert first.text == second.text
    assert first is not second
    wm = _create(model, ROUND_1)
    assert _update(model, wm, ROUND_2) == _update(OfflineWorkingMemoryModel(), wm, ROUND_2)
    bound = model.bind_tools([UPDATE_WORKING_MEMORY_TOOL], tool_choice="any")
    prompt = f"<working_memory>\n{wm}\n</working_memory>\n<messages>\n{render_messages(ROUND_2)}"
    prompt += "\n</messages>"
    one, two = bound.invoke(prompt), bound.invoke(prompt)
    assert one.tool_calls[0]["id"] == two.tool_calls[0]["id"]
    assert json.dumps(one.tool_calls[0]["args"]) == json.dumps(two.tool_calls[0]["args"])
    assert one is not two


def test_create_carries_forward_a_legacy_prior_summary(model):
    legacy = "The user is building a billing export; invoices go to S3 bucket acme-invoices."
    wm = parse_working_memory(_create(model, ROUND_2, prior=legacy))
    assert "acme-invoices" in wm["Key Facts & Decisions"]
    assert "HTTP 429" in wm["Key Facts & Decisions"]


def test_create_carries_forward_a_v2_prior(model):
    prior = _create(model, ROUND_1)
    wm = parse_working_memory(_create(model, ROUND_2, prior=prior))
    assert wm["Session Title"] == "Add retry logic to the HTTP client in src/client.py"
    assert "not idempotent" in wm["Key Facts & Decisions"]
    assert "docs/retries.md" in wm["Files & Context"]


def test_names_itself_honestly_and_rejects_unknown_arguments(caplog):
    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        OfflineWorkingMemoryModel()
    assert "heuristic extractive summariser" in caplog.text
    with pytest.raises(ValueError, match="temperature"):
        OfflineWorkingMemoryModel(temperature=0.2)  # type: ignore[call-arg]


def test_plain_transcript_without_tags_is_summarised(model):
    reply = model.invoke("Please migrate the cron jobs to systemd timers before 2025-01-31.")
    wm = parse_working_memory(reply.text)
    assert wm["Session Title"].startswith("Migrate the cron jobs to systemd timers")
    # the request is a goal, its deadline kept with it; not written again as a fact (issue 46:
    # one item per thing)
    assert "2025-01-31" in wm["Task & Goals"]
    assert "systemd timers" not in wm["Key Facts & Decisions"]


def _wm(**bodies: str) -> str:
    from wm_langgraph.document.sections import render_working_memory

    return render_working_memory({name: bodies.get(_KEYS[name], "") for name in SECTIONS})


_KEYS = {
    "Session Title": "title",
    "Current State": "state",
    "Task & Goals": "goals",
    "Key Facts & Decisions": "facts",
    "Files & Context": "files",
    "Errors & Corrections": "errors",
    "Open Issues": "issues",
}


def test_a_corrected_fact_is_rewritten_and_the_old_value_recorded_as_superseded(model):
    wm = _wm(
        title="Staging database setup",
        state="Configuring staging.",
        goals="- Set up the staging database",
        facts="- User: The staging database runs on port 5433.\n"
        "- User: Backups run nightly at 02:00 because traffic is lowest then.\n"
        "- Owner of the cluster is Priya.",
        files="- `deploy/staging.yaml` — read",
    )
    messages: list[BaseMessage] = [
        HumanMessage("No, the staging database is on port 5432, not 5433."),
        AIMessage("Understood, staging uses port 5432."),
    ]
    ops = _update(model, wm, messages)
    assert ops["Key Facts & Decisions"]["op"] == "UPDATE"
    facts = section_items(ops["Key Facts & Decisions"]["content"])
    assert "User: The staging database runs on port 5433." not in facts
    assert any("port 5432" in item for item in facts)
    assert any("Priya" in item for item in facts)
    errors = ops["Errors & Corrections"]["items"]
    assert any(
        e.startswith("Superseded: User: The staging database runs on port 5433.") for e in errors
    )
    result = merge_working_memory(wm, ops)
    assert all(d.requested == d.applied and not d.reason for d in result.decisions)
    assert "[restored]" not in result.text


def test_files_and_open_issues_are_consolidated_when_warned(model):
    files = "\n".join(f"- `src/pkg{i % 3}/mod{i}.py` — read" for i in range(30))
    resolved = "\n".join(f"- [resolved] question {i} about the schema" for i in range(14))
    opened = "\n".join(f"- still open item {i} on release {i}.0" for i in range(14))
    wm = _wm(title="Big session", files=files, issues=f"{resolved}\n{opened}")
    messages: list[BaseMessage] = [HumanMessage("Keep going."), AIMessage("Working on it.")]
    ops = _update(model, wm, messages)
    files_op, issues_op = ops["Files & Context"], ops["Open Issues"]
    assert files_op["op"] == "UPDATE"
    assert len(section_items(files_op["content"])) <= 25
    for i in range(30):
        assert f"src/pkg{i % 3}/mod{i}.py" in files_op["content"]
    assert issues_op["op"] == "UPDATE"
    issues = section_items(issues_op["content"])
    assert len(issues) == 14  # one resolved line, one "still open (older)" line, 12 open
    assert all(f"release {i}.0" in issues_op["content"] for i in range(14))
    result = merge_working_memory(wm, ops)
    assert all(d.requested == d.applied and not d.reason for d in result.decisions)


def test_the_heuristics_alone_need_no_guard_correction_on_a_normal_session(model):
    from wm_langgraph.writer.offline._extract import extract_findings
    from wm_langgraph.writer.offline._plan import plan_ops
    from wm_langgraph.writer.offline._transcript import parse_transcript

    wm = _create(model, ROUND_1)
    found = extract_findings(parse_transcript(render_messages(ROUND_2)))
    old = parse_working_memory(wm)
    raw = plan_ops(old, found, self_check=False)
    assert raw == plan_ops(old, found)
    result = merge_working_memory(wm, raw)
    assert all(d.requested == d.applied and not d.reason for d in result.decisions)


def test_prompt_prose_that_mentions_the_tags_does_not_confuse_the_reader(model):
    prompt = (
        "Read the <messages> block and the <prior_summary> block below.\n"
        "<prior_summary>\n(none)\n</prior_summary>\n"
        "<messages>\n" + render_messages(ROUND_1) + "\n</messages>\n"
        "Answer with the document only; never echo <messages>."
    )
    wm = parse_working_memory(model.invoke(prompt).text)
    assert wm["Session Title"] == "Add retry logic to the HTTP client in src/client.py"


def test_a_hand_written_role_transcript_is_understood(model):
    transcript = (
        "user: Please migrate the billing cron jobs to systemd timers.\n"
        "assistant: Done for invoices.timer because cron drifted by 5 minutes.\n"
        "user: Actually, keep the cron job for refunds until March."
    )
    reply = model.invoke(
        f"<prior_summary>(none)</prior_summary>\n<messages>\n{transcript}\n</messages>"
    )
    wm = parse_working_memory(reply.text)
    assert wm["Session Title"].startswith("Migrate the billing cron jobs")
    assert "because cron drifted by 5 minutes" in wm["Key Facts & Decisions"]
    assert "User correction: Actually, keep the cron job for refunds" in wm["Errors & Corrections"]


def test_chinese_update_answers_the_open_question_and_supersedes_the_wrong_port(model):
    first: list[BaseMessage] = [
        HumanMessage("请帮我把订单服务迁移到 PostgreSQL 15。"),
        AIMessage("配置里数据库端口是 3306。迁移目标端口是多少？"),
    ]
    wm = _create(model, first)
    assert "[new] 迁移目标端口是多少？" in parse_working_memory(wm)["Open Issues"]
    second: list[BaseMessage] = [
        HumanMessage("目标端口是 5433。"),
        AIMessage("好的，使用 5433。"),
        HumanMessage("不对，端口应该是 5432，不是 5433。"),
        AIMessage("明白，已把端口改为 5432。"),
    ]
    result = merge_working_memory(wm, _update(model, wm, second))
    assert all(d.requested == d.applied and not d.reason for d in result.decisions)
    new = parse_working_memory(result.text)
    assert "[resolved] 迁移目标端口是多少？" in new["Open Issues"]
    assert "目标端口是 5433" not in new["Key Facts & Decisions"]
    assert "端口应该是 5432" in new["Key Facts & Decisions"]
    assert "已被更正：目标端口是 5433。" in new["Errors & Corrections"]
