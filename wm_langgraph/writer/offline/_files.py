"""Which files a transcript touched, and how: the Files & Context material of the offline model.

Private to ``wm_langgraph.writer.offline``. Path detection is
:func:`wm_langgraph.document.text.extract_paths` (the one the guards and the artifact trail
use), and which paths may be listed at all is the artifact trail's own rule
(:func:`session_files`: :mod:`wm_langgraph.document.text.session_paths`; a tool call's
arguments, a file tool's output, the user's own words; never a URL, a fetched page or pasted
text). This module decides what each tool call did to a path (read / edited / created / ran …)
and which of the paths seen in prose or tool output are worth a line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from wm_langgraph.document.text import extract_paths, is_url
from wm_langgraph.document.text.session_paths import Step, ToolCall, session_paths
from wm_langgraph.writer.offline._lang import Language
from wm_langgraph.writer.offline._transcript import ToolCallRecord, Turn

__all__ = [
    "FileNote",
    "call_paths",
    "command_of",
    "first_path",
    "note",
    "session_files",
    "tool_action",
    "worth_listing",
]

_I = re.IGNORECASE
_ACTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("edited", re.compile(r"edit|replace|patch|modify|update|insert|apply", _I)),
    ("created", re.compile(r"write|create|new|save|touch", _I)),
    ("deleted", re.compile(r"delete|remove|\brm\b|unlink", _I)),
    ("read", re.compile(r"read|cat|view|open|get|load|show|head", _I)),
    ("searched", re.compile(r"search|grep|find|glob|list|\bls\b", _I)),
    ("ran", re.compile(r"run|bash|shell|exec|command|terminal|test|pytest|python|sh\b", _I)),
)
_ACTION_ZH = {
    "edited": "编辑",
    "created": "创建",
    "deleted": "删除",
    "read": "读取",
    "searched": "搜索",
    "ran": "运行",
    "mentioned": "提及",
    "seen in output": "出现在输出中",
    "used": "使用",
    "referenced": "引用",
}
_COMMAND_KEYS = ("command", "cmd", "script", "shell")
# Argument names that say "this is the file the tool works on" (other arguments, such as a
# file's new content, only reference paths).
_TARGET_KEY_RE = re.compile(
    r"^(path|paths|file|files|filename|file_path|filepath|target|dir|"
    r"directory|src|dest|destination|source|url|uri)$",
    _I,
)


@dataclass(slots=True)
class FileNote:
    """One path and how the session touched it (in first-seen order)."""

    path: str
    actions: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)

    def describe(self, language: Language) -> str:
        """A Files & Context line: the path and what was done with it."""
        actions = self.actions or ["mentioned"]
        if language == "zh":
            done = "、".join(_ACTION_ZH.get(a, a) for a in actions)
        else:
            done = ", ".join(actions)
        via = f" (via {', '.join(self.tools)})" if self.tools else ""
        return f"`{self.path}` — {done}{via}"


def tool_action(call: ToolCallRecord, key: str) -> str:
    """What a tool call did to a path found in its argument ``key``."""
    if key in _COMMAND_KEYS:
        return "ran"
    if key and not _TARGET_KEY_RE.match(key):
        return "referenced"
    for action, pattern in _ACTIONS:
        if pattern.search(call.name):
            return action
    return "used"


def note(notes: dict[str, FileNote], path: str, action: str, tool: str) -> None:
    """Record ``action`` on ``path`` (by ``tool``) in ``notes``, keeping first-seen order."""
    entry = notes.setdefault(path, FileNote(path))
    if action not in entry.actions:
        entry.actions.append(action)
    if tool and tool not in entry.tools:
        entry.tools.append(tool)


def call_paths(call: ToolCallRecord) -> list[tuple[str, str]]:
    """(path, argument key) for every path in a tool call's arguments."""
    found: list[tuple[str, str]] = []
    for key, value in call.args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        found.extend((path, key) for path in extract_paths(text))
    return found


def command_of(call: ToolCallRecord) -> str:
    """The shell command a tool call ran (first line), or ``""``."""
    for key in _COMMAND_KEYS:
        value = call.args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().splitlines()[0]
    return ""


def first_path(call: ToolCallRecord) -> str:
    """The first path in a tool call's arguments, or ``""``."""
    paths = call_paths(call)
    return paths[0][0] if paths else ""


def session_files(turns: list[Turn]) -> set[str]:
    """The paths the session acted on (the artifact trail's rule): the only paths the offline
    writer may list in Files & Context."""
    steps = [
        Step(
            turn.role,
            turn.text,
            tuple(ToolCall(c.name, c.args) for c in turn.tool_calls),
            tool=turn.tool_name,
        )
        for turn in turns
    ]
    return {found.path for found in session_paths(steps)}


def worth_listing(path: str) -> bool:
    """Whether a path seen only in prose or tool output is worth a Files & Context line.

    File names with an extension (``src/app.py``, ``/var/log/app.log``) are; a URL (never a
    file), a route (``/healthz``), a slash phrase (``day/month/year``) or an attribute
    (``.status_code``) is not. A path the tools worked on is always listed (see
    :func:`call_paths`).
    """
    if is_url(path):
        return False
    name = path.rstrip("/").rsplit("/", 1)[-1]
    stem, _, ext = name.rpartition(".")
    return bool(stem) and bool(ext)
