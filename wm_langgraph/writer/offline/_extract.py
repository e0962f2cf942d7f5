"""What the offline heuristic summariser extracts from a transcript.

Private to ``wm_langgraph.writer.offline``. Given the parsed turns of the folded messages, it finds
the session title, goals, the latest exchange, durable facts and decisions (with their
reasons), the files touched and how, errors with the fixes that followed, user corrections,
and open questions / TODOs together with the sentences that resolve them. Extractive and
deterministic: every item is a sentence (or a tool record) taken from the transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.text.session_paths import ToolCall, runs_here, sessions_error
from wm_langgraph.document.text.shorten import shorten
from wm_langgraph.document.text.units import (
    CHAT_KINDS,
    CODING_KINDS,
    Unit,
    date_line,
    echoes,
    extract_units,
    is_chat,
    is_correction,
    is_personal_fact,
    shorten_whole,
    statement_key,
    without_ack,
)
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._chat import ChatContext, speakers_of
from wm_langgraph.writer.offline._files import (
    FileNote,
    call_paths,
    command_of,
    first_path,
    note,
    session_files,
    tool_action,
    worth_listing,
)
from wm_langgraph.writer.offline._lang import (
    Language,
    detect_language,
    first_sentence,
    has_cjk,
    repeats,
    sentences,
)
from wm_langgraph.writer.offline._open import (
    QUESTION_RE,
    REQUEST_RE,
    collect_open,
    is_open_phrasing,
    relates,
    resolves,
    without_headers,
)
from wm_langgraph.writer.offline._transcript import ToolCallRecord, Turn

__all__ = ["FileNote", "Findings", "extract_findings", "relates", "resolves"]

_I = re.IGNORECASE
_FACT_RE = re.compile(
    r"\b(because|since we|decided|decide|decision|chose|choose|chosen|agreed|agree|never|always|"
    r"must|prefer|prefers|preferred|preference|constraint|required|requirement|requires|"
    r"don't|do not|should not|shouldn't|instead of|we'll use|we will use|deadline|budget|"
    r"limit|timeout|max|maximum|min|minimum|at most|at least|default)\b"
    r"|因为|决定|选择|选用|采用|必须|务必|不要|不能|禁止|永远|总是|始终|一律|偏好|更喜欢|"
    r"约束|要求|限制|截止|预算|规定",
    _I,
)
_NUMBER_FACT_RE = re.compile(
    r"\b(?:v?\d+\.\d+(?:\.\d+)+|port \d+|HTTP \d{3}|\d{4}-\d{2}-\d{2}|"
    r"\d+(?:\.\d+)?\s?(?:%|ms|seconds|minutes|hours|days|weeks|months|years|MB|GB|KB|tokens|"
    r"requests|rps|users|retries|workers|threads))\b|\$\d+|\d+\s?(?:个|天|小时|分钟|秒|月|年|次|%)"
    r"|(?:端口|版本|编号|工单)\s*(?:是|为|号)?\s*v?\d+",
    _I,
)
_GOAL_RE = re.compile(
    r"(?<![\w-])(add|implement|build|create|write|make|fix|support|refactor|migrate|rename|remove|"
    r"deploy|set up|setup|need|needs|want|goal|also|next|extend|convert|optimi[sz]e)\b"
    r"|实现|添加|增加|构建|创建|编写|修复|支持|重构|迁移|需要|希望|目标是|帮我|请",
    _I,
)
_ACK_RE = re.compile(
    r"^\s*(ok(ay)?|thanks?( you)?|thank you|yes|yep|sure|go ahead|sounds good|great|perfect|"
    r"lgtm|continue|good|nice|cool|right|alright|awesome|excellent|好的?|谢谢|可以|行|继续|没问题)"
    r"[\s.!。！]*$",
    _I,
)
_CORRECTION_RE = re.compile(
    r"^\s*(no\b|nope\b|actually\b|that's (wrong|not right|incorrect)|that is (wrong|not right)|"
    r"wrong\b|incorrect\b|not quite\b|you're wrong|i said\b)"
    r"|^\s*(不对|不是|错了|其实|搞错|你错)|that's wrong|不对|搞错了",
    _I,
)
# Assistants say "I'll read the file because…" all the time; only firmer statements are facts.
_ASSISTANT_FACT_RE = re.compile(
    r"\b(because|decided|decision:|chose|agreed|instead of|must|never|always|constraint)\b"
    r"|因为|决定|选择|采用|必须|不要|禁止|永远|总是",
    _I,
)
_ERROR_RE = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b|\bError:|\bERROR\b|"
    r"\bFAILED\b|\bfailed\b|exit code [1-9]|错误|失败|报错|异常"
    r"|\b(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled)\b",
)
_ERROR_LINE_RE = re.compile(
    r"^\s*(?:E\s+)?(?:(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)\b.*|FAILED .*|Error:.*|"
    r"ERROR.*|.*失败.*|.*\b(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled)\b.*|"
    r".*错误.*|.*报错.*)$|^E {2,}\S.*$",  # the last: pytest's "E   <what failed>" lines
    re.MULTILINE,
)


_BANNER_RE = re.compile(r"^\s*[=_*#-]{3,}")
_PEOPLE_KINDS = frozenset({"person", "relationship", "personal"})


@dataclass(slots=True)
class Findings:
    """Everything the summariser took from one transcript."""

    language: Language
    title: str = ""
    goals: list[str] = field(default_factory=list)
    latest_request: str = ""
    latest_reply: str = ""
    last_action: str = ""
    last_status: str = ""
    first_request: str = ""
    opening_goal: str = ""
    """The first request when it asks for work (a goal), else ``""``."""
    facts: list[str] = field(default_factory=list)
    files: list[FileNote] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unresolved_errors: list[str] = field(default_factory=list)
    open_failures: list[str] = field(default_factory=list)
    corrections: list[str] = field(default_factory=list)
    opening_reply: list[str] = field(default_factory=list)
    open_items: list[str] = field(default_factory=list)
    resolution_texts: list[str] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    chat: bool = False
    context: ChatContext = field(default_factory=ChatContext)
    tokens: int = 0
    """How much the round folds: the tokens of what the user and the assistant said."""


_ZH_OPENERS_RE = re.compile(r"^(你好[，,]?|请你?|帮我|帮忙|麻烦你?|我想要?|我们需要|能不能|可以)+")
_EN_OPENERS_RE = re.compile(
    r"^((hi|hello|hey)\b[,!]?\s*)?(please\s+|can you\s+|could you\s+|would you\s+|"
    r"help me\s+|i want you to\s+|i'd like you to\s+|i need you to\s+|let's\s+|lets\s+)*",
    _I,
)


def _strip_openers(sentence: str) -> str:
    """Drop polite openers ("Please", "Can you", "请帮我") and capitalise what is left."""
    text = _ZH_OPENERS_RE.sub("", _EN_OPENERS_RE.sub("", sentence.strip())).strip()
    return text[:1].upper() + text[1:] if text else sentence.strip()


_GREETING_RE = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|morning|你好|您好)"
    r"(?:\s+\w+)?[\s!.,，。！]*$",
    _I,
)


def _title_from(request: str, language: Language) -> str:
    """A 5-10 word title from the first request: polite openers dropped, capitalised; a bare
    greeting ("Hi!") is not the request."""
    said = [s for s in sentences(request) if not _GREETING_RE.match(s)]
    text = _strip_openers(said[0] if said else first_sentence(request))
    if language == "zh":
        clause = re.split(r"[，,。！？：:；]", text)[0].strip() or text
        if len(clause) <= 30:
            return clause
        cut = 30
        while cut < len(clause) and clause[cut].isascii() and clause[cut].isalnum():
            cut += 1  # never cut inside a Latin word or a number
        return clause[:cut].strip()
    clause = re.split(r"[,;:(]| — | - ", text)[0]
    words = [w.strip(",;:") for w in (clause if len(clause.split()) >= 3 else text).split()]
    return " ".join(words[:10]).rstrip(".!?").strip()


def _error_summary(turn: Turn) -> str:
    lines = [re.sub(r"^E\s+", "", m.group(0).strip()) for m in _ERROR_LINE_RE.finditer(turn.text)]
    # A report's banners ("==== FAILURES ====", "___ test_x ___") say nothing of the error.
    text = "\n".join(line for line in turn.text.splitlines() if not _BANNER_RE.match(line))
    detail = lines[-1] if lines else first_sentence(text or turn.text)
    return shorten(detail, max_words=24, max_cjk=60)


_IMPERATIVE_RE = re.compile(
    r"^(?:add|implement|build|create|write|make|fix|support|refactor|migrate|rename|remove|delete|"
    r"deploy|set up|setup|extend|convert|optimi[sz]e|update|improve|investigate|find|check|look|"
    r"review|document|test|debug|clean|speed|move|replace|upgrade|integrate|configure|enable|"
    r"disable|generate|plan|book|prepare|draft|send|schedule|organi[sz]e|summari[sz]e|explain|"
    r"translate|help|get|finish|wire|port|split|merge|ship|harden)\b",
    _I,
)
_ASKS_RE = re.compile(
    r"\b(?:I|we) (?:want|need|would like|'d like)(?: you)? to\b"
    r"|\b(?:the|our|my) (?:goal|task|aim)\b|\bgoal\s*:|\bhelp me\b",
    _I,
)


def _asks_for_work(sentence: str) -> bool:
    """Whether a sentence asks for work: a request ("Please add…", "Can you…", "请…"), an
    imperative ("Add retries…", "实现…") or a stated goal ("We need to…", "The goal: …"). A
    statement of what is ("We decided…", "The deploy fails…", "脚本报错…") or a decision
    ("Let's cap…") is not."""
    if has_cjk(sentence):
        if _ZH_ASKS_RE.match(sentence):
            return True
        units = extract_units([("user", sentence)])
        return bool(_GOAL_RE.search(sentence)) and not any(u.kind in _STATED for u in units)
    if _ASKS_RE.search(sentence):
        return True
    rest = _strip_openers(sentence)
    return bool(_IMPERATIVE_RE.match(rest)) and not re.match(r"\s*let(?:'|’)?s\b", sentence, _I)


_ZH_ASKS_RE = re.compile(r"^\s*(?:请|帮我|帮忙|麻烦|能不能|能否|我想|我希望|希望|我们需要|目标是)")
_STATED = frozenset({"decision", "error", "fix", "todo", "correction", "constraint"})
"""What a sentence of these kinds says is a fact, a problem or a follow-up, not a goal."""


def _goal_of(text: str) -> str:
    """The sentence of a user message that asks for work (with the sentence before it when the
    request alone is too short to stand), or ``""``."""
    parts = sentences(text)
    for index, sentence in enumerate(parts):
        if QUESTION_RE.search(sentence) and not REQUEST_RE.search(sentence):
            continue
        if re.match(r"(fyi|note|btw)\b|顺便|备注", sentence, _I):
            continue  # information, not a request
        if not _asks_for_work(sentence):
            continue
        if _GOAL_RE.search(sentence) and not _ACK_RE.match(sentence):
            goal = _strip_openers(sentence)
            if index and len(goal.split()) < 6 and not _ACK_RE.match(parts[index - 1]):
                goal = f"{parts[index - 1]} {goal}"
            return shorten(goal, max_words=30, max_cjk=70)
    return ""


def _is_correction(text: str) -> bool:
    return bool(_CORRECTION_RE.search(first_sentence(text))) or is_correction(text)


def _fact_sentences(turn: Turn, language: Language) -> list[str]:
    facts: list[str] = []
    correction = turn.role == "user" and _is_correction(turn.text)
    for sentence in sentences(turn.text):
        if QUESTION_RE.search(sentence) or is_open_phrasing(sentence) or len(sentence) < 8:
            continue
        corrected_value = correction and re.search(r"\d", sentence)
        if turn.role == "assistant":
            firm = bool(_ASSISTANT_FACT_RE.search(sentence) or _NUMBER_FACT_RE.search(sentence))
        else:
            firm = bool(
                _FACT_RE.search(sentence)
                or _NUMBER_FACT_RE.search(sentence)
                or is_personal_fact(sentence)  # "My blood type is O negative"
            )
        if firm or corrected_value:
            facts.append(shorten_whole(sentence, max_words=40))  # once, without a speaker label
    return facts


_FAILING_RE = re.compile(r"[\w./-]+::[\w\[\]./-]+|\b\w+(?:Error|Exception)\b")
"""What failed, named short: a test id (``tests/test_x.py::test_y``) or an exception class."""


def _failure_item(what: str, summary: str, action: str, language: Language) -> str:
    """An Open Issues line for a failure that no later step fixed. It names the failure
    short (a test id, an exception class): Errors & Corrections quotes the whole error, and
    one thing is written once."""
    named = _FAILING_RE.search(summary)
    summary = named.group(0) if named else shorten(summary, max_words=8, max_cjk=20)
    if language == "zh":
        return (
            f"让 {what} 通过（{summary}）"
            if action == "ran"
            else f"解决 {what} 的错误（{summary}）"
        )
    return (
        f"Make {what} pass ({summary})"
        if action == "ran"
        else f"Resolve the {what} error ({summary})"
    )


def _output_failed(turn: Turn, action: str) -> bool:
    if turn.status == "error":
        return True
    head = turn.text[:4000]
    if re.search(
        r"Traceback \(most recent call last\)|\bFAILED\b|exit code [1-9]|\d+ failed", head
    ):
        return True
    return action == "ran" and bool(_ERROR_RE.search(head))


def _followup(turns: list[Turn], start: int, language: Language) -> str:
    """What the assistant did right after ``turns[start]``: its words or its tool calls."""
    for turn in turns[start + 1 :]:
        if turn.role == "user":
            break
        if turn.role != "assistant":
            continue
        if turn.text.strip():
            return shorten(first_sentence(turn.text), max_words=24, max_cjk=60)
        if turn.tool_calls:
            names = ", ".join(c.name for c in turn.tool_calls)
            return f"调用 {names}" if language == "zh" else f"called {names}"
    return ""


def _fix_after(
    turns: list[Turn], start: int, tool: str, language: Language, *, ran: bool
) -> tuple[str, bool]:
    """The fix that followed a failed tool result: edited paths and whether a re-run passed."""
    edited: list[str] = []
    passed = False
    for turn in turns[start + 1 :]:
        if turn.role == "assistant":
            for call in turn.tool_calls:
                for path, key in call_paths(call):
                    if tool_action(call, key) in {"edited", "created"} and path not in edited:
                        edited.append(path)
        elif turn.role == "tool" and turn.tool_name == tool:
            if _output_failed(turn, "ran"):
                passed = False
            else:
                passed = True
                break
    parts: list[str] = []
    if edited:
        paths = ", ".join(f"`{p}`" for p in edited[:4])
        parts.append(f"修复：编辑 {paths}" if language == "zh" else f"fix: edited {paths}")
    if passed:
        parts.append("重新运行通过" if language == "zh" else "re-run passed")
    # A failed edit or read is settled by a later successful edit or write.
    return "; ".join(parts), passed or (bool(edited) and not ran)


def _add(items: list[str], item: str) -> None:
    if item and not any(repeats(item, old) for old in items):
        items.append(item)


def _chat_findings(
    found: Findings, turns: list[Turn], context: ChatContext, known: str = ""
) -> None:
    """The salient units of the spoken messages, and whether the transcript is a chat."""
    messages = [(t.role, t.text) for t in turns]
    found.context = speakers_of(messages, context)
    speakers = (found.context.user, found.context.assistant)
    found.units = extract_units(messages, session_date=context.when, speakers=speakers, known=known)
    tools = sum(1 for t in turns if t.role == "tool" or t.tool_calls)
    spoken = "\n".join(t.text for t in turns if t.role in {"user", "assistant"})
    code = "`" in spoken or bool(extract_paths(spoken))
    if context.chat:
        # A chat goes on being a chat unless the round turns to work.
        coding = sum(1 for u in found.units if u.kind in CODING_KINDS - {"fact"})
        narrative = sum(1 for u in found.units if u.kind in CHAT_KINDS)
        found.chat = not code and not tools and narrative >= coding
    else:
        found.chat = not code and is_chat(found.units, tool_messages=tools)


def _without_echoes(turns: list[Turn]) -> list[Turn]:
    """The turns with each assistant sentence that repeats what a user said ("Noted: <the
    user's words>") left out, and an acknowledgement in front of the rest dropped: an echo is
    the user's statement, one item, never a second one."""
    said: set[str] = set()
    out: list[Turn] = []
    for turn in turns:
        kept = turn
        if turn.role == "user":
            said.update(statement_key(s) for s in sentences(turn.text))
        elif turn.role == "assistant" and turn.text.strip():
            parts = sentences(turn.text)
            spoken = [without_ack(p) for p in parts if not echoes(p, said)]
            if spoken != parts:
                kept = replace(turn, text="\n".join(spoken))
        out.append(kept)
    return out


_FIX_LEAD_RE = re.compile(
    r"^\s*(?:(?:fixed|resolved|solved)(?: it| this| that)?\s*[:,—–-]"
    r"|(?:已修复|已解决|修复了)\s*[:：，,])\s*",
    _I,
)
_FACT_KINDS_ALWAYS = frozenset({"decision", "constraint", "correction", "todo"})
"""Unit kinds a careful note-taker keeps even without an anchor (as the capture check does)."""


def _own_run_output(turns: list[Turn]) -> str:
    """The output of the session's own runs among ``turns`` (``session_paths.runs_here``, or a
    result whose status is an error), spacing squashed and case-folded: what an error the
    assistant quotes must come from to be the session's (``session_paths.sessions_error``)."""
    calls: dict[str, ToolCallRecord] = {}
    out: list[str] = []
    for turn in turns:
        if turn.role == "assistant":
            calls.update((call.name, call) for call in turn.tool_calls)
        elif turn.role == "tool":
            call = calls.get(turn.tool_name)
            record = ToolCall(call.name, call.args) if call else ToolCall(turn.tool_name)
            if turn.status == "error" or runs_here(record):
                out.append(turn.text)
    return " ".join(" ".join(out).split()).casefold()


def _complete(found: Findings, language: Language, turns: list[Turn]) -> None:
    """What the rules above left out but a careful note-taker keeps, from the round's units
    (the ones the capture check looks for): an error told in words with the fix that followed
    it in Errors & Corrections — only an error of the session's own (the user's words, or the
    assistant quoting one of the session's runs: a page the assistant relays is someone else's
    text) —, every other anchored (or committed) statement in Key Facts; never twice, never the
    same statement in two sections."""
    label = "修复：" if language == "zh" else "fix: "
    fixes = [u for u in found.units if u.kind == "fix" and not u.pasted]
    told = [u.text for u in found.units if u.kind in {"error", "fix"} and not u.pasted]
    ran = _own_run_output(turns)
    used: set[int] = set()
    for unit in found.units:
        if unit.pasted or unit.kind != "error":
            continue
        if any(_same(unit.text, item) for item in found.open_items):
            continue  # a follow-up ("… for failed webhooks") is filed in Open Issues
        if not (
            0 <= unit.index < len(turns)
            and sessions_error(unit.text, unit.role, turns[unit.index].text, ran)
        ):
            continue
        fix = next((f for f in fixes if f.index >= unit.index and id(f) not in used), None)
        item = unit.text
        if fix is not None:
            used.add(id(fix))
            held = _quoted_error(fix.text, found.errors)
            if held is not None:
                # the fix names the failure a run of the round recorded ("Fixed: the failure
                # was `KeyError: …`"): the same thing, one item — the words join that item
                words = unit.text.rstrip(" .。")
                if words.casefold() not in found.errors[held].casefold():
                    found.errors[held] = f"{found.errors[held].rstrip(' .。')}; {words}"
                continue
            how = _FIX_LEAD_RE.sub("", fix.text).strip() or fix.text
            item = f"{unit.text.rstrip(' .。')} — {label}{how}"
        if not any(_same(unit.text, old) for old in found.errors):
            _add(found.errors, item)
    for fix in fixes:
        if id(fix) not in used and not any(_same(fix.text, old) for old in found.errors):
            _add(found.errors, fix.text)
    said = [*found.goals, *found.errors, *found.open_items]
    found.facts = [f for f in found.facts if not any(_same(f, old) for old in told)]
    for unit in found.units:
        if unit.pasted or unit.kind in {"error", "fix", "path", "todo"}:
            continue
        if not (unit.anchors or unit.explicit or unit.kind in _FACT_KINDS_ALWAYS):
            continue
        if any(_same(unit.text, old) for old in [*said, *found.facts]):
            continue
        _add(found.facts, unit.text)


_QUOTED_RE = re.compile(r"`([^`\n]{12,})`")
_FAILURE_RE = re.compile(r"\w(?:Error|Exception)\b|\bFAILED\b|\bfailed\b")


def _quoted_error(text: str, errors: list[str]) -> int | None:
    """The index of the item of ``errors`` holding an error ``text`` quotes in a code span
    (``the failure was `KeyError: 'tenant_3'` ``), or None."""
    for span in _QUOTED_RE.findall(text):
        if not _FAILURE_RE.search(span):
            continue
        folded = span.casefold()
        for index, item in enumerate(errors):
            if folded in item.casefold():
                return index
    return None


def _same(item: str, other: str) -> bool:
    """One thing: the same statement (markers, speakers, acknowledgements aside), or the same
    words with nothing new."""
    return statement_key(item) == statement_key(other) or repeats(item, other)


def extract_findings(
    turns: list[Turn], context: ChatContext | None = None, *, known: str = ""
) -> Findings:
    """Extract the Working Memory material of one transcript (see module docstring).

    ``context`` is what an earlier chat round recorded (speakers, session date); ``known`` the
    document so far (a name it writes is a name when a sentence opens with it)."""
    turns = _without_echoes(turns)
    spoken = "\n".join(t.text for t in turns if t.role in {"user", "assistant"})
    language = detect_language(spoken or "\n".join(t.text for t in turns))
    found = Findings(language, tokens=count_tokens(spoken))
    _chat_findings(found, turns, context or ChatContext(), known)
    # What the user said, without injected structure ("### Working Memory") and without a
    # session's leading date line ("[3:10 pm on 4 March, 2021]"): never a title.
    spoken_by_user = [without_headers(date_line(t.text)[1]) for t in turns if t.role == "user"]
    requests = [text for text in spoken_by_user if text.strip() and not _ACK_RE.match(text)]
    if requests:
        found.title = _title_from(requests[0], language)
        latest = [s for s in sentences(requests[-1]) if not _ACK_RE.match(s)]
        found.latest_request = shorten(_strip_openers(latest[0]) if latest else "", max_words=30)
        first = _strip_openers(first_sentence(requests[0]))
        found.first_request = shorten(first, max_words=30, max_cjk=70)
        if has_cjk(first) or _asks_for_work(first_sentence(requests[0])):
            found.opening_goal = found.first_request
    for text in requests:
        goal = "" if _is_correction(text) else _goal_of(text)
        if goal:
            _add(found.goals, goal)
    if turns and turns[0].role == "user":
        # the chunk opens with the user's answer to whatever the assistant asked last time
        found.opening_reply = sentences(turns[0].text)
    notes: dict[str, FileNote] = {}
    acted = session_files(turns)  # the artifact trail's rule: no URL, fetched or pasted path
    calls_by_name: dict[str, ToolCallRecord] = {}
    open_candidates: list[tuple[int, str]] = []
    for index, turn in enumerate(turns):
        if turn.role == "assistant":
            for call in turn.tool_calls:
                calls_by_name[call.name] = call
                for path, key in call_paths(call):
                    if path in acted:
                        note(notes, path, tool_action(call, key), call.name)
                command = command_of(call)
                if command and command not in found.commands:
                    found.commands.append(command)
                found.last_action = f"{call.name} {command or first_path(call)}".strip()
                found.last_status = ""
        if turn.role in {"user", "assistant"}:
            for fact in _fact_sentences(turn, language):
                _add(found.facts, fact)
            for unit in found.units:
                # what the user says of a person ("Leo is allergic to kiwi", "My sister is
                # called Ana") or of their own world ("I'm vegetarian") is a fact too
                if unit.index == index and unit.role == "user" and unit.kind in _PEOPLE_KINDS:
                    _add(found.facts, unit.text)
            for path in extract_paths(turn.text):
                if path in acted and (worth_listing(path) or path in notes):
                    note(notes, path, "mentioned", "")
            collect_open(turns, index, open_candidates)
            # every statement: ``resolves`` asks for an outcome itself (a settling word, or the
            # answer of the person an open item waits on, "Priscilla says …")
            found.resolution_texts.extend(sentences(turn.text))
        if turn.role == "assistant" and turn.text.strip():
            found.latest_reply = first_sentence(turn.text)
        if turn.role == "user" and _is_correction(turn.text):
            found.corrections.extend(sentences(turn.text))
            said_parts = [s for s in sentences(turn.text) if not is_open_phrasing(s)][:2]
            said = shorten(" ".join(said_parts), max_words=30, max_cjk=70)
            after = _followup(turns, index, language)
            label = "用户纠正：" if language == "zh" else "User correction: "
            _add(found.errors, label + said + (f" → {after}" if after else ""))
        if turn.role == "tool":
            result_of = calls_by_name.get(turn.tool_name)
            action = tool_action(result_of, "") if result_of else "used"
            # Errors come from what the session ran (``session_paths.runs_here``): a fetched
            # page or a file read back that says "ValueError: …" is someone else's text.
            own = turn.status == "error" or runs_here(
                ToolCall(result_of.name, result_of.args) if result_of else ToolCall(turn.tool_name)
            )
            command = command_of(result_of) if result_of else ""
            output_paths = extract_paths(turn.text[:4000])
            shown = [p for p in output_paths if p in acted and (worth_listing(p) or p in notes)]
            for path in shown[:5]:
                note(notes, path, "seen in output", turn.tool_name)
            failed = own and _output_failed(turn, action)
            if result_of is not None and failed:
                what = f"`{command}`" if command else f"{turn.tool_name or 'tool'}"
                summary = _error_summary(turn)
                fix, passed = _fix_after(
                    turns, index, turn.tool_name, language, ran=action == "ran"
                )
                verb = "失败" if language == "zh" else "failed"
                item = f"{what} {verb}: {summary}" + (f" — {fix}" if fix else "")
                _add(found.errors, item)
                if not passed:
                    _add(found.unresolved_errors, f"{what} {verb}: {summary}")
                    _add(found.open_failures, _failure_item(what, summary, action, language))
            if result_of is not None and found.last_action.startswith(result_of.name):
                found.last_status = "error" if failed else "ok"
            if command and not failed:
                found.resolution_texts.append(f"`{command}` passed, resolved")
    found.files = list(notes.values())
    for index, item in open_candidates:
        later = [s for t in turns[index + 1 :] for s in sentences(t.text) if t.role != "tool"]
        if not any(resolves(item, s) for s in later):
            _add(found.open_items, item)
    if not found.chat:
        _complete(found, language, turns)
    return found
