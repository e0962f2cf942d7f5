"""Open questions, TODOs and promised follow-ups in a transcript, and what settles them.

Private to ``wm_langgraph.writer.offline``. Besides questions and TODO words, an open item is said
as a labelled list ("Left: (1) …, (2) …", "Open: …", "Remaining: …", "剩下：…", "未决：…"), as
"still need …" / "还没做", or as a promised follow-up ("I'll review it tomorrow", "我明天再看").
Each item of a labelled list is its own open issue (such lists were missed, so their
items never reached Open Issues).
"""

from __future__ import annotations

import re

from wm_langgraph.document.sections import SECTIONS
from wm_langgraph.document.text.settle import settles
from wm_langgraph.document.text.shorten import shorten
from wm_langgraph.document.text.units import is_follow_up, without_tag_question
from wm_langgraph.writer.offline._lang import keywords, sentences
from wm_langgraph.writer.offline._transcript import Turn

__all__ = [
    "QUESTION_RE",
    "REQUEST_RE",
    "RESOLVED_RE",
    "TODO_RE",
    "collect_open",
    "is_open_phrasing",
    "list_items",
    "relates",
    "resolves",
    "without_headers",
]

_I = re.IGNORECASE
QUESTION_RE = re.compile(r"[?？]\s*$")
# Small talk phrased as a question ("How was your week?"): nothing is left open by it.
SMALL_TALK_RE = re.compile(
    r"^\s*(?:\[[^\]\n]{0,40}\]\s*)*(?:how(?:'s| is| are| was| were| have| has)\s+"
    r"(?:you|things|it|life|everything|your (?:day|week|weekend|morning|evening|night|month|"
    r"summer|holiday|vacation|trip))\b[^?？]{0,30}|what'?s (?:up|new)[^?？]{0,20}|"
    r"你好吗|最近怎么样|最近好吗)[?？!.\s]*$",
    _I,
)
# A question that is really a request ("Can you fix that too?"): a goal, not an open issue.
REQUEST_RE = re.compile(r"\b(can|could|would|will) you\b|^\s*please\b|能不能|能否|请", _I)
TODO_RE = re.compile(
    r"\bTODO\b|\bstill needs?\b|\bstill open\b|\bstill to do\b|\bpending\b|\bnot yet\b|"
    r"\bfollow[- ]up\b|\bremaining\b|\bblocked\b|\boutstanding\b|"
    r"\bopen question\b|\bunresolved\b|\blater\b|\bnot now\b|待办|待定|待处理|待解决|待确认|待完成|"
    r"\b(?:will|'ll|’ll|to|must|need to|needs to|has to|have to)\s+(?:double-)?"
    r"(?:check|confirm|verify|find out|look into)\b|\bto be (?:confirmed|decided|determined)\b"
    r"|\btb[cd]\b|\bnot sure (?:yet )?(?:whether|if)\b|\bunclear whether\b|"
    r"未解决|未完成|还需要|尚未|以后再|之后再|"
    r"还(?:没|没有|未)(?:做|完成|处理|确定|解决|实现|开始|写|测试|上线|修|改|定)",
    _I,
)
RESOLVED_RE = re.compile(
    r"\b(done|fixed|resolved|answered|completed|implemented|added|passes|passing|pass|"
    r"works now|no longer|settled|decided|finished|closed|confirmed|confirms|verified|"
    r"clarified|turns out|turned out|it's settled)\b"
    r"|已解决|解决了|完成|搞定|修复了|已修复|通过了|已通过|确定了|确认了|已确认",
    _I,
)
# A promised follow-up: a future action tied to a later time.
_FOLLOW_UP_RE = re.compile(
    r"\b(?:I'll|I will|we'll|we will|I'm going to|we're going to|let's|I need to|we need to|"
    r"I have to|we have to|will)\b[^.!?]*\b(?:tomorrow|tonight|next week|next month|on monday|"
    r"on tuesday|on wednesday|on thursday|on friday)\b"
    r"|\b(?:tomorrow|next week)\b[^.!?]*\b(?:I'll|we'll|I will|we will)\b"
    r"|(?:明天|明早|明晚|后天|下周|回头|稍后|改天)[^。！？；]{0,8}?(?:再|会|要|去|来|继续|处理)",
    _I,
)
_LIST_RE = re.compile(
    r"^\s*(?:what(?:'s| is) )?(?:left|still left|remaining|still open|open|open questions?|"
    r"open items?|open issues?|pending|to ?do|todos?|next steps?|outstanding|blockers?)"
    r"\s*[:：]\s*(?P<rest>\S.*)$"
    r"|^\s*(?:剩下|还剩|剩余|未决|待办|未完成|遗留|待处理|待定|悬而未决)(?:的)?"
    r"(?:事项|问题|工作|任务)?\s*[:：]\s*(?P<zh>\S.*)$",
    _I,
)
_ENUM_RE = re.compile(r"\s*(?:\(\d{1,2}\)|（\d{1,2}）|(?<![\w.])\d{1,2}\)|[①②③④⑤⑥⑦⑧⑨⑩])\s*")
_PIECE_END = " \t,;，；、。.。"
_WHAT_LEFT_RE = re.compile(r"\b(?:left|remaining|open|pending|to do)\b|剩|还有什么|待办|未决", _I)
_GENERIC = frozenset({"todo", "need", "still", "question", "new", "open", "later", "decide"})
_HEADER_LINE_RE = re.compile(r"^\s*#{1,6}(?:\s|$)")
_NOT_CONTENT = frozenset(
    {"working memory", "[session history summary]", *(n.casefold() for n in SECTIONS)}
)


