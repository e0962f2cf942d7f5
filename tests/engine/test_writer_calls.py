"""The writer's model calls against a real ChatOpenAI and a fake OpenAI-compatible server
(what a real writer behind an OpenAI-compatible server needs: max_tokens and timeouts by
default, cut-off replies detected whatever the finish reason, the schema per provider,
context-length errors recognised and answered with a smaller prompt)."""

from __future__ import annotations

import json
import re
from typing import Any
from uuid import uuid4

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from tests.common import thread_config
from tests.fake_openai import Answer, FakeOpenAIServer, chat_openai, prompt_of
from wm_langgraph.config import (
    DEFAULT_MODEL_TIMEOUT_SECONDS,
    DEFAULT_WRITER_MAX_TOKENS,
    WorkingMemoryConfig,
)
from wm_langgraph.document.sections import SECTIONS, is_working_memory, render_working_memory
from wm_langgraph.writer.openai import chat_openai_from_env
from wm_langgraph.writer.provider import classify_error, context_overflow, output_token_limit

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False)
MARK_RE = re.compile(r"MARK-\d+")


def _turn(i: int, extra: str = "") -> list[Any]:
    return [
        HumanMessage(f"turn {i}: MARK-{i:03d} {extra}", id=f"h{i}-{uuid4().hex[:6]}"),
        AIMessage(f"ack {i}", id=f"a{i}-{uuid4().hex[:6]}"),
    ]


def _document(marks: list[str], issues: list[str] = ()) -> str:  # type: ignore[assignment]
    body = dict.fromkeys(SECTIONS, "")
    body["Session Title"] = "Marker session for the writer tests"
    body["Current State"] = "Folding the marker turns."
    body["Key Facts & Decisions"] = "\n".join(f"- {m} noted" for m in marks)
    body["Open Issues"] = "\n".join(f"- {i}" for i in issues)
    return render_working_memory(body)


def _folded(request: dict[str, Any]) -> str:
    text = prompt_of(request)
    match = re.search(r"<messages>(.*)</messages>", text, re.S)
    return match.group(1) if match else text


def _healthy(request: dict[str, Any]) -> Answer:
    marks = sorted(set(MARK_RE.findall(_folded(request))))
    if not request.get("tools"):
        return Answer(text=_document(marks))
    sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
    sections["Key Facts & Decisions"] = {"op": "APPEND", "items": [f"{m} noted" for m in marks]}
    return Answer(tool_args=json.dumps({"sections": sections}))


def _is_update(request: dict[str, Any]) -> bool:
    return bool(request.get("tools")) and not _is_capture(request)


def _is_capture(request: dict[str, Any]) -> bool:
    names = [t.get("function", {}).get("name") for t in request.get("tools") or []]
    return "capture_working_memory" in names


# -- max_tokens, timeout, schema per provider --------------------------------------------------


def test_every_writer_call_sends_max_tokens_sized_to_the_document_budget(memory):
    server = FakeOpenAIServer(_healthy)
    wm = memory(chat_openai(server, base_url="https://api.openai.com/v1"), config=CONFIG)
    cfg = thread_config("max-tokens")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    assert len(server.requests) == 2  # create, then update
    for body in server.requests:
        assert body["max_completion_tokens"] == DEFAULT_WRITER_MAX_TOKENS
        assert "max_tokens" not in body  # OpenAI proper reads max_completion_tokens only
    assert server.requests[1]["tools"][0]["function"]["strict"] is True


def test_an_openai_compatible_server_also_gets_plain_max_tokens_and_the_reference_schema(memory):
    server = FakeOpenAIServer(_healthy)
    wm = memory(chat_openai(server, base_url="http://127.0.0.1:8080/v1"), config=CONFIG)
    cfg = thread_config("compat")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    update = server.requests[1]
    assert update["max_tokens"] == update["max_completion_tokens"] == DEFAULT_WRITER_MAX_TOKENS
    (tool,) = update["tools"]
    assert "strict" not in tool["function"]
    assert "oneOf" in json.dumps(tool["function"]["parameters"])
    assert update["tool_choice"] == {
        "type": "function",
        "function": {"name": "update_working_memory"},
    }


