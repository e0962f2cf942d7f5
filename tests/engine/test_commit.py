"""The commit subgraph: branches, the behaviour §5.4 fallback chain, O(delta) prompts, the artifact
trail, the circuit breaker and tracing."""

from uuid import uuid4

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tracers.base import BaseTracer
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.engine._support import FACT_RE, is_update_call, prior_text, wm_document
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False, max_tool_output_tokens=50)


def _turn(i, extra=""):
    return [
        HumanMessage(f"turn {i}: FACT-{i:03d} {extra}", id=f"h{i}-{uuid4().hex[:6]}"),
        AIMessage(f"ack {i}", id=f"a{i}-{uuid4().hex[:6]}"),
    ]


def _compact(wm, cfg, messages):
    return wm.compact({"messages": messages}, cfg)


def test_graph_has_create_update_and_guard_merge_nodes(writer, memory):
    wm = memory(writer.model, config=CONFIG)
    nodes = set(wm.commit_graph.get_graph().nodes)
    assert {"prepare", "create", "update", "guard_merge", "save"} <= nodes


def test_first_commit_creates_then_updates_with_only_the_delta(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1, "alpha-marker"))
    _compact(wm, run_config, _turn(2, "beta-marker"))
    create_call, update_call = writer.model.calls
    assert not is_update_call(create_call.tools)
    assert is_update_call(update_call.tools)
    assert update_call.tool_choice is not None
    prompt = update_call.prompt_text
    assert "beta-marker" in prompt
    assert "alpha-marker" not in prompt.split("<messages>")[-1]  # old messages are not re-sent
    assert "FACT-001" in prior_text(prompt)  # but the prior WM is
    assert {"FACT-001", "FACT-002"} <= set(wm.get_working_memory(run_config).split()) | {
        w.strip(",") for w in wm.get_working_memory(run_config).split()
    }


def test_no_tool_call_falls_back_to_create_with_the_prior_wm(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1))
    writer.mode = "no_tool_call"
    _compact(wm, run_config, _turn(2))
    calls = writer.model.calls
    assert is_update_call(calls[1].tools)
    assert not is_update_call(calls[2].tools)
    assert "FACT-001" in prior_text(calls[2].prompt_text)
    wm_text = wm.get_working_memory(run_config)
    assert "FACT-001" in wm_text
    assert "FACT-002" in wm_text
    assert wm.list_archives(run_config)[1].metadata["fallback"] == "no_tool_call"


def test_unparseable_arguments_are_recovered(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1))
    before = parse_working_memory(wm.get_working_memory(run_config))
    writer.mode = "garbage_args"  # truncated JSON, one section only
    _compact(wm, run_config, _turn(2))
    after = parse_working_memory(wm.get_working_memory(run_config))
    assert "FACT-002" in after["Key Facts & Decisions"]
    for name in SECTIONS:
        if name not in ("Key Facts & Decisions", "Files & Context"):
            assert after[name] == before[name]  # missing sections mean KEEP


def test_arguments_with_no_readable_section_fall_back_to_create(writer, memory, run_config):
    # Accepting "{}" as the answer would mark the archive done with nothing folded in, and its
    # messages would leave the model's view unread.
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1))
    writer.mode = "unreadable_args"
    _compact(wm, run_config, _turn(2))
    calls = writer.model.calls
    assert is_update_call(calls[1].tools)
    assert not is_update_call(calls[2].tools)  # the create prompt, with the prior WM
    wm_text = wm.get_working_memory(run_config)
    assert "FACT-001" in wm_text
    assert "FACT-002" in wm_text
    archive = wm.list_archives(run_config)[1]
    assert archive.status == "done"
    assert archive.metadata["fallback"] == "unreadable_arguments"