def without_headers(text: str) -> str:
    """``text`` without lines that are Markdown headers or a Working Memory's own labels
    (``### Working Memory``, ``   ## Open Issues``): injected structure, not what was said."""
    lines = [
        line
        for line in text.splitlines()
        if not _HEADER_LINE_RE.match(line) and line.strip().casefold() not in _NOT_CONTENT
    ]
    return "\n".join(lines)


def list_items(sentence: str) -> list[str]:
    """The items of a labelled open list: ``Left: (1) a, (2) b`` gives ``["a", "b"]``; a label
    with a single item (``Open: whether …``, ``TODO: …``) gives the sentence itself; any other
    sentence gives ``[]``."""
    match = _LIST_RE.match(sentence)
    if match is None:
        return []
    rest = (match["rest"] or match["zh"] or "").strip()
    pieces = [p.strip().strip(_PIECE_END) for p in _ENUM_RE.split(rest)]
    pieces = [re.sub(r"^(?:and|和|以及)\s*", "", p) for p in pieces]
    pieces = [p for p in pieces if p and any(ch.isalnum() for ch in p)]
    return pieces if len(pieces) > 1 else [sentence.strip()]


def is_open_phrasing(sentence: str) -> bool:
    """True when ``sentence`` says that something is still open (a TODO word, a labelled open
    list, "still need", a promised follow-up)."""
    return bool(
        TODO_RE.search(sentence)
        or _FOLLOW_UP_RE.search(sentence)
        or _LIST_RE.match(sentence)
        or is_follow_up(sentence)
    )


def relates(item: str, text: str) -> bool:
    """True when ``text`` is about ``item``: the same backticked command or path, or enough
    shared meaningful keywords (one is enough when ``text`` names the TODO / issue itself)."""
    code = set(re.findall(r"`([^`\n]+)`", item)) & set(re.findall(r"`([^`\n]+)`", text))
    if code:
        return True
    item_words = [w for w in keywords(item) if w not in _GENERIC]
    shared = len(set(item_words) & set(keywords(text)))
    explicit = re.search(r"\b(todo|issue|question)\b|待办|问题", text, _I) is not None
    return shared >= 2 or (shared >= 1 and (len(item_words) <= 2 or explicit))


def resolves(item: str, sentence: str) -> bool:
    """True when ``sentence`` reports ``item`` (an open question / TODO) as settled."""
    if settles(item, sentence):
        return True  # the capture check's own test (an outcome that clearly refers to it)
    if not RESOLVED_RE.search(sentence) or QUESTION_RE.search(sentence):
        return False
    return relates(item, sentence)


def _answered(question: str, replies: list[str]) -> bool:
    if any(relates(question, reply) for reply in replies):
        return True
    # "What is left?" is answered by a reply that lists what is left.
    return bool(_WHAT_LEFT_RE.search(question)) and any(
        list_items(s) for reply in replies for s in sentences(reply)
    )


_WHO_ANSWERS_RE = re.compile(
    r"^\s*(?:I'll|I will|we'll|we will|let me|I'm going to)\s+(?:ask|check with|email|call)\s+"
    r"[A-Z]\w+",
    _I,
)
"""A promise to ask someone, right after a question: part of that open item."""


def collect_open(turns: list[Turn], index: int, out: list[tuple[int, str]]) -> None:
    """Open questions, TODOs and follow-ups said in ``turns[index]`` that the next turns do
    not answer.

    A question of the assistant counts as answered once the user speaks again; a question of
    the user once an assistant reply before the next user message is about it.
    """
    turn = turns[index]
    replies: list[str] = []
    for later in turns[index + 1 :]:
        if later.role == "user":
            if turn.role == "assistant":
                replies.append(later.text)
            break
        if later.role == "assistant" and turn.role == "user":
            replies.append(later.text)
    said_all = sentences(turn.text)
    for n, said in enumerate(said_all):
        sentence = without_tag_question(said)  # "I need X, can you ask them?" states a need
        after = said_all[n + 1] if n + 1 < len(said_all) else ""
        if QUESTION_RE.search(sentence) and _WHO_ANSWERS_RE.match(after):
            # "Should refunds count? I'll ask Priscilla.": who will answer belongs to the item
            sentence = f"{sentence} {after}"
        listed = list_items(sentence)
        if listed:
            out.extend(
                (index, shorten(item, max_words=30, max_cjk=70))
                for item in listed
                if not RESOLVED_RE.search(item)
            )
            continue
        question = bool(QUESTION_RE.search(sentence))
        if RESOLVED_RE.search(sentence) and not question:
            continue  # "the wiring TODO is done" closes an item, it does not open one
        if question and turn.role == "user" and REQUEST_RE.search(sentence):
            continue  # a request phrased as a question is a goal
        if turn.role == "assistant" and question and replies:
            continue
        if question and SMALL_TALK_RE.match(sentence):
            continue
        if turn.role == "user" and question and _answered(sentence, replies):
            continue
        if question or is_open_phrasing(sentence):
            out.append((index, shorten(sentence, max_words=30, max_cjk=70)))
