"""The paths a session acted on: the one rule for every path code puts into Files & Context.

SPEC §10, behaviour §5.8: *paths come from what the session did*. The artifact trail
(``phase2/trails.py``) and the offline writer's Files & Context (``writer/offline``) both take
their paths from :func:`session_paths`, over the conversation as neutral :class:`Step` records.
A path is taken from

- **a tool call's arguments** — read, written, run: every string value, one by one (so JSON
  escaping cannot mangle a path);
- **the output of a tool that works on files** — its call's arguments name a path
  (:func:`names_file`: a path or a directory in any value but a query or a link, or a value
  under an argument named ``path``, ``file``, ``dir``, ``cwd`` …) — on the lines that say the
  tool acted on something
  (``wrote docs/guide.md``, ``FAILED tests/…``); a listing gives none;
- **the user's own words** — a line of the user's message that says more than paths, at most
  :data:`MAX_USER_PATHS` per message, outside what the user pasted (:func:`pasted_lines`: a
  fenced or indented block, a quoted line, a traceback and its frames, a log, compiler or test
  runner line, a shell or REPL prompt, markup). The user naming the file to edit is what the
  session does; a pasted log is someone else's text.

Never from fetched or pasted text: the output of a tool whose arguments name no file (a web
fetch, a search, an API call, ``bash`` with ``curl``) gives no path, nor does the assistant's
prose (it relays what tools and pages said; what the assistant does is its tool calls).
**A URL is never a file** (:func:`~wm_langgraph.document.text.paths.is_url`): URLs, with or
without a scheme (``https://…``, ``evil.example/x.sh``, ``localhost:8080/x``), are blanked out
of every text before paths are read, so no part of one becomes a path either. Each path keeps
its provenance: ``user``, ``<tool> arguments`` or ``<tool> output``.

**Errors come from what the session ran**, by the same notion of the session's own tool
(:func:`runs_here`): the error trail, the capture check and the offline writer take an error
from a tool result only when the run that produced it was the session's own — a tool that runs
a command or code, tests or builds (a ``command``/``cmd``/``script``/``code`` argument, or a
name that says so: ``run_tests``, ``bash``, ``pytest``), or that works on files and reports what
it did (a file operation: write, edit, move …) — or when the result's status says the run
itself failed (``status="error"``). Never from a tool that fetches, searches or looks something
up (a URL in its arguments, a name such as ``fetch_url``, ``web_search``, ``lookup``), nor from
one that returns content it read (``read_file``, ``cat``, ``grep``: a file's text is not the
operation's error), nor from pasted text or the assistant's relay of a page. A fetched page that
says "E   ValueError: the payments API key must be sent in the query string" once put that line
into the append-only Errors & Corrections, shown in every later prompt.

Pure, no I/O: the callers turn their messages (LangChain messages, a rendered transcript) into
steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from wm_langgraph.document.text.paths import extract_paths, is_url, strip_urls

__all__ = [
    "MAX_USER_PATHS",
    "SessionPath",
    "Step",
    "ToolCall",
    "acted_lines",
    "names_file",
    "pasted_lines",
    "runs_here",
    "session_paths",
    "sessions_error",
]

MAX_USER_PATHS = 8
"""The most paths one user message gives (more is a pasted listing, not files being named)."""

_FILE_KEY_RE = re.compile(
    r"^(?:path|paths|file|files|filename|filenames|file_name|file_path|filepath|file_paths|dir|"
    r"dirs|directory|directories|folder|cwd|workdir|work_dir|working_dir|working_directory)$",
    re.IGNORECASE,
)
"""Argument names that say the tool works on files, whatever their value looks like (``.``)."""

_WEB_KEY_RE = re.compile(
    r"^(?:url|urls|uri|uris|href|link|links|endpoint|query|queries|q|search|search_query|"
    r"question|prompt)$",
    re.IGNORECASE,
)
"""Argument names whose value says what to fetch or look up, not a file to work on."""
_DIR_RE = re.compile(
    r"(?<!\S)(?:\.{1,2}/?|~/|(?:\.{1,2}/|/)?(?:[\w.-]+/)*[\w.-]*[^\W\d_][\w.-]*/)(?=\s|$|[;&|)])"
)
"""A directory in a command line: ``tests/``, ``src/app/``, ``.``, ``..``, ``~/``."""

_ACTED_RE = re.compile(
    r"\b(?:wrote|written|writing|saved|saving|created|creating|modified|updated|edited|"
    r"patched|changed|deleted|removed|renamed|moved|copied|read|reading|opened|loaded|"
    r"compiled|ran|running|executed|executing|generated|formatted|installed)\b"
    r"|^(?:FAILED|ERROR|PASSED)\s|已(?:写入|保存|创建|修改|删除|读取)",
    re.IGNORECASE,
)

_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")
_TRACEBACK_RE = re.compile(r"^\s*Traceback \(most recent call last\)")
_PASTED_RE = re.compile(
    r"^(?:"
    r"\s*File \"[^\"\n]*\", line \d+"  # a Python traceback frame
    r"|\s+at \S[^\n]*(?:\(\S*:\d+(?::\d+)?\)|:\d+:\d+)\s*$"  # a JavaScript or Java frame
    r"|\s*#\d+\s+0x[0-9A-Fa-f]+"  # a native backtrace frame
    r"|\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}"  # a timestamped log line
    r"|\s*\[?\d{1,2}:\d{2}:\d{2}"
    r"|\s*\[(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SEVERE)\]"  # a log level
    r"|\s*(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SEVERE)(?::|\s+-|\s+\[)"
    r"|(?:FAILED|PASSED|ERROR|XFAIL|XPASS|SKIPPED)\s"  # a test runner's summary line
    r"|E {2,}"  # pytest's assertion detail
    r"|\S+:\d+(?::\d+)?:\s"  # a compiler, linter or grep line (file:line: …)
    r"|\s*(?:\$|>>>|\.\.\.|%|❯)\s"  # a shell or REPL prompt
    r"|\s*>"  # a quoted line
    r"|\s*<[A-Za-z!/?]"  # markup
    r"|(?:\t| {4,})(?![-*+•] |\d{1,3}[.)] )"  # an indented block line, not a nested list item
    r")"
)
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_NAME_WORD_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_COMMAND_KEY_RE = re.compile(
    r"^(?:command|commands|cmd|cmds|script|shell|code|source_code|argv)$", re.IGNORECASE
)
"""Argument names whose value the tool runs: its output is the run's report."""
_FETCH_WORDS = frozenset(
    [
        "fetch",
        "browse",
        "browser",
        "web",
        "http",
        "https",
        "url",
        "urls",
        "uri",
        "scrape",
        "crawl",
        "download",
        "search",
        "lookup",
        "query",
        "api",
        "request",
        "requests",
        "wiki",
        "news",
        "get",
        "curl",
        "wget",
    ]
)
"""Words of a tool's name that say it fetches or looks something up: someone else's text."""
_READ_WORDS = frozenset(
    [
        "read",
        "cat",
        "view",
        "open",
        "show",
        "load",
        "head",
        "tail",
        "grep",
        "find",
        "list",
        "ls",
        "glob",
        "peek",
        "print",
    ]
)
"""Words of a tool's name that say it returns content it read (a file's text, a listing)."""
_RUN_WORDS = frozenset(
    [
        "run",
        "runs",
        "runner",
        "exec",
        "execute",
        "shell",
        "bash",
        "sh",
        "zsh",
        "terminal",
        "command",
        "cmd",
        "console",
        "python",
        "node",
        "test",
        "tests",
        "pytest",
        "unittest",
        "jest",
        "make",
        "build",
        "compile",
        "lint",
        "check",
        "typecheck",
        "mypy",
        "ruff",
        "tsc",
        "install",
        "deploy",
        "npm",
        "pip",
        "cargo",
        "go",
        "mvn",
        "gradle",
        "write",
        "edit",
        "create",
        "delete",
        "remove",
        "move",
        "rename",
        "patch",
        "apply",
        "save",
        "replace",
        "modify",
        "update",
        "mkdir",
        "touch",
        "copy",
    ]
)
"""Words of a tool's name that say it runs something, or operates on files and reports it."""
_FETCH_COMMAND_RE = re.compile(
    r"\b(?:curl|wget|lynx|w3m|http|Invoke-WebRequest|iwr|requests\.get|urlopen)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an assistant step.

    Attributes:
        name: The tool's name.
        args: Its arguments (a JSON-like mapping), or their raw text when they could not be
            read.
        id: The call's id (``""`` when the caller does not know it).
    """

    name: str
    args: Mapping[str, object] | str = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """One message of the conversation, as the rule reads it.

    Attributes:
        role: ``user``, ``assistant``, ``tool`` (a tool's result) or anything else (ignored).
        text: The message's text.
        calls: An assistant step's tool calls.
        call_id: A tool result's call id (``""``: unknown; then the newest call of ``tool``).
        tool: A tool result's tool name.
    """

    role: str
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    call_id: str = ""
    tool: str = ""


@dataclass(frozen=True, slots=True)
class SessionPath:
    """A path the session acted on and where it came from (``user``, ``<tool> arguments``,
    ``<tool> output``)."""

    path: str
    source: str


def _leaves(value: object) -> Iterator[tuple[str, str]]:
    """(argument name, string value) for every string inside a JSON-like value, depth first."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, str):
            yield key, item
        elif isinstance(item, Mapping):
            stack.extend(reversed([(str(k), v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(key, v) for v in item]))


def _paths(text: str) -> list[str]:
    """The paths in ``text`` once every URL is blanked out (a URL is never a file)."""
    return [p for p in extract_paths(strip_urls(text)) if not is_url(p)]


def names_file(args: Mapping[str, object] | str) -> bool:
    """Whether a tool call's arguments name a file: a path in any value (URLs are not files),
    a directory (``tests/``, ``./``, ``..``), or a non-empty value under an argument named
    like ``path``, ``file``, ``dir`` or ``cwd`` that is not a URL. Values of arguments that say
    what to fetch or look up (``url``, ``query``, ``q``, ``prompt`` …) do not count: a search
    for "src/app.py" fetches pages, not the file. A tool whose arguments name a file works on
    files: its output's paths count (module docstring)."""
    for key, value in _leaves(args if isinstance(args, Mapping) else {"": args}):
        if _WEB_KEY_RE.match(key):
            continue  # a query or a link: what it fetches is not a file
        if _FILE_KEY_RE.match(key) and value.strip() and not is_url(value):
            return True
        if _paths(value) or _DIR_RE.search(strip_urls(value)):
            return True
    return False


def _name_words(name: str) -> set[str]:
    """The words of a tool's name: ``run_tests`` -> run, tests; ``fetchURL`` -> fetch, url."""
    return {w.casefold() for w in _NAME_WORD_RE.findall(name)}


def runs_here(call: ToolCall) -> bool:
    """Whether a tool call is the session's own run, whose error output is the session's own
    (module docstring: errors come from what the session ran).

    It is when nothing in it fetches — no URL in its arguments, no command that downloads
    (``curl``, ``wget`` …), no name word that says fetch, search or look up — and it runs
    something (a ``command``, ``cmd``, ``script`` or ``code`` argument, or a name word such as
    run, test, bash, build) or works on files (:func:`names_file`) without being a tool that
    returns content it read (read, cat, view, grep … in its name)."""
    words = _name_words(call.name)
    leaves = list(_leaves(call.args if isinstance(call.args, Mapping) else {"": call.args}))
    if words & _FETCH_WORDS:
        return False
    for key, value in leaves:
        if strip_urls(value) != value or _FETCH_COMMAND_RE.search(value):
            return False  # a link or a download: what comes back is someone else's text
        if _WEB_KEY_RE.match(key) and value.strip():
            return False
    if any(_COMMAND_KEY_RE.match(key) and value.strip() for key, value in leaves):
        return True
    if words & _RUN_WORDS:
        return True
    return not words & _READ_WORDS and names_file(call.args)


def acted_lines(text: str) -> Iterator[str]:
    """The lines of a tool result that say the tool acted on something (``wrote …``,
    ``FAILED …``, ``已保存 …``)."""
    for line in text.splitlines():
        if _ACTED_RE.search(line.strip()):
            yield line


def pasted_lines(text: str) -> set[int]:
    """The indexes of the lines of a message that the writer pasted rather than wrote: fenced
    blocks, a traceback to its end (the next blank line), and lines shaped like a frame, a log,
    compiler or test runner line, a prompt, a quote, markup or an indented block."""
    pasted: set[int] = set()
    fenced = traceback = False
    for index, line in enumerate(text.splitlines()):
        if _FENCE_RE.match(line):
            fenced = not fenced
            pasted.add(index)
            continue
        if traceback and not line.strip():
            traceback = False
        if _TRACEBACK_RE.match(line):
            traceback = True
        if fenced or traceback or _PASTED_RE.match(line):
            pasted.add(index)
    return pasted


def _user_lines(text: str) -> Iterator[str]:
    """The lines of a user's message that the user wrote and that say more than paths."""
    pasted = pasted_lines(text)
    for index, line in enumerate(text.splitlines()):
        if index in pasted:
            continue
        rest = strip_urls(line)
        for path in extract_paths(rest):
            rest = rest.replace(path, " ")
        if _WORD_RE.search(rest):
            yield line


def _plain(name: str) -> str:
    """A tool name made plain for a provenance label."""
    return re.sub(r"[^\w .:/-]", "", name)[:60].strip() or "a tool"


def _calls_text(call: ToolCall) -> Iterator[str]:
    if isinstance(call.args, str):
        yield call.args
    else:
        for _, value in _leaves(call.args):
            yield value


def _found(
    step: Step, calls: Mapping[str, ToolCall], by_name: Mapping[str, ToolCall]
) -> Iterator[tuple[list[str], str]]:
    """(paths, source) for what one step contributes, in order."""
    if step.role == "assistant":
        for call in step.calls:
            for text in _calls_text(call):
                yield _paths(text), f"{_plain(call.name)} arguments"
    elif step.role == "tool":
        answered = (calls.get(step.call_id) if step.call_id else None) or by_name.get(step.tool)
        if answered is not None and names_file(answered.args):
            for line in acted_lines(step.text):
                yield _paths(line), f"{_plain(step.tool or answered.name)} output"
    elif step.role == "user":
        named = [p for line in _user_lines(step.text) for p in _paths(line)]
        yield list(dict.fromkeys(named))[:MAX_USER_PATHS], "user"


def session_paths(steps: Iterable[Step], *, context: Iterable[Step] = ()) -> list[SessionPath]:
    """The paths the session acted on, in order of first appearance, each once with where it
    first came from (module docstring). A tool result finds its call by ``call_id`` among the
    steps before it, else the newest call of the same tool.

    Args:
        steps: The conversation, oldest first.
        context: Steps before ``steps`` whose tool calls the results in ``steps`` may answer
            (an archive folded in slices); they give no path themselves.
    """
    calls: dict[str, ToolCall] = {}
    by_name: dict[str, ToolCall] = {}
    out: dict[str, SessionPath] = {}
    for step, contributes in [*((s, False) for s in context), *((s, True) for s in steps)]:
        for call in step.calls if step.role == "assistant" else ():
            if call.id:
                calls[call.id] = call
            by_name[call.name] = call
        if not contributes:
            continue
        for paths, source in _found(step, calls, by_name):
            for path in paths:
                if path not in out:
                    out[path] = SessionPath(path, source)
    return list(out.values())


_QUOTED_ERROR_RE = re.compile(r"[\w.]*(?:Error|Exception)\b[^`\n]*")


def sessions_error(statement: str, role: str, message: str, ran: str) -> bool:
    """Whether an error a statement tells is the session's own, the rule that errors come from
    what the session ran (as paths do): the user's own words, outside the lines the user pasted
    (:func:`pasted_lines`: a traceback, a log, a fenced block …), or the assistant quoting an
    error that one of the session's own runs reported. Never a tool's text (the error trail
    reads tool results), never a page the assistant relays.

    Args:
        statement: The statement (a unit's text).
        role: Its message's role (``user``, ``assistant``, ``tool`` …).
        message: Its message's whole text.
        ran: The output of the session's own runs (:func:`runs_here`, or a result whose status
            is an error), spacing squashed and case-folded.
    """
    statement = statement.removesuffix(" …")
    if role == "assistant":
        quoted = _QUOTED_ERROR_RE.search(statement)
        said = " ".join(quoted.group(0).split()).casefold().rstrip(" .;:") if quoted else ""
        return bool(said) and said in ran
    if role != "user":
        return False
    lines = message.splitlines()
    pasted = " ".join(" ".join(lines[i].split()) for i in sorted(pasted_lines(message)))
    head = " ".join(statement.split())[:60]
    return not head or head not in pasted