def test_unreadable_arguments_and_a_failing_create_leave_the_archive_visible(
    writer, memory, run_config
):
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1))
    good = wm.get_working_memory(run_config)
    writer.mode = "unreadable_args"
    original = writer.model.respond

    def reply(messages, tools, tool_choice):
        if not is_update_call(tools):
            return RuntimeError("model down")
        return original(messages, tools, tool_choice)

    writer.model.respond = reply
    _compact(wm, run_config, _turn(2))
    assert wm.get_working_memory(run_config) == good
    assert wm.list_archives(run_config)[1].status == "failed"
    context = wm.build_context([HumanMessage("now?", id="q")], run_config)
    assert any("FACT-002" in m.text for m in context.messages)


def _no_tools_model() -> ScriptedChatModel:
    """A chat model without tool calling: it can only write whole documents."""

    def reply(messages, tools, tool_choice):
        return wm_document(sorted(set(FACT_RE.findall(messages[-1].text))))

    return ScriptedChatModel(respond=reply, tool_calling=False)


def test_a_model_without_tool_calling_keeps_committing_through_create(memory, run_config):
    wm = memory(_no_tools_model(), config=CONFIG)
    for i in range(1, 5):
        _compact(wm, run_config, _turn(i))
    archives = wm.list_archives(run_config)
    assert [a.status for a in archives] == ["done"] * 4
    assert [a.metadata["fallback"] for a in archives[1:]] == ["no_tool_support"] * 3
    assert {"FACT-001", "FACT-004"} <= set(FACT_RE.findall(wm.get_working_memory(run_config)))


def test_a_raising_model_keeps_the_old_wm_and_the_archive_pending(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, run_config, _turn(1))
    good = wm.get_working_memory(run_config)
    writer.mode = "raise"
    _compact(wm, run_config, _turn(2))
    assert wm.get_working_memory(run_config) == good
    failed = wm.list_archives(run_config)[1]
    assert failed.status == "failed"
    assert "model down" in failed.metadata["error"]
    context = wm.build_context([HumanMessage("now?", id="q")], run_config)
    assert any("FACT-002" in m.text for m in context.messages)


def test_artifact_trail_and_tool_rendering(memory, run_config):
    def forgetful(messages, tools, tool_choice):
        return wm_document(["FACT-001"])  # never mentions a file

    model = ScriptedChatModel(respond=forgetful)
    wm = memory(model, config=CONFIG)
    call = {
        "name": "edit",
        "args": {"path": "src/engine/core.py", "cmd": "sed -i s/a/b/"},
        "id": "c1",
    }
    messages = [
        HumanMessage("fix it", id="h"),
        AIMessage("", tool_calls=[call], id="a"),
        ToolMessage("line\n" * 2000 + "saved docs/notes.md", tool_call_id="c1", id="t"),
        AIMessage("fixed", id="a2"),
    ]
    _compact(wm, run_config, messages)
    prompt = model.calls[0].prompt_text
    assert "sed -i s/a/b/" in prompt  # tool inputs are shown
    assert "truncated" in prompt  # long outputs are capped in the prompt ...
    assert len(prompt) < 6000
    archived = wm.list_archives(run_config)[0].messages[2]
    assert archived.text.count("line") == 2000  # ... and kept whole in the archive
    files = parse_working_memory(wm.get_working_memory(run_config))["Files & Context"]
    assert "src/engine/core.py" in files
    assert "docs/notes.md" in files


def test_circuit_breaker_pauses_and_resume_retries(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG.replace(max_consecutive_failures=3))
    _compact(wm, run_config, _turn(1))
    writer.mode = "raise"
    for i in range(2, 5):
        _compact(wm, run_config, _turn(i))
    assert wm.phase2_status(run_config)["paused"]
    calls = len(writer.model.calls)
    for i in range(5, 8):  # commits still archive, but the dead model is not called
        _compact(wm, run_config, _turn(i))
    assert len(writer.model.calls) == calls
    assert len(wm.list_archives(run_config)) == 7
    restarted = WorkingMemory(writer.model, config=wm.config, store=wm.store)
    assert restarted.phase2_status(run_config)["paused"]  # the counters live in the store
    assert restarted.phase2_status(run_config)["consecutive_failures"] == 3
    writer.mode = "ok"
    wm.resume(run_config, wait=True)
    assert all(a.status == "done" for a in wm.list_archives(run_config))
    text = wm.get_working_memory(run_config)
    assert all(f"FACT-{i:03d}" in text for i in range(1, 8))
    assert not wm.phase2_status(run_config)["paused"]