def test_a_model_that_sets_its_own_max_tokens_keeps_it(memory):
    server = FakeOpenAIServer(_healthy)
    model = chat_openai(server, base_url="https://api.openai.com/v1", max_tokens=3000)
    wm = memory(model, config=CONFIG)
    wm.compact({"messages": _turn(1)}, thread_config("own"))
    assert server.requests[0]["max_completion_tokens"] == 3000


def test_writer_max_tokens_and_context_are_settings(memory):
    server = FakeOpenAIServer(_healthy)
    config = CONFIG.replace(writer_max_tokens=9000, writer_context_tokens=8192)
    wm = memory(chat_openai(server), config=config)
    wm.compact({"messages": _turn(1)}, thread_config("settings"))
    assert server.requests[0]["max_tokens"] == 4096  # at most half the declared context


def test_chat_openai_from_env_sets_a_timeout_and_max_tokens():
    model = chat_openai_from_env({"OPENAI_API_KEY": "sk-test"})
    assert model is not None
    assert model.request_timeout == DEFAULT_MODEL_TIMEOUT_SECONDS  # type: ignore[attr-defined]
    assert model.max_tokens == DEFAULT_WRITER_MAX_TOKENS  # type: ignore[attr-defined]


def test_the_default_writer_timeout_is_stated():
    assert WorkingMemoryConfig().model_timeout_seconds == DEFAULT_MODEL_TIMEOUT_SECONDS == 120.0
    assert "120" in (WorkingMemoryConfig.__doc__ or "")


def test_a_refused_max_tokens_is_retried_with_the_providers_maximum_and_remembered(memory):
    def respond(request: dict[str, Any]) -> Answer:
        if request.get("max_completion_tokens", 0) > 4096:
            return Answer(
                status=400,
                error={
                    "message": "max_tokens is too large: 14000. This model supports at most "
                    "4096 completion tokens, whereas you provided 14000.",
                    "type": "invalid_request_error",
                    "code": None,
                },
            )
        return _healthy(request)

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server, base_url="https://api.openai.com/v1"), config=CONFIG)
    cfg = thread_config("output-cap")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    sent = [body["max_completion_tokens"] for body in server.requests]
    assert sent == [14000, 4096, 4096]  # refused once, then the maximum from the start
    assert {"MARK-001", "MARK-002"} <= set(MARK_RE.findall(wm.get_working_memory(cfg)))


# -- a reply cut at the limit, whatever the finish reason says ---------------------------------


def _cut_update(request: dict[str, Any], *, finish: str = "tool_calls") -> Answer:
    """A forced tool call that ran into max_tokens after Key Facts: the server still says
    "tool_calls" (grammar-forced llama.cpp does), the JSON is cut inside Open Issues."""
    marks = sorted(set(MARK_RE.findall(_folded(request))))
    sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
    sections["Key Facts & Decisions"] = {"op": "APPEND", "items": [f"{m} noted" for m in marks]}
    sections["Open Issues"] = {"op": "APPEND", "items": ["TODO rotate the staging key"]}
    text = json.dumps({"sections": sections})
    cut = text.index("rotate the")
    limit = request.get("max_tokens") or request.get("max_completion_tokens")
    return Answer(tool_args=text[:cut], finish_reason=finish, completion_tokens=limit)


@pytest.mark.parametrize("finish", ["tool_calls", "length"])
def test_a_cut_off_update_keeps_its_complete_part_and_retries_only_the_rest(finish, memory):
    def respond(request: dict[str, Any]) -> Answer:
        if not _is_update(request):
            return _healthy(request)
        if "could not be read completely" in prompt_of(request):
            sections = {name: {"op": "KEEP"} for name in SECTIONS}
            sections["Open Issues"] = {"op": "APPEND", "items": ["TODO rotate the staging key"]}
            return Answer(tool_args=json.dumps({"sections": sections}))
        return _cut_update(request, finish=finish)

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server), config=CONFIG)
    cfg = thread_config(f"cut-{finish}")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    retry = prompt_of(server.requests[2])
    assert "could not be read completely" in retry
    assert "Open Issues" in retry.rsplit("could not be read completely", 1)[1]
    text = wm.get_working_memory(cfg)
    assert "MARK-002 noted" in text  # the complete part of the cut reply
    assert "TODO rotate the staging key" in text  # the retried section
    archive = wm.list_archives(cfg)[1]
    assert archive.status == "done"
    assert archive.metadata["fallback"] == "targeted_retry"


