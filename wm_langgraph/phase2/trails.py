"""The code trails: paths and errors the folded messages' tools report, kept by our code.

The **artifact trail** (:func:`extract_paths_from_messages`) lists the file paths in tool-call
arguments and tool results, for Files & Context (behaviour §5.8: every summariser measured scores
worst on "which files were touched"). The **error trail** (:func:`extract_errors_from_messages`)
does the same for errors, for Errors & Corrections, and for the same reason: a small real writer
(Qwen2.5-Coder-0.5B-Instruct) folded a failing test's output into its notes as "the user has
encountered several errors" and the exact error never reached the Working Memory. The commit
appends each error a folded tool result reported that the merged Errors & Corrections does not
mention yet; the append goes through the guards like any operation.

Recognised (tool results only; user and assistant prose is the model's to record): pytest's
``FAILED <test> - <message>`` summary lines and ``E   <Name>Error: ...`` lines, and the final
``<Name>Error: ...`` / ``<Name>Exception: ...`` line of a Python traceback.

Text from tools is data (provenance). An error line that reads as an instruction to the
assistant (:func:`~wm_langgraph.document.text.provenance.reads_as_instruction`: a prompt
injection dressed as ``AssertionError: ASSISTANT INSTRUCTION: …``) is never copied; each error
is quoted with its source (``<error> (reported by <tool>)``), at most :data:`MAX_ERRORS` per
round and :data:`MAX_ERROR_CHARS` characters each.

A path is captured when the conversation acts on it: a tool call's arguments (read, written,
run), a line of a tool result that says it acted on it (``wrote docs/guide.md``, ``FAILED
tests/…``), or a sentence of the user or the assistant that names it. A listing (a tool result
line that only names paths, or a line of prose that is nothing but a path) gives none: one
result listing 300 ``node_modules/…`` files beside ``~/.ssh/id_rsa`` once put all of them into
Files & Context. At most :data:`MAX_PATHS` per round, each at most :data:`MAX_PATH_CHARS` long.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    ToolMessage,
)

from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.text.provenance import reads_as_instruction
from wm_langgraph.messages import content_text, safe_str

__all__ = [
    "MAX_ERRORS",
    "MAX_ERROR_CHARS",
    "MAX_PATHS",
    "MAX_PATH_CHARS",
    "extract_errors_from_messages",
    "extract_paths_from_messages",
    "missing_errors",
    "tool_result_lines",
    "without_relayed_lines",
]

_FAILED_RE = re.compile(r"^FAILED[ \t]+(?P<test>\S+)[ \t]+-[ \t]+(?P<error>.+)$")
_ERROR_RE = re.compile(
    r"^(?:E[ \t]+)?(?P<error>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::[ \t]*.*)?)$"
)
_FAILED_PREFIX = re.compile(r"^\S+::\S+: ")
_SOURCE_RE = re.compile(r" \(reported by [^()\n]{1,80}\)$")
MAX_ERRORS = 8
"""The most errors the error trail takes from one round's tool results."""
MAX_ERROR_CHARS = 300
"""The longest error text the error trail copies (characters)."""
MAX_PATHS = 32
"""The most paths the artifact trail takes from one round."""
MAX_PATH_CHARS = 200
"""The longest path the artifact trail copies (characters); a longer one is left out."""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _source(message: ToolMessage, calls: Mapping[str, str]) -> str:
    """The name of the tool that returned ``message`` (its own, or its call's), made plain."""
    name = message.name if isinstance(message.name, str) and message.name.strip() else ""
    name = name or calls.get(message.tool_call_id, "")
    return re.sub(r"[^\w .:/-]", "", name)[:60].strip() or "a tool"


def extract_errors_from_messages(messages: Iterable[BaseMessage]) -> list[str]:
    """Errors in tool results, in order, unique; ``<test>: <error>`` for a pytest failure; each
    quoted with its source (``<error> (reported by <tool>)``); never a line that reads as an
    instruction to the assistant."""
    found: list[tuple[str, str]] = []
    calls: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls or []:
                if isinstance(call.get("id"), str) and isinstance(call.get("name"), str):
                    calls[str(call["id"])] = str(call["name"])
        if not isinstance(message, ToolMessage):
            continue
        source = _source(message, calls)
        for raw in content_text(message.content).splitlines():
            line = raw.strip()
            failed = _FAILED_RE.match(line)
            if failed:
                item = f"{failed.group('test')}: {failed.group('error').strip()}"
            else:
                error = _ERROR_RE.match(line)
                if not error:
                    continue
                item = error.group("error").strip()
            if reads_as_instruction(item):
                continue  # text from a tool is data: an injected "error" is never copied
            item = item[:MAX_ERROR_CHARS]
            # One item per error: a summary line repeats the E line's message, and vice versa.
            olds = [old for old, _ in found]
            if any(_norm(item) in _norm(old) or _norm(old) in _norm(item) for old in olds):
                found = [
                    (old, src) if _norm(item) in _norm(old) else (item, src) for old, src in found
                ]
                continue
            found.append((item, source))
    quoted = [f"{item} (reported by {source})" for item, source in found]
    return list(dict.fromkeys(quoted))[:MAX_ERRORS]