def test_cooldown_lets_one_probe_through(writer, memory, run_config):
    cfg_obj = CONFIG.replace(max_consecutive_failures=1, failure_cooldown_seconds=0.0)
    wm = memory(writer.model, config=cfg_obj)
    writer.mode = "raise"
    _compact(wm, run_config, _turn(1))
    writer.mode = "ok"
    _compact(wm, run_config, _turn(2))  # cool-down over: the probe runs and succeeds
    assert [a.status for a in wm.list_archives(run_config)] == ["done", "done"]


class _Recorder(BaseTracer):
    def __init__(self):
        super().__init__()
        self.runs = []

    def _persist_run(self, run):
        pass

    def _start_trace(self, run):
        super()._start_trace(run)
        self.runs.append(run)


def test_commit_runs_are_named_tagged_and_carry_guard_decisions(writer, memory):
    wm = memory(writer.model, config=CONFIG)
    cfg = thread_config("trace")
    tracer = _Recorder()
    _compact(wm, {**cfg, "callbacks": [tracer]}, _turn(1))
    _compact(wm, {**cfg, "callbacks": [tracer]}, _turn(2))
    names = [r.name for r in tracer.runs]
    assert names.count("wm.commit") == 2
    assert "wm.create" in names
    assert "wm.update" in names
    commit = next(r for r in tracer.runs if r.name == "wm.commit")
    assert {"wm_langgraph", "nostream"} <= set(commit.tags)
    assert commit.extra["metadata"]["thread_id"] == "trace"
    guards = [r for r in tracer.runs if r.name == "wm.guards"]
    decisions = guards[-1].extra["metadata"]["guard_decisions"]
    assert [d["section"] for d in decisions] == list(SECTIONS)


def test_background_commits_trace_as_their_own_runs_linked_by_thread_id(writer):
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.engine._support import agent_model, build_agent, user

    wm = WorkingMemory(
        writer.model,
        config=CONFIG.replace(token_budget=3000, background=True),
        store=InMemoryStore(),
    )
    graph = build_agent(wm, agent_model(), checkpointer=InMemorySaver())
    tracer = _Recorder()
    cfg = {"configurable": {"thread_id": "bg-trace"}}
    for i in range(1, 40):
        graph.invoke({"messages": [user(i)]}, {**cfg, "callbacks": [tracer]})
    assert wm.wait(cfg, timeout=30)
    commits = [r for r in tracer.runs if r.name == "wm.commit"]
    assert commits
    assert all(r.parent_run_id is None for r in commits)  # not inside the finished turn
    assert all(r.extra["metadata"]["thread_id"] == "bg-trace" for r in commits)
    model_runs = [r for r in tracer.runs if r.name in ("wm.create", "wm.update")]
    assert {r.trace_id for r in model_runs} <= {r.trace_id for r in commits}


def test_a_missing_archive_record_does_not_block_the_lineage(writer, memory):
    wm = memory(writer.model, config=CONFIG)
    cfg = thread_config("missing")
    writer.mode = "raise"
    _compact(wm, cfg, _turn(1))
    wm.store.delete(("wm_langgraph", "missing", "archives"), "archive_001")  # lost by hand
    writer.mode = "ok"
    _compact(wm, cfg, _turn(2))
    assert "FACT-002" in wm.get_working_memory(cfg)
    _compact(wm, cfg, _turn(3))
    assert "FACT-003" in wm.get_working_memory(cfg)
    assert [a.status for a in wm.list_archives(cfg)] == ["done", "done"]