def test_a_reply_cut_twice_is_not_taken_for_keep_the_create_fallback_records_it(memory):
    def respond(request: dict[str, Any]) -> Answer:
        if _is_update(request):
            return _cut_update(request)  # the retry is cut too
        marks = sorted(set(MARK_RE.findall(_folded(request))))
        issues = ["TODO rotate the staging key"] if "MARK-002" in marks else []
        return Answer(text=_document(marks, issues))

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server), config=CONFIG)
    cfg = thread_config("cut-twice")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    assert [bool(b.get("tools")) for b in server.requests] == [False, True, True, False]
    assert "TODO rotate the staging key" in wm.get_working_memory(cfg)
    assert wm.list_archives(cfg)[1].metadata["fallback"] == "unreadable_sections"


def test_complete_json_at_the_output_limit_counts_as_cut_off(memory):
    # The JSON closes, but the reply used every allowed token and sections are missing: a
    # grammar that closed the object at the limit. Missing sections are retried, not KEEP.
    def respond(request: dict[str, Any]) -> Answer:
        if not _is_update(request):
            return _healthy(request)
        if "could not be read completely" in prompt_of(request):
            sections = {name: {"op": "KEEP"} for name in SECTIONS}
            sections["Open Issues"] = {"op": "APPEND", "items": ["TODO rerun the migration"]}
            return Answer(tool_args=json.dumps({"sections": sections}))
        args = {"sections": {"Session Title": {"op": "KEEP"}}}
        limit = request.get("max_tokens") or request["max_completion_tokens"]
        return Answer(tool_args=json.dumps(args), completion_tokens=limit)

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server), config=CONFIG)
    cfg = thread_config("limit")
    wm.compact({"messages": _turn(1)}, cfg)
    wm.compact({"messages": _turn(2)}, cfg)
    writes = [r for r in server.requests if not _is_capture(r)]  # not the capture follow-up
    assert len(writes) == 3
    assert "TODO rerun the migration" in wm.get_working_memory(cfg)


def test_a_create_reply_cut_at_the_limit_leaves_an_extracted_working_memory(memory):
    """A cut create reply is not taken as the document (its end is missing), nor does it end
    the round: a writer that runs every create call to its limit (a small real model did)
    would otherwise never leave a Working Memory. The round's document is extracted instead,
    marked so, and the archive is done."""

    def respond(request: dict[str, Any]) -> Answer:
        return Answer(text=_document(["MARK-001"])[:200], finish_reason="length")

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server), config=CONFIG)
    cfg = thread_config("create-cut")
    wm.compact({"messages": _turn(1)}, cfg)
    document = wm.get_working_memory(cfg)
    assert is_working_memory(document)
    assert "Marker session" not in document  # the cut reply is not the document
    assert "MARK-001" in document  # what the turn said is
    (archive,) = wm.list_archives(cfg)
    assert archive.status == "done"
    assert archive.metadata["fallback"] == "extractive"
    assert "cut off" in archive.metadata["metrics"]["extractive_reason"]


# -- context-length errors: recognised, answered with less ---------------------------------------


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def _bad_request(message: str, **body: Any) -> openai.BadRequestError:
    payload = {"message": message, **body}
    response = httpx.Response(400, json={"error": payload}, request=_request())
    return openai.BadRequestError(message, response=response, body=payload)


