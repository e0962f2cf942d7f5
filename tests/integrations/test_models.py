"""Model resolution and update-tool binding, checked on the request payload a client would send.

No network: ChatOpenAI / AzureChatOpenAI / ChatAnthropic are built with fake keys and only asked
for ``_get_request_payload`` (what they would POST), never invoked.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableBinding
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from wm_langgraph.document.protocol import UPDATE_TOOL_NAME
from wm_langgraph.testing import ScriptedChatModel, tool_reply
from wm_langgraph.writer.binding import (
    ToolCallingNotSupportedError,
    bind_update_tool,
    resolve_default_model,
)
from wm_langgraph.writer.openai import DEFAULT_OPENAI_MODEL, chat_openai_from_env, redact_url

FAKE_KEY = "sk-test-not-a-real-key-0123456789"
ENV_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "WM_LANGGRAPH_MODEL")


@pytest.fixture(autouse=True)
def _no_socket_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    # langchain-openai probes TCP keep-alive options on a throwaway socket at construction;
    # sockets are disabled in tests, so switch the probe off instead of tripping the guard.
    monkeypatch.setenv("LANGCHAIN_OPENAI_TCP_KEEPALIVE", "0")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _payload(bound: Any) -> dict[str, Any]:
    assert isinstance(bound, RunnableBinding)
    model = bound.bound
    payload: dict[str, Any] = model._get_request_payload([HumanMessage("hi")], **bound.kwargs)
    return payload


def _keys_anywhere(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            found |= _keys_anywhere(value)
    elif isinstance(node, list):
        for item in node:
            found |= _keys_anywhere(item)
    return found


# --- resolve_default_model -------------------------------------------------------------------


def test_key_in_env_gives_chat_openai_with_our_model_name_and_base_url(clean_env, caplog):
    clean_env.setenv("OPENAI_API_KEY", FAKE_KEY)
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    clean_env.setenv("WM_LANGGRAPH_MODEL", "qwen2.5-7b-instruct")
    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        model = resolve_default_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "qwen2.5-7b-instruct"
    assert model.openai_api_base == "http://localhost:8000/v1"
    assert str(model.root_client.base_url).rstrip("/") == "http://localhost:8000/v1"
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == FAKE_KEY
    assert "qwen2.5-7b-instruct" in caplog.text
    assert "localhost:8000" in caplog.text
    assert FAKE_KEY not in caplog.text


def test_older_openai_api_base_variable_is_honoured_too(clean_env):
    clean_env.setenv("OPENAI_API_KEY", FAKE_KEY)
    clean_env.setenv("OPENAI_API_BASE", "http://127.0.0.1:11434/v1")
    model = resolve_default_model()
    assert isinstance(model, ChatOpenAI)
    assert str(model.root_client.base_url).rstrip("/") == "http://127.0.0.1:11434/v1"


def test_default_model_name_and_endpoint_without_overrides(clean_env, caplog):
    clean_env.setenv("OPENAI_API_KEY", FAKE_KEY)
    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        model = resolve_default_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == DEFAULT_OPENAI_MODEL
    assert "api.openai.com" in str(model.root_client.base_url)
    assert FAKE_KEY not in caplog.text


def test_credentials_in_base_url_never_reach_the_log(clean_env, caplog):
    clean_env.setenv("OPENAI_API_KEY", FAKE_KEY)
    clean_env.setenv("OPENAI_BASE_URL", "https://user:hunter2@proxy.example:8443/v1?token=s3cret")
    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        chat_openai_from_env()
    assert "proxy.example:8443/v1" in caplog.text
    assert "hunter2" not in caplog.text
    assert "s3cret" not in caplog.text


def test_redact_url_keeps_only_scheme_host_port_path():
    assert redact_url("http://a:b@h:1/p?q=1#f") == "http://h:1/p"
    assert redact_url("http://[::1") == "<unparseable url>"


def test_blank_key_counts_as_no_key(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "   ")
    assert chat_openai_from_env() is None


def test_no_key_gives_the_offline_model_and_says_so(clean_env, caplog):
    from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        model = resolve_default_model()
    assert isinstance(model, OfflineWorkingMemoryModel)
    assert "offline" in caplog.text.lower()


def test_a_server_address_without_a_key_uses_that_server(clean_env, caplog):
    # A local OpenAI-compatible server (llama.cpp, Ollama, vLLM) needs no key (with
    # OPENAI_BASE_URL set, `demo --model auto` still used the offline model).
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    clean_env.setenv("WM_LANGGRAPH_MODEL", "llama3.1")
    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        model = resolve_default_model(timeout=42.0)
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "llama3.1"
    assert str(model.root_client.base_url).rstrip("/") == "http://localhost:11434/v1"
    assert model.request_timeout == 42.0
    assert "placeholder key" in caplog.text


def test_a_model_name_alone_is_flagged_and_ignored(clean_env, caplog):
    clean_env.setenv("WM_LANGGRAPH_MODEL", "llama3.1")
    with caplog.at_level(logging.WARNING, logger="wm_langgraph"):
        model = resolve_default_model()
    assert not isinstance(model, ChatOpenAI)
    assert "WM_LANGGRAPH_MODEL set but neither OPENAI_API_KEY nor OPENAI_BASE_URL" in caplog.text


# --- bind_update_tool: OpenAI strict ------------------------------------------------------------


def _assert_strict_chat_completions_payload(payload: dict[str, Any]) -> None:
    assert payload["parallel_tool_calls"] is False
    assert payload["tool_choice"] == {"type": "function", "function": {"name": UPDATE_TOOL_NAME}}
    (tool,) = payload["tools"]
    function = tool["function"]
    assert function["name"] == UPDATE_TOOL_NAME
    assert function["strict"] is True
    params = function["parameters"]
    keys = _keys_anywhere(params)
    assert "oneOf" not in keys
    assert "default" not in keys
    assert params["additionalProperties"] is False
    assert params["required"] == ["sections", "abstracts"]  # strict: every property, nullable
    assert "null" in params["properties"]["abstracts"]["type"]
    sections = params["properties"]["sections"]
    assert sections["additionalProperties"] is False
    assert set(sections["required"]) == set(sections["properties"])
    assert len(sections["required"]) == 7


def test_chat_openai_gets_strict_schema_forced_by_name_without_parallel_calls():
    model = ChatOpenAI(model="gpt-4.1-mini", api_key=FAKE_KEY)  # type: ignore[arg-type]
    _assert_strict_chat_completions_payload(_payload(bind_update_tool(model)))


def test_openai_compatible_server_gets_the_reference_schema_forced_by_name(clean_env):
    # A server that turns the schema into a grammar (llama.cpp, vLLM, Ollama) loops
    # on the strict form; only OpenAI proper and Azure enforce strict schemas natively.
    clean_env.setenv("OPENAI_API_KEY", FAKE_KEY)
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    clean_env.setenv("WM_LANGGRAPH_MODEL", "llama3.1")
    model = resolve_default_model()
    payload = _payload(bind_update_tool(model))
    assert payload["model"] == "llama3.1"
    assert payload["tool_choice"] == {"type": "function", "function": {"name": UPDATE_TOOL_NAME}}
    (tool,) = payload["tools"]
    assert "strict" not in tool["function"]
    assert "oneOf" in json.dumps(tool["function"]["parameters"])


def test_azure_and_subclasses_are_treated_as_openai():
    class MyChatOpenAI(ChatOpenAI):
        pass

    azure = AzureChatOpenAI(
        azure_endpoint="https://example.openai.azure.com/",
        azure_deployment="wm",
        api_version="2024-10-21",
        api_key=FAKE_KEY,  # type: ignore[arg-type]
    )
    sub = MyChatOpenAI(model="gpt-4.1-mini", api_key=FAKE_KEY)  # type: ignore[arg-type]
    for model in (azure, sub):
        _assert_strict_chat_completions_payload(_payload(bind_update_tool(model)))


def test_responses_api_payload_is_strict_and_forced_too():
    model = ChatOpenAI(model="gpt-4.1-mini", api_key=FAKE_KEY, use_responses_api=True)  # type: ignore[arg-type]
    payload = _payload(bind_update_tool(model))
    assert payload["parallel_tool_calls"] is False
    (tool,) = payload["tools"]
    assert tool["name"] == UPDATE_TOOL_NAME
    assert tool["strict"] is True
    assert "oneOf" not in _keys_anywhere(tool["parameters"])
    assert payload["tool_choice"] == {"type": "function", "name": UPDATE_TOOL_NAME}


# --- bind_update_tool: other providers ------------------------------------------------------


def test_other_models_get_the_reference_schema_forced_by_name():
    model = ScriptedChatModel(
        replies=[tool_reply(UPDATE_TOOL_NAME, {"sections": {"Session Title": {"op": "KEEP"}}})]
    )
    reply = bind_update_tool(model).invoke([HumanMessage("update")])
    (record,) = model.bound
    assert record["tool_choice"] == UPDATE_TOOL_NAME
    assert "parallel_tool_calls" not in record["kwargs"]
    (tool,) = record["tools"]
    assert tool["function"]["name"] == UPDATE_TOOL_NAME
    assert "oneOf" in json.dumps(tool["function"]["parameters"])
    assert "strict" not in tool["function"]
    # the binding reaches the model call
    (call,) = model.calls
    assert call.tool_choice == UPDATE_TOOL_NAME
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["name"] == UPDATE_TOOL_NAME


def test_anthropic_payload_forces_the_tool_by_name():
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-sonnet-4-5", api_key=FAKE_KEY)  # type: ignore[arg-type,call-arg]
    payload = _payload(bind_update_tool(model))
    assert payload["tool_choice"]["type"] == "tool"
    assert payload["tool_choice"]["name"] == UPDATE_TOOL_NAME
    (tool,) = payload["tools"]
    assert tool["name"] == UPDATE_TOOL_NAME
    assert "oneOf" in json.dumps(tool["input_schema"])


def test_falls_back_to_any_when_a_tool_name_is_rejected():
    model = ScriptedChatModel(accepted_tool_choices=("any",))
    bind_update_tool(model)
    assert [r["tool_choice"] for r in model.bound] == ["any"]


def test_falls_back_to_required_after_any():
    model = ScriptedChatModel(accepted_tool_choices=("required",))
    bind_update_tool(model)
    assert [r["tool_choice"] for r in model.bound] == ["required"]


def test_binds_unforced_with_a_warning_when_no_choice_is_accepted(caplog):
    model = ScriptedChatModel(accepted_tool_choices=())
    with caplog.at_level(logging.WARNING, logger="wm_langgraph"):
        bind_update_tool(model)
    assert [r["tool_choice"] for r in model.bound] == [None]
    assert "unforced" in caplog.text


def test_model_without_tool_calling_is_a_clear_error():
    with pytest.raises(ToolCallingNotSupportedError, match="must support tool calling"):
        bind_update_tool(ScriptedChatModel(replies=["x"], tool_calling=False))
    assert issubclass(ToolCallingNotSupportedError, TypeError)