def _title_drift_model():
    """Creates a WM titled "Project Falcon migration", then answers every update with a
    Session Title UPDATE that shares no word with it (title drift)."""

    def reply(messages, tools, tool_choice):
        if is_update_call(tools):
            ops = {name: {"op": "KEEP"} for name in SECTIONS}
            ops["Session Title"] = {"op": "UPDATE", "content": "Quarterly tax paperwork"}
            return {
                "content": "",
                "tool_calls": [{"name": "update_working_memory", "args": {"sections": ops}}],
            }
        return wm_document(["FACT-001"])

    return ScriptedChatModel(respond=reply)


def test_title_drift_is_kept_by_default_and_applied_with_guards_off():
    titles = {}
    for guards in (True, False):
        wm = WorkingMemory(
            _title_drift_model(), config=CONFIG.replace(guards=guards), store=InMemoryStore()
        )
        cfg = thread_config(f"drift-{guards}")
        _compact(wm, cfg, _turn(1))
        _compact(wm, cfg, _turn(2))
        titles[guards] = parse_working_memory(wm.get_working_memory(cfg))["Session Title"]
        decision = next(
            d
            for d in wm.list_archives(cfg)[-1].metadata["decisions"]
            if d["section"] == "Session Title"
        )
        assert decision["requested"] == "UPDATE"
        assert decision["applied"] == ("KEEP" if guards else "UPDATE")
    assert titles[True] == "Project Falcon migration"
    assert titles[False] == "Quarterly tax paperwork"


def test_the_wm_version_is_written_before_the_archive_is_marked_done(monkeypatch, writer, memory):
    # Behaviour §6.4: mark the archive done last, so a crash between the writes never leaves a
    # "done" archive that no Working Memory covers.
    from wm_langgraph.storage.archives import ArchiveStore

    order = []
    put_wm, update_archives = ArchiveStore.put_wm, ArchiveStore.update_archives

    def recording_put_wm(self, *args, **kwargs):
        order.append("put_wm")
        return put_wm(self, *args, **kwargs)

    def recording_update(self, thread_id, ids, **changes):
        order.append(f"status={changes.get('status')}")
        return update_archives(self, thread_id, ids, **changes)

    monkeypatch.setattr(ArchiveStore, "put_wm", recording_put_wm)
    monkeypatch.setattr(ArchiveStore, "update_archives", recording_update)
    wm = memory(writer.model, config=CONFIG)
    _compact(wm, thread_config("order"), _turn(1))
    assert "put_wm" in order
    assert "status=done" in order
    assert order.index("put_wm") < order.index("status=done")


def test_archive_records_carry_counts_and_timings(writer, memory, run_config):
    wm = memory(writer.model, config=CONFIG)
    messages = _turn(1) + _turn(2)
    _compact(wm, run_config, messages)
    (archive,) = wm.list_archives(run_config)
    assert archive.message_count == len(messages) == len(archive.messages)
    assert archive.token_count == wm.count_tokens(messages)
    metrics = archive.metadata["metrics"]
    assert metrics["total_ms"] >= 0
    assert metrics["delta_messages"] == len(messages)
    assert archive.abstract.strip()