OVERFLOWS = {
    "openai": (
        _bad_request(
            "This model's maximum context length is 32768 tokens. However, your messages "
            "resulted in 40211 tokens. Please reduce the length of the messages.",
            type="invalid_request_error",
            code="context_length_exceeded",
        ),
        (32768, 40211, None, None),
    ),
    "vllm": (
        _bad_request(
            "This model's maximum context length is 16384 tokens. However, you requested "
            "122946 tokens (112946 in the messages, 10000 in the completion). Please reduce "
            "the length of the messages or completion."
        ),
        (16384, 122946, 112946, 10000),
    ),
    "vllm-max-tokens": (
        _bad_request(
            "'max_tokens' or 'max_completion_tokens' is too large: 14000. This model's "
            "maximum context length is 8192 tokens and your request has 3000 input tokens "
            "(14000 > 8192 - 3000)."
        ),
        (8192, None, 3000, 14000),
    ),
    "llama.cpp": (
        _bad_request(
            "the request exceeds the available context size, try increasing it",
            code=400,
            type="exceed_context_size_error",
            n_prompt_tokens=14429,
            n_ctx=8192,
        ),
        (8192, 14429, None, None),
    ),
    "llama.cpp-older": (
        openai.InternalServerError(
            "request (4476 tokens) exceeds the available context size (4096 tokens)",
            response=httpx.Response(500, request=_request()),
            body=None,
        ),
        (4096, 4476, None, None),
    ),
    "llama-cpp-python": (
        ValueError("Requested tokens (2285) exceed context window of 2048"),
        (2048, 2285, None, None),
    ),
    "ollama": (
        _bad_request("input length exceeds the context length"),
        (None, None, None, None),
    ),
    "anthropic": (
        RuntimeError("prompt is too long: 210000 tokens > 200000 maximum"),
        (200000, 210000, None, None),
    ),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_context_length_errors_of_each_provider_are_recognised(name):
    exc, (limit, requested, prompt, completion) = OVERFLOWS[name]
    found = context_overflow(exc)
    assert found is not None
    assert (found.limit, found.requested, found.prompt, found.completion) == (
        limit,
        requested,
        prompt,
        completion,
    )
    assert classify_error(exc) == "overflow"
    wrapped = RuntimeError("wrapper")
    wrapped.__cause__ = exc
    assert context_overflow(wrapped) == found


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_bad_request("Invalid 'messages[0].content': string too weird"), "rejected"),
        (
            openai.RateLimitError(
                "slow down", response=httpx.Response(429, request=_request()), body=None
            ),
            "transient",
        ),
        (
            openai.InternalServerError(
                "boom", response=httpx.Response(503, request=_request()), body=None
            ),
            "transient",
        ),
        (openai.APITimeoutError(request=_request()), "transient"),
        (RuntimeError("model down"), "transient"),
    ],
)
def test_other_errors_are_rejected_or_transient(exc, kind):
    assert context_overflow(exc) is None
    assert classify_error(exc) == kind


def test_output_limits_named_by_providers_are_read():
    openai_text = (
        "max_tokens is too large: 14000. This model supports at most 4096 completion "
        "tokens, whereas you provided 14000."
    )
    assert output_token_limit(_bad_request(openai_text)) == 4096
    anthropic = RuntimeError(
        "max_tokens: 14000 > 8192, which is the maximum allowed number of output tokens"
    )
    assert output_token_limit(anthropic) == 8192
    assert output_token_limit(RuntimeError("model down")) is None


def test_a_context_length_error_is_answered_with_a_smaller_prompt_never_the_same_one(memory):
    limit = 3000  # the writer's context, in the counter's tokens

    def respond(request: dict[str, Any]) -> Answer:
        size = len(prompt_of(request)) // 4
        if size > limit:
            return Answer(
                status=400,
                error={
                    "message": f"This model's maximum context length is {limit} tokens. "
                    f"However, your messages resulted in {size} tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                },
            )
        return _healthy(request)

    server = FakeOpenAIServer(respond)
    wm = memory(chat_openai(server), config=CONFIG, token_counter=lambda t: len(t) // 4)
    cfg = thread_config("overflow")
    wm.compact({"messages": _turn(1)}, cfg)
    # three turns of about 2,500 tokens each: together far over the writer's context
    messages = [m for i in range(2, 5) for m in _turn(i, "x" * 10_000)]
    wm.compact({"messages": messages}, cfg)
    prompts = [prompt_of(body) for body in server.requests]
    assert len(prompts) == len(set(prompts)), "the same prompt was sent twice"
    assert all(a.status == "done" for a in wm.list_archives(cfg))
    assert {f"MARK-{i:03d}" for i in range(1, 5)} <= set(
        MARK_RE.findall(wm.get_working_memory(cfg))
    )
    assert wm.phase2_status(cfg)["consecutive_failures"] == 0  # not a failure: sent smaller