def missing_errors(errors: Iterable[str], body: str) -> list[str]:
    """The errors whose message the section body does not contain (case and spacing ignored).

    For ``<test>: <error>`` items the error message alone is enough to count as present; the
    ``(reported by …)`` quote is not looked for.
    """
    text = _norm(body)
    missing: list[str] = []
    for item in errors:
        bare = _SOURCE_RE.sub("", item)
        message = bare.split(": ", 1)[1] if _FAILED_PREFIX.match(bare) else bare
        if _norm(message) not in text:
            missing.append(item)
    return missing


def _string_leaves(value: object) -> Iterable[str]:
    """Every string inside a JSON-like value (keys excluded), depth first, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _string_leaves(item)


_ACTED_RE = re.compile(
    r"\b(?:wrote|written|writing|saved|saving|created|creating|modified|updated|edited|"
    r"patched|changed|deleted|removed|renamed|moved|copied|read|reading|opened|loaded|"
    r"compiled|ran|running|executed|executing|generated|formatted|installed)\b"
    r"|^(?:FAILED|ERROR|PASSED)\s|已(?:写入|保存|创建|修改|删除|读取)",
    re.IGNORECASE,
)
_MAX_PROSE_PATHS = 8  # per message: more is a pasted listing, not a file being named


def _acted_lines(text: str) -> Iterable[str]:
    """The lines of a tool result that say the tool acted on something."""
    for line in text.splitlines():
        if _ACTED_RE.search(line.strip()):
            yield line


def _named_lines(text: str) -> Iterable[str]:
    """The lines of a user's or the assistant's message that say something besides paths."""
    for line in text.splitlines():
        rest = line
        for path in extract_paths(line):
            rest = rest.replace(path, " ")
        if re.search(r"[^\W\d_]{2,}", rest):
            yield line


# A short label before a relayed line: "Done: ", "Result: ", "- Output: ".
_RELAY_LEAD_RE = re.compile(r"^(?:[-*•][ \t]+)?(?:[^\W\d_]+(?: [^\W\d_]+){0,2}:[ \t]+)?")


def _line_key(line: str) -> str:
    return " ".join(line.split()).casefold().strip(" .")


def tool_result_lines(messages: Iterable[BaseMessage]) -> frozenset[str]:
    """The lines of the tool results among ``messages`` (spacing, case and end dots folded)."""
    lines: set[str] = set()
    for message in messages:
        if isinstance(message, (ToolMessage, FunctionMessage)):
            lines.update(k for k in map(_line_key, content_text(message.content).splitlines()) if k)
    return frozenset(lines)


def without_relayed_lines(text: str, tool_lines: frozenset[str]) -> str:
    """``text`` without its lines that only repeat a tool result's line ("Done: 283 passed"
    after a tool printed "283 passed"): a relay is the tool's data, not a statement of the
    speaker, and gives neither a unit nor a named path (the trails read the tool itself)."""
    if not tool_lines:
        return text

    def relays(line: str) -> bool:
        key = _line_key(line)
        if not key:
            return False
        rest = _line_key(_RELAY_LEAD_RE.sub("", line.strip(), count=1))
        return key in tool_lines or (bool(rest) and rest in tool_lines)

    return "\n".join(line for line in text.splitlines() if not relays(line))


def _trail_texts(
    message: BaseMessage, tool_lines: frozenset[str] = frozenset()
) -> Iterable[tuple[str, int | None]]:
    """(text, the most paths it may give) for the parts of ``message`` that act on paths;
    the assistant's lines that relay a tool result (``tool_lines``) name none."""
    if isinstance(message, AIMessage):
        for call in message.tool_calls or []:
            for leaf in _string_leaves(call.get("args", {})):
                yield leaf, None
        for bad in message.invalid_tool_calls or []:
            yield safe_str(bad.get("args") or ""), None
        legacy = (message.additional_kwargs or {}).get("function_call")
        if isinstance(legacy, Mapping):
            raw = legacy.get("arguments", "")
            try:
                for leaf in _string_leaves(json.loads(raw)):
                    yield leaf, None
            except (TypeError, ValueError):
                yield safe_str(raw), None
    if isinstance(message, (ToolMessage, FunctionMessage)):
        for line in _acted_lines(content_text(message.content)):
            yield line, None
    elif isinstance(message, (HumanMessage, AIMessage)):
        text = content_text(message.content)
        if isinstance(message, AIMessage):
            text = without_relayed_lines(text, tool_lines)
        named = "\n".join(_named_lines(text))
        if named:
            yield named, _MAX_PROSE_PATHS


def extract_paths_from_messages(messages: Iterable[BaseMessage]) -> list[str]:
    """The artifact trail: the paths the conversation acts on, in order, unique, bounded.

    Tool-call arguments are scanned value by value (so JSON escaping cannot mangle a path);
    tool results only on lines that say the tool acted on something; the user's and the
    assistant's prose on lines that say more than paths, at most a few per message. Path
    detection is :func:`wm_langgraph.document.text.extract_paths`. At most :data:`MAX_PATHS`
    paths, each at most :data:`MAX_PATH_CHARS` characters.

    Args:
        messages: The messages being folded into the Working Memory.
    """
    seen: set[str] = set()
    paths: list[str] = []
    messages = list(messages)
    relayed = tool_result_lines(messages)
    for message in messages:
        for text, most in _trail_texts(message, relayed):
            if not text:
                continue
            found = [p for p in extract_paths(text) if len(p) <= MAX_PATH_CHARS]
            for path in found if most is None else found[:most]:
                if path not in seen:
                    seen.add(path)
                    paths.append(path)
                    if len(paths) >= MAX_PATHS:
                        return paths
    return paths