def test_error_trail_keeps_the_errors_tool_results_reported(run_config):
    # A real small writer folded a failing test run into "the user has encountered several
    # errors"; the exact error never reached the WM. Our code appends it.
    def vague(messages, tools, tool_choice):
        return wm_document(["FACT-001"])  # never names an error

    model = ScriptedChatModel(respond=vague)
    wm = WorkingMemory(model, config=CONFIG, store=InMemoryStore())
    call = {"name": "run_tests", "args": {"cmd": "pytest"}, "id": "c1"}
    output = (
        "    def test_total():\n>       assert total() == '42.50'\n"
        "E       AssertionError: expected '42.50', got '42.5'\n\n"
        "tests/test_orders.py:14: AssertionError\n"
        "FAILED tests/test_orders.py::test_total - AssertionError: expected '42.50', got '42.5'\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "KeyError: 'currency'\n"
    )
    messages = [
        HumanMessage("run the tests; the user says AssertionError is fine", id="h"),
        AIMessage("", tool_calls=[call], id="a"),
        ToolMessage(output, tool_call_id="c1", id="t"),
        AIMessage("ValueError: this prose is the model's to record", id="a2"),
    ]
    _compact(wm, run_config, messages)
    errors = parse_working_memory(wm.get_working_memory(run_config))["Errors & Corrections"]
    assert errors.splitlines() == [
        "- tests/test_orders.py::test_total: AssertionError: expected '42.50', got '42.5'"
        " (reported by run_tests)",
        "- KeyError: 'currency' (reported by run_tests)",
    ]
    assert wm.list_archives(run_config)[0].metadata["error_trail"] == [
        "tests/test_orders.py::test_total: AssertionError: expected '42.50', got '42.5'"
        " (reported by run_tests)",
        "KeyError: 'currency' (reported by run_tests)",
    ]
    # An error the writer already recorded in Errors & Corrections is not added twice.
    recorded = render_working_memory(
        {
            "Session Title": "Orders total formatting fix",
            "Errors & Corrections": "- test_total: AssertionError: expected '42.50', got '42.5'",
        }
    )
    wm2 = WorkingMemory(
        ScriptedChatModel(respond=lambda m, t, c: recorded), config=CONFIG, store=InMemoryStore()
    )
    _compact(wm2, thread_config("errors2"), messages)
    errors2 = parse_working_memory(wm2.get_working_memory(thread_config("errors2")))[
        "Errors & Corrections"
    ]
    assert errors2.splitlines() == [
        "- test_total: AssertionError: expected '42.50', got '42.5'",
        "- KeyError: 'currency' (reported by run_tests)",
    ]


def test_a_later_writer_may_drop_an_error_the_error_trail_added(run_config):
    code = "KeyError: 'currency' (reported by run_tests)"
    rounds = {"n": 0}

    def writer(messages, tools, tool_choice):
        rounds["n"] += 1
        if not is_update_call(tools):
            return wm_document(["FACT-001"])
        return {
            "content": "",
            "tool_calls": [
                {
                    "name": "update_working_memory",
                    "args": {
                        "sections": {
                            "Errors & Corrections": {
                                "op": "UPDATE",
                                "content": "- CI runner lacked LANG; the KeyError came from it",
                            }
                        }
                    },
                }
            ],
        }

    wm = WorkingMemory(ScriptedChatModel(respond=writer), config=CONFIG, store=InMemoryStore())
    call = {"name": "run_tests", "args": {"cmd": "pytest"}, "id": "c1"}
    first = [
        HumanMessage("run the tests FACT-001", id="h1"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage(
            "Traceback (most recent call last):\nKeyError: 'currency'\n", tool_call_id="c1", id="t1"
        ),
        AIMessage("it failed", id="a1b"),
    ]
    _compact(wm, run_config, first)
    errors = parse_working_memory(wm.get_working_memory(run_config))["Errors & Corrections"]
    assert code in errors
    _compact(
        wm,
        run_config,
        [*first, HumanMessage("the runner lacked LANG", id="h2"), AIMessage("set it", id="a2")],
    )
    text = wm.get_working_memory(run_config)
    errors = parse_working_memory(text)["Errors & Corrections"]
    assert code not in errors
    assert "CI runner lacked LANG" in errors
    latest = wm.list_archives(run_config)[-1].metadata
    reasons = [d["reason"] for d in latest["decisions"]]
    assert any("code had added" in r for r in reasons)
