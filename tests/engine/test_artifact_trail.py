"""The artifact trail (behaviour §5.8): file paths the folded messages acted on that Files &
Context does not list yet are added — judged at path boundaries (a substring test missed "a.py"
beside "src/data.py"), never data, routes or URLs (digests, base64, "/healthz"), never from the
output of a tool whose arguments name no file (a fetch)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.memory import InMemoryStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False)


def _writer(files: str) -> ScriptedChatModel:
    def reply(messages, tools, tool_choice):
        body = dict.fromkeys(SECTIONS, "")
        body["Session Title"] = "Reading the config loader"
        body["Current State"] = "Read the files."
        body["Files & Context"] = files
        return render_working_memory(body)

    return ScriptedChatModel(respond=reply)


def _session(calls: list[dict], results: list[str]) -> list:
    messages = [HumanMessage("read the loader files", id="h")]
    messages.append(AIMessage("", tool_calls=calls, id="a"))
    for call, result in zip(calls, results, strict=True):
        messages.append(ToolMessage(result, tool_call_id=call["id"], id=f"t-{call['id']}"))
    messages.append(AIMessage("done", id="a2"))
    return messages


def _files_after(files: str, calls: list[dict], results: list[str]) -> list[str]:
    wm = WorkingMemory(_writer(files), config=CONFIG, store=InMemoryStore())
    cfg = {"configurable": {"thread_id": "trail"}}
    wm.compact({"messages": _session(calls, results)}, cfg)
    body = parse_working_memory(wm.get_working_memory(cfg))["Files & Context"]
    return [line.removeprefix("- ") for line in body.splitlines()]


def test_a_path_is_not_listed_by_a_longer_path_that_contains_it():
    calls = [
        {"name": "read_file", "args": {"path": "a.py"}, "id": "c1"},
        {"name": "read_file", "args": {"path": "config.yaml"}, "id": "c2"},
        {"name": "read_file", "args": {"path": "src/db.py"}, "id": "c3"},
    ]
    lines = _files_after(
        "- src/data.py: the data layer\n- config.yaml.bak: old settings\n- app/src/db.py: pool",
        calls,
        ["x = 1", "debug: true", "pool = None"],
    )
    assert "a.py" in lines
    assert "config.yaml" in lines
    assert "src/db.py" not in lines  # app/src/db.py lists it (path boundary)


def test_markup_routes_and_bare_directories_are_not_added():
    args = {"path": "reports/", "url": "http://127.0.0.1/healthz"}
    calls = [{"name": "check", "args": args, "id": "c1"}]
    result = (
        "<table><tr><td>ok</td></tr></table> GET /healthz 200, GET /orders/1 404; "
        "see tests/ for more; wrote reports/summary.csv"
    )
    lines = _files_after("- notes.md", calls, [result])
    added = [line for line in lines if line != "notes.md"]
    assert added == ["reports/summary.csv"]  # the URL is no file (SPEC §10)


def test_a_fetch_tool_s_url_and_output_are_not_added():
    calls = [{"name": "fetch", "args": {"url": "http://127.0.0.1/healthz"}, "id": "c1"}]
    lines = _files_after("- notes.md", calls, ["wrote reports/summary.csv"])
    assert lines == ["notes.md"]


def test_junk_is_never_added_and_entries_are_capped():
    blob = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 40
    result = (
        f"data:image/png;base64,{blob}\n"
        f"raw {blob[:400]}/{blob[400:800]}\n"
        "digest sha256/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
        "key sk-proj-AbCdEf0123456789GhIjKlMnOpQrStUvWxYz/QWERTY12345678asdfgh\n"
        "blob:https://example.com/550e8400-e29b-41d4-a716-446655440000\n"
        "saved assets/logo.png"
    )
    calls = [{"name": "encode", "args": {"path": "assets/logo.png"}, "id": "c1"}]
    lines = _files_after("- notes.md", calls, [result])
    added = [line for line in lines if line != "notes.md"]
    assert added == ["assets/logo.png"]
    assert all(len(line) < 300 for line in lines)
