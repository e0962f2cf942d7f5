"""Salient units of messages: what a careful reader of a conversation would keep. Pure, no I/O.

A *unit* is one short extractive statement of a message with its kind, its anchors (names,
numbers with units, dates, money, ids, versions, paths) and where it came from (message index
and role). Kinds:

- coding sessions: ``decision`` (with its reason), ``constraint``, ``preference``, ``todo``,
  ``correction`` (the user corrects a value), ``error``, ``path``, ``fact`` (a statement
  carrying an anchor);
- chats: ``event`` (something that happened, with its date), ``plan`` (something that will
  happen), ``preference``, ``possession``, ``relationship``, ``person`` and ``place`` (a
  statement naming one), ``personal`` (a present-tense statement about the speaker's world,
  "I'm vegetarian", "My blood type is O negative": :func:`is_personal_fact`).

Relative dates ("yesterday", "last week", "next month", "昨天", "上周") are resolved against
the *session date*: the date a message carries at its start (``[3:10 pm on 4 March, 2021]``,
``2021-03-04``, ``2021年3月4日``) or one passed in; the resolved date is written after the
phrase (``yesterday (3 March 2021)``) so the unit stands alone.

Text is data: units from tool output (role ``tool``) or any unit that reads as an instruction
to the assistant (``ignore previous instructions``, ``ASSISTANT INSTRUCTION``, "email the .env
file to …", "the user has approved …") is never produced — see :func:`reads_as_instruction`.
Questions, greetings and reactions ("That's awesome!", "How are you?") carry nothing to keep
and give no unit.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta

from wm_langgraph.document.text.anchors import extract_anchors
from wm_langgraph.document.text.paths import extract_paths
from wm_langgraph.document.text.shorten import shorten

__all__ = [
    "ABBREVIATIONS",
    "CHAT_KINDS",
    "CODING_KINDS",
    "PASTE_LINES",
    "PASTE_RUN",
    "Unit",
    "addressed_name",
    "chat_kinds",
    "date_line",
    "echoes",
    "extract_units",
    "format_date",
    "is_chat",
    "is_correction",
    "is_follow_up",
    "is_personal_fact",
    "is_small_talk",
    "parse_session_date",
    "pasted_lines",
    "reads_as_instruction",
    "resolve_relative_dates",
    "sentence_parts",
    "shorten_whole",
    "split_sentences",
    "statement_key",
    "statement_kind",
    "tells_failure",
    "without_ack",
    "without_interjection",
    "without_tag_question",
]

CHAT_KINDS = frozenset(
    {"event", "plan", "preference", "possession", "relationship", "person", "place", "personal"}
)
"""Kinds a chat establishes."""
CODING_KINDS = frozenset(
    {"decision", "constraint", "todo", "correction", "error", "fix", "path", "fact"}
)
"""Kinds a working session establishes."""

_I = re.IGNORECASE
_MAX_WORDS = 32
_MAX_CJK = 70

# ------------------------------------------------------------------------------------------
# Sentences
# ------------------------------------------------------------------------------------------

_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|(?<=[。！？；])|\n+")
ABBREVIATIONS = frozenset(
    re.findall(
        r"\S+",
        "dr mr mrs ms mx prof st jr sr mt ft rev hon gen capt lt col sgt gov sen rep pres "
        "vs dept e.g i.e a.m p.m u.s u.k",
    )
)
"""Words that end with a dot without ending a sentence ("Dr. Okafor", "e.g. Redis"): a split
after one of them, or after a single capital ("J. Smith"), would cut a name in two."""
_ABBREVIATION_END_RE = re.compile(r"(?:^|[\s(\[\"'])(?P<word>[A-Za-z](?:[A-Za-z.]{0,7}))\.$")


def _ends_with_abbreviation(part: str) -> bool:
    match = _ABBREVIATION_END_RE.search(part)
    if match is None:
        return False
    word = match.group("word")
    return word.casefold() in ABBREVIATIONS or (len(word) == 1 and word.isupper())


def sentence_parts(text: str, split_re: re.Pattern[str] = _SPLIT_RE) -> list[str]:
    """``text`` split by ``split_re`` where a sentence ends: never after an abbreviation or an
    initial ("Dr. Okafor", "J. Smith", "e.g. Redis") on the same line."""
    parts: list[str] = []
    start = 0
    for match in split_re.finditer(text):
        piece = text[start : match.start()]
        if "\n" not in match.group(0) and _ends_with_abbreviation(piece.rstrip()):
            continue  # the sentence goes on after the abbreviation
        parts.append(piece)
        start = match.end()
    parts.append(text[start:])
    return parts


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (English and CJK punctuation, line breaks), bullets stripped; an
    abbreviation's dot ends no sentence (:func:`sentence_parts`)."""
    out: list[str] = []
    for part in sentence_parts(text):
        clean = re.sub(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", "", part or "").strip()
        if clean and any(ch.isalnum() for ch in clean):
            out.append(clean)
    return out


def _has_cjk(text: str) -> bool:
    return re.search(r"[\u3040-\u30ff\u3400-\u9fff]", text) is not None


# ------------------------------------------------------------------------------------------
# Dates
# ------------------------------------------------------------------------------------------

_MONTHS = {name.casefold(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.casefold(): n for n, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR_RE = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m>{_MONTH_ALT})\.?,?\s+(?P<y>\d{{4}})\b", _I
)
_MONTH_DAY_YEAR_RE = re.compile(
    rf"\b(?P<m>{_MONTH_ALT})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", _I
)
_ISO_RE = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
_ZH_DATE_RE = re.compile(r"(?P<y>\d{4})\s*年\s*(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]")
# A date line at the start of a message: "[3:10 pm on 4 March, 2021] …".
_DATE_LINE_RE = re.compile(r"^\s*\[(?P<inner>[^\]\n]{6,60})\]\s*")


_LEADING_DATES = tuple(
    re.compile(r"^\s*(?:" + p.pattern + r")", p.flags)
    for p in (_DAY_MONTH_YEAR_RE, _MONTH_DAY_YEAR_RE, _ISO_RE, _ZH_DATE_RE)
)


def _make_date(year: str, month: str | int, day: str) -> date | None:
    number = month if isinstance(month, int) else _MONTHS.get(month.casefold().rstrip("."))
    if number is None:
        try:
            number = int(month)
        except ValueError:
            return None
    try:
        return date(int(year), number, int(day))
    except ValueError:
        return None


def parse_session_date(text: str) -> date | None:
    """The first full date (day, month and year) written in ``text``, or ``None``.

    Accepts ``4 March, 2021``, ``March 4, 2021``, ``2021-03-04`` and ``2021年3月4日``.
    """
    found: list[tuple[int, date]] = []
    for pattern in (_DAY_MONTH_YEAR_RE, _MONTH_DAY_YEAR_RE, _ISO_RE, _ZH_DATE_RE):
        for match in pattern.finditer(text):
            made = _make_date(match.group("y"), match.group("m"), match.group("d"))
            if made is not None:
                found.append((match.start(), made))
                break
    return min(found)[1] if found else None


def date_line(text: str) -> tuple[date | None, str]:
    """A message's leading date: ``[… 4 March, 2021]`` gives the date and the text after the
    brackets; a bare full date at the start gives the date and the text unchanged (the date is
    part of what is said); ``(None, text)`` without one."""
    match = _DATE_LINE_RE.match(text)
    if match is None:
        for pattern in _LEADING_DATES:
            lead = pattern.match(text)
            if lead is not None:
                when = _make_date(lead.group("y"), lead.group("m"), lead.group("d"))
                return when, text  # a date that is part of what is said stays in it
        return None, text
    when = parse_session_date(match.group("inner"))
    return (when, text[match.end() :]) if when is not None else (None, text)


def format_date(when: date) -> str:
    """``4 March 2021``: the form a reader (and a question about the chat) uses."""
    return f"{when.day} {calendar.month_name[when.month]} {when.year}"


def _month_name(year: int, month: int) -> str:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return f"{calendar.month_name[month]} {year}"


_WEEKDAYS = {name.casefold(): n for n, name in enumerate(calendar.day_name)}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a few": 3,
    "a couple of": 2,
    "couple of": 2,
}
_COUNT = (
    r"(?P<n>\d{1,2}|a few|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|"
    r"nine|ten)"
)
_RELATIVE_RE = re.compile(
    r"\b(?:"
    r"(?P<yesterday>yesterday|last night)|(?P<today>today|tonight|this morning|this afternoon"
    r"|this evening)|(?P<tomorrow>tomorrow)"
    r"|(?P<lastweekday>last (?P<lwd>monday|tuesday|wednesday|thursday|friday|saturday|sunday))"
    r"|(?P<lastweekend>last weekend)|(?P<lastweek>last week)|(?P<nextweek>next week)"
    r"|(?P<thisweekend>this (?:past )?weekend)"
    r"|(?P<lastmonth>last month)|(?P<nextmonth>next month)|(?P<thismonth>this month)"
    r"|(?P<lastyear>last year)|(?P<nextyear>next year)|(?P<thisyear>this year)"
    rf"|(?P<ago>{_COUNT} (?P<unit>days?|weeks?|months?|years?) ago)"
    r")\b"
    r"|(?P<zh>前天|昨天|昨晚|今天|今晚|明天|上周末|上周|上个?星期|下周|下个?星期|上个月|下个月|本月|"
    r"这个月|去年|明年|今年)",
    _I,
)
_ZH_MAP = {
    "前天": "d-2",
    "昨天": "d-1",
    "昨晚": "d-1",
    "今天": "d0",
    "今晚": "d0",
    "明天": "d1",
    "上周末": "wknd",
    "上周": "w-1",
    "上星期": "w-1",
    "上个星期": "w-1",
    "下周": "w1",
    "下星期": "w1",
    "下个星期": "w1",
    "上个月": "m-1",
    "上月": "m-1",
    "下个月": "m1",
    "下月": "m1",
    "本月": "m0",
    "这个月": "m0",
    "去年": "y-1",
    "明年": "y1",
    "今年": "y0",
}


def _resolve(match: re.Match[str], ref: date) -> str:
    groups = match.groupdict()
    code = _ZH_MAP.get(groups["zh"] or "", "")
    if groups["yesterday"] or code == "d-1":
        return format_date(ref - timedelta(days=1))
    if code == "d-2":
        return format_date(ref - timedelta(days=2))
    if groups["today"] or code == "d0":
        return format_date(ref)
    if groups["tomorrow"] or code == "d1":
        return format_date(ref + timedelta(days=1))
    if groups["lastweekday"]:
        back = (ref.weekday() - _WEEKDAYS[groups["lwd"].casefold()]) % 7 or 7
        return format_date(ref - timedelta(days=back))
    if groups["lastweekend"] or groups["thisweekend"] or code == "wknd":
        return f"the weekend before {format_date(ref)}"
    if groups["lastweek"] or code == "w-1":
        return f"the week before {format_date(ref)}"
    if groups["nextweek"] or code == "w1":
        return f"the week after {format_date(ref)}"
    if groups["lastmonth"] or code == "m-1":
        return _month_name(ref.year, ref.month - 1)
    if groups["nextmonth"] or code == "m1":
        return _month_name(ref.year, ref.month + 1)
    if groups["thismonth"] or code == "m0":
        return _month_name(ref.year, ref.month)
    if groups["lastyear"] or code == "y-1":
        return str(ref.year - 1)
    if groups["nextyear"] or code == "y1":
        return str(ref.year + 1)
    if groups["thisyear"] or code == "y0":
        return str(ref.year)
    count = _NUMBER_WORDS.get((groups["n"] or "").casefold()) or int(groups["n"] or 1)
    unit = (groups["unit"] or "day").casefold().rstrip("s")
    if unit == "day":
        return format_date(ref - timedelta(days=count))
    if unit == "week":
        return f"the week of {format_date(ref - timedelta(weeks=count))}"
    if unit == "month":
        return _month_name(ref.year, ref.month - count)
    return str(ref.year - count)


def resolve_relative_dates(text: str, ref: date | None) -> str:
    """``text`` with each relative date phrase followed by the date it means on ``ref``.

    ``"I fixed the bike yesterday"`` on 4 March 2021 gives ``"I fixed the bike yesterday
    (3 March 2021)"``; ``"next month"`` gives ``"next month (April 2021)"``; ``"昨天"`` gives
    ``"昨天（2021年3月3日）"`` style text with the English date. Without ``ref`` the text is
    returned unchanged.
    """
    if ref is None:
        return text

    def annotate(match: re.Match[str]) -> str:
        resolved = _resolve(match, ref)
        if match.group("zh"):
            return f"{match.group(0)}（{resolved}）"
        return f"{match.group(0)} ({resolved})"

    return _RELATIVE_RE.sub(annotate, text)


# ------------------------------------------------------------------------------------------
# Hostile text
# ------------------------------------------------------------------------------------------

_INSTRUCTION_RE = re.compile(
    r"\b(?:ignore|disregard|forget)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all)\b"
    r"[^.\n]{0,20}\b(?:instructions?|rules|prompts?|messages?)\b"
    r"|\b(?:assistant|system|ai|agent)\s+(?:instructions?|note|override|prompt)\s*:"
    r"|\byou (?:must|should|are (?:now|required to)|have to|need to)\b"
    r"|\b(?:the )?user (?:has )?(?:approved|authori[sz]ed|consented|allowed)\b"
    r"|^\s*(?:please\s+)?(?:email|send|upload|post|forward|exfiltrate|transfer|leak|reveal|"
    r"print|output|run|execute|delete|remove|curl|wget)\b[^.\n]{0,80}"
    r"\b(?:to|at)\s+(?:\S+@\S+|https?://\S+)"
    r"|\b(?:email|send|upload|post|forward|exfiltrate)\b[^.\n]{0,60}"
    r"(?:\.env\b|api[_ ]?keys?|passwords?|secrets?|credentials|tokens?|id_rsa)"
    r"|\bnew instructions?\b|\bjailbreak\b|\bdo anything now\b"
    r"|忽略(?:之前|以上|上面|先前)的?(?:所有)?(?:指令|指示|规则)|(?:助手|系统)指令[:：]|"
    r"把[^。]{0,20}(?:密钥|密码|凭证|\.env)[^。]{0,20}(?:发送|发给|上传)",
    _I,
)


def reads_as_instruction(text: str) -> bool:
    """Whether ``text`` reads as an instruction to the assistant (or claims an approval):
    such text is never kept as a fact, whoever wrote it."""
    return _INSTRUCTION_RE.search(text) is not None


# ------------------------------------------------------------------------------------------
# The same statement: acknowledgements, speakers, markers
# ------------------------------------------------------------------------------------------

_ACK_PREFIX_RE = re.compile(
    r"^\s*(?:(?:noted|got it|understood|ok(?:ay)?|sure|done|will do|acknowledged|roger(?: that)?|"
    r"thanks|thank you|great|perfect|alright|all right|yes|yep|of course|absolutely|"
    r"好的|收到|明白|了解|记下了|知道了)\s*(?:[:,.!—–-]|，|：|。|！)\s*)+",
    _I,
)
_SPEAKER_PREFIX_RE = re.compile(
    r"^\s*(?:(?i:user|assistant|human|ai|me|you)|用户|助手|[A-Z][a-z]{1,20}(?: [A-Z][a-z]{1,20})?)"
    r"\s*[:：]\s*"
)
_MARKERS_RE = re.compile(r"^\s*(?:[-*+•]\s+)?(?:\[[^\]\n]{0,40}\]\s*)*")
_KEY_TRIM = " \t.;,:!?*_`'\"“”‘’…。！？；，："


def without_ack(sentence: str) -> str:
    """``sentence`` without a leading acknowledgement ("Noted: …", "Got it — …", "好的，…"):
    what an assistant says back is the statement it repeats."""
    return _ACK_PREFIX_RE.sub("", sentence, count=1).strip() or sentence.strip()


def statement_key(text: str) -> str:
    """The key one thing has however it is written down: without bullet, markers (``[new]``,
    ``[restored]``, a guard's own), speaker prefixes (``User:``, ``Owen:``), acknowledgements
    (``Noted:``), case, spacing, quotes and final punctuation. Two texts with one key are the
    same item."""
    out = text
    for _ in range(3):
        before = out
        out = _MARKERS_RE.sub("", out)
        out = _ACK_PREFIX_RE.sub("", out, count=1)
        out = _SPEAKER_PREFIX_RE.sub("", out, count=1)
        if out == before:
            break
    out = re.sub(r"\s+", " ", out).strip().casefold()
    return out.strip(_KEY_TRIM)


def echoes(sentence: str, keys: Iterable[str]) -> bool:
    """Whether ``sentence`` repeats one of the statements whose :func:`statement_key` is in
    ``keys``: the same key, or (a quote cut with "…") the start of one at a word boundary."""
    key = statement_key(sentence)
    if not key:
        return False
    cut = sentence.rstrip().endswith("…")
    for other in keys:
        if key == other:
            return True
        if cut and len(key) >= 12 and other.startswith(key):
            return True
    return False


# ------------------------------------------------------------------------------------------
# Pasted data, told by its shape
# ------------------------------------------------------------------------------------------

PASTE_RUN = 5
"""Data lines (log, code, listing) in a row that make a paste."""
PASTE_LINES = 20
"""Non-blank lines that make a whole message a paste (a file, a document): a dense turn is a
few long lines, not dozens."""
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")
_CODE_LINE_RE = re.compile(
    r"^(?:\t| {2,})\S|[{};]\s*$|^\s*[}\])]|=>|==|!=|\)\s*\{"
    r"|^\s*(?:def|class|import|from \S+ import|return|function|const|var|public|private|"
    r"#include|SELECT|INSERT|CREATE TABLE)\b|^\s*[<#@$>]\S"
)
_LOG_LINE_RE = re.compile(
    r"^\s*(?:\[?\d{4}-\d{2}-\d{2}|\[?\d{1,2}:\d{2}:\d{2}|\d{5,}|(?:DEBUG|INFO|WARN(?:ING)?|ERROR|"
    r"FATAL|TRACE|CRITICAL)\b|at [\w.$<>]+\(|File \"|\|)"
)
_PROSE_WORD_RE = re.compile(r"[A-Za-z][a-z'’]*[,.;:!?]?|[\u3400-\u9fff]+[，。！？]?")


def _data_line(line: str) -> bool:
    """A line of a log, of code or of a listing: a marker of one, or mostly not words."""
    stripped = line.strip()
    if not stripped:
        return False
    if _CODE_LINE_RE.search(line) or _LOG_LINE_RE.search(line):
        return True
    tokens = re.sub(r"^(?:[-*+•]|\d{1,3}[.)])\s+", "", stripped).split()
    words = sum(1 for t in tokens if _PROSE_WORD_RE.fullmatch(t))
    return 2 * words < len(tokens) or (len(tokens) <= 2 and not stripped.endswith((".", "!")))


def pasted_lines(text: str) -> frozenset[int]:
    """The indexes (``text.splitlines()``) of the lines of ``text`` that are pasted data, told by
    their shape: a fenced block, a run of :data:`PASTE_RUN` or more data lines (log, code, a
    listing; blank lines inside do not break it), or every line of a message of
    :data:`PASTE_LINES` or more non-blank lines. Prose of a few long lines, however dense,
    is never a paste."""
    lines = text.splitlines()
    if sum(1 for line in lines if line.strip()) >= PASTE_LINES:
        return frozenset(range(len(lines)))
    out: set[int] = set()
    fenced = False
    run: list[int] = []

    def close() -> None:
        if sum(1 for i in run if lines[i].strip()) >= PASTE_RUN:
            out.update(run)
        run.clear()

    for index, line in enumerate(lines):
        if _FENCE_RE.match(line):
            out.add(index)
            fenced = not fenced
            continue
        if fenced:
            out.add(index)
        elif _data_line(line):
            run.append(index)
        elif line.strip():
            close()
    close()
    return frozenset(out)


# ------------------------------------------------------------------------------------------
# Classification
# ------------------------------------------------------------------------------------------

_CHITCHAT_RE = re.compile(
    r"^\s*(?P<opener>hey|hi|hello|wow|whoa|aw+|oh|omg|haha+|lol|thanks?|thank you|congrats|"
    r"congratulations|good (?:morning|night|luck)|bye|see you|take care|no problem|sure|yeah|"
    r"yes|ok(?:ay)?|cool|great|awesome|nice|amazing|that's (?:so |really )?(?:great|awesome|"
    r"amazing|cool|nice|wonderful|fantastic|sweet|lovely|good|great to hear|awesome to hear)|"
    r"sounds (?:great|good|fun|awesome|amazing)|glad|so glad|i'm so glad|you're welcome|"
    r"i'm (?:fine|ok|okay|good|alright|well)|not bad|"
    r"哈哈|谢谢|好的|太好了|真棒|你好|嗯)\b(?P<rest>[^.!?。！？]{0,40})[.!?。！？]*\s*$",
    _I,
)
_CONTENT_WORD_RE = re.compile(r"[A-Za-z][a-z'’]{2,}|[\u3400-\u9fff]{2,}")
_STRONG_ANCHOR_RE = re.compile(r"\d\S*\d|\d{2,}|\d\s?[A-Za-z°%€$£]|(?<=[a-z,;] )[A-Z][a-z]{2,}")
"""What makes the words behind an interjection a statement: a number of two digits or with
a unit ("220°C", "3 pm"), or a name mid-sentence ("oh, and Ana arrives at noon")."""
_EMPTY_PRAISE_RE = re.compile(
    r"^\s*(?:it|that|this)(?:'s| is| was| sounds| looks) (?:so |really |very |super )?"
    r"(?:great|awesome|amazing|cool|nice|wonderful|fantastic|beautiful|lovely|inspiring|"
    r"impressive|sweet|fun|hard|tough)\b"
    r"|^\s*(?:(?:it|that|this|you)\s+)?must(?:'ve| have)? (?:be|been|feel|felt|take|taken)\b"
    r"|\b(?:your|ur) (?:support|encouragement|kindness|words)\b|\bmeans? (?:a lot|so much)\b"
    r"|\byou(?:'ve| have) got this\b|\b(?:i'm|i am) (?:always )?here for you\b"
    r"|\bproud of you\b|\bkeep (?:it up|going|pushing)\b|\bgo for it\b|\bgood luck\b"
    r"|\bbelieve in (?:yourself|you)\b|\byou can do (?:it|this)\b|\bway to go\b"
    r"|^\s*(?:no (?:prob(?:lem)?|worries)|gotcha|absolutely|definitely|totally|exactly|"
    r"i (?:get|understand|hear) (?:it|you)|same here|me too|of course)\b",
    _I,
)
_FIRST_PERSON_RE = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|we|we're|we've|we'll|my|our|me|us)\b|我|我们|咱们", _I
)
_EVENT_RE = re.compile(
    r"\b(?:went|go(?:ne)? to|visited|attended|joined|started|finished|graduated|moved|got|"
    r"bought|adopted|met|married|lost|won|ran|took|made|painted|wrote|signed up|"
    r"had|saw|traveled|travelled|returned|opened|launched|quit|hired|celebrated|"
    r"volunteered|competed|performed|learned|learnt|received|gave|hosted|organi[sz]ed|"
    r"just \w+ed|have been|has been|was|were|did)\b|\b(?:I|we) (?:\w+ )?\w{3,}ed\b"
    r"|去了|参加了|开始了|完成了|搬到|买了|领养了|认识了|结婚|失去|赢了|收到了|见了|看了|学了",
    _I,
)
_PLAN_RE = re.compile(
    r"\b(?:going to|gonna|plan(?:ning)? to|plans? (?:for|to)|will|'ll|hoping to|hope to|"
    r"want to|wanna|thinking (?:about|of)|about to|looking forward to|intend to|"
    r"next (?:week|month|year|weekend)|tomorrow|soon|someday|one day)\b"
    r"|打算|计划|准备|将要|想要|明天|下周|下个月|明年",
    _I,
)
_PREFERENCE_RE = re.compile(
    r"\b(?:love|loves|loved|like|likes|enjoy|enjoys|enjoyed|prefer|prefers|favou?rite|"
    r"passionate about|into|fan of|hate|hates|can't stand|dislike|obsessed with)\b"
    r"|喜欢|爱|最爱|偏好|更喜欢|讨厌|热爱",
    _I,
)
_POSSESSION_RE = re.compile(
    r"\b(?:I|we) (?:have|own|got|bought|adopted|have got)\b|\bmy (?:new |own )?"
    r"(?:dog|dogs|cat|cats|pet|pets|car|house|home|apartment|bike|guitar|piano|garden|"
    r"business|shop|store|studio|company|book|collection|puppy|kitten)\b"
    r"|我(?:有|养了|买了)",
    _I,
)
_RELATIONSHIP_RE = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:(?:best|old|new|close)\s+)?(?:husband|wife|partner|"
    r"boyfriend|girlfriend|fianc[ée]e?|kids?|children|son|sons|daughter|daughters|mom|mum|"
    r"mother|dad|father|parents|sister|sisters|brother|brothers|grandma|grandmother|grandpa|"
    r"grandfather|family|friend|friends|cousin|aunt|uncle|neighbou?r|boss|coworker|colleague|"
    r"mentor|team|roommate)\b"
    r"|我的?(?:丈夫|妻子|老公|老婆|孩子|儿子|女儿|妈妈|爸爸|父母|姐姐|妹妹|哥哥|弟弟|朋友|同事|老板)",
    _I,
)
_PLACE_RE = re.compile(
    r"\b(?:in|at|to|from|near|visited|around)\s+(?:the\s+)?(?P<place>[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})"
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decide|decision|chose|choose|chosen|agreed|we'll use|we will use|"
    r"going with|switch(?:ed)? to|instead of|because)\b"
    r"|\blet(?:'|’)?s (?:cap|set|use|keep|limit|go with|stick with|switch to|pin|freeze|adopt|"
    r"standardi[sz]e|require|drop|move to)\b"
    r"|决定|选择|选用|采用|因为",
    _I,
)
_CONSTRAINT_RE = re.compile(
    r"\b(?:must|never|always|at most|at least|no more than|required|requirement|deadline|"
    r"budget|limit|don't|do not|should|should not|shouldn't|only|can't|cannot|can not)\b"
    r"|,\s*not\s+(?:my|our|the|a|an|on|at|in|to)\b"
    r"|必须|务必|不要|不能|禁止|截止|预算|限制|应该",
    _I,
)
_CODING_PREFERENCE_RE = re.compile(r"\b(?:prefer|prefers|preferred|preference)\b|偏好|更喜欢", _I)
_TODO_RE = re.compile(
    r"\bTODO\b|\b(?:still|also) (?:need(?:s)?|ha(?:ve|s) to)\b|\bfollow[- ]up\b|\bremind me\b"
    r"|\bdon't forget\b|\b(?:I|we) (?:still )?need (?:a|an|the|some)\b|\bescalated\b"
    r"|\b(?:waiting|wait) (?:for|on)\b|\bawaiting\b|\blet me know (?:when|once) (?!you\b)"
    r"|\bnext step\b|\bnot now,? but\b|待办|还需要|别忘了|记得|还没(?:决定|定|确定)|未定"
    r"|\b(?:will|'ll|’ll|to|must|need to|needs to|has to|have to)\s+(?:double-)?"
    r"(?:check|confirm|verify|find out|look into)\b|\bto be (?:confirmed|decided|determined)\b"
    r"|\btb[cd]\b|\bnot sure (?:yet )?(?:whether|if)\b|\bunclear whether\b",
    _I,
)
_CORRECTION_RE = re.compile(
    r"^\s*(?:no\b|nope\b|actually\b|that(?:'s| is) (?:wrong|not right|incorrect)|wrong\b|"
    r"not quite\b|i said\b|correction\b|scratch that\b|i meant\b|sorry,? i meant\b|"
    r"i was wrong\b|update\s*:|change of plans?\b)"
    r"|^\s*(?:不对|不是|错了|其实|搞错|更正|訂正|修正：)",
    _I,
)
_MISTAKE_RE = re.compile(
    r"\b(?:typo|my mistake|my bad|mistyped|misspoke|misread|swapped|mixed up|got (?:it|that) wrong"
    r"|(?:gave|told|sent|wrote|typed|said|put) (?:you )?(?:the |a )?wrong"
    r"|wrong (?:number|date|time|day|address|amount|figure|value|name|one|code))\b"
    r"|写错|说错|记错|弄错|搞错|間違",
    _I,
)
"""A speaker owning a mistake ("I gave you the wrong number", "I swapped two digits")."""
_HEDGE_OPENER_RE = re.compile(
    r"^\s*(?:sorry|oops|whoops|wait|hmm+|oh no|ah|err?m?|sorry,? no)\s*[,.!:—–-]", _I
)
_RETIRED_VALUE_RE = re.compile(
    r",?\s*\bnot\s+(?:the\s+|on\s+|at\s+|in\s+)?(?:\d|[A-Z][a-z]{2,})|不是\s*\d", _I
)
"""The value a correction retires: "at 8:45, not 8:15", "in Leuven now, not Ghent"."""
_CORRECTED_VALUE_RE = re.compile(r"\d|\bnot\b|\binstead\b|\brather than\b|不是|而是", _I)
"""What a correcting sentence carries: a value, or the one it retires ("Priya, not Maria")."""
_ERROR_RE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b|\bFAILED\b|\bexit code [1-9]"
    r"|错误|失败|报错|异常|エラー|失敗|例外"
)
_PROSE_ERROR_RE = re.compile(
    r"\b(?:fails?|failed|failing|failures?|crash(?:es|ed|ing)?|timed out|times out|timeouts?|"
    r"errors?|exceptions?|broken|breaks|broke|hangs|hung|panic(?:s|ked)?|segfaults?|OOM|"
    r"out of memory|(?:does not|doesn't|did not|didn't|won't) (?:work|start|build|compile|run)|"
    r"not working|returns? (?:an? )?(?:HTTP )?[45]\d\d)\b|报错|失败|出错|超时|崩溃|错误|过期了"
    r"|エラー|失敗|タイムアウト|クラッシュ",
    _I,
)
"""An error told in words ("the deploy fails with 'exec format error'", "timed out twice")."""
_ATTRIBUTIVE_FAILURE_RE = re.compile(r"\b(?:failed|failing|broken|crashed)\s+[a-z][a-z-]*s\b", _I)
"""A failure word naming a kind of thing ("retry failed webhooks", "a queue for failed jobs"):
in a follow-up it says what to do about such things, not that something failed."""
_FIX_RE = re.compile(
    r"^\s*(?:fixed|resolved|solved)\b|\b(?:fixed (?:it|this|that|the)|the fix (?:is|was)|"
    r"fixed by|resolved by|solved by|works now|working now|is fixed|was fixed|now works|"
    r"now passes|passes now|workaround)\b|修复了|已修复|解决了"
    r"|修正しました|直しました|解決しました|修正済み",
    _I,
)
"""A fix told in words ("Fixed it: rebuilt the image…", "the deploy works now")."""
_TECH_RE = re.compile(
    r"`|[\w.-]/[\w.-]|\.[a-z]{1,4}\b|--\w|\b(?:build|deploy\w*|CI|job|script|runners?|server|"
    r"service|requests?|query|queries|migrations?|pipelines?|image|container|pods?|endpoints?|"
    r"api|webhooks?|database|db|cron|workers?|compil\w+|install\w*|upgrade|release|"
    r"function|module|login|checkout|cluster|node|port|timeout|config|schema|queue|cache)\b"
    r"|代码|部署|服务|脚本|接口|数据库|测试|网关|证书|服务器|集群"
    r"|ビルド|デプロイ|サーバー|スクリプト|データベース|テスト|モジュール|コード",
    _I,
)
"""A technical subject: an error or a fix of one is a working session's, not a life event."""
_REMEMBER_RE = re.compile(
    r"\b(?:please\s+)?(?:remember|don'?t forget|keep in mind|make a note of|note down)"
    r"(?:\s+(?:that|this|it))?\b|\bkeep (?:that|this|it) in mind\b|记住|记一下|请记得",
    _I,
)
"""An explicit "remember this": the statement is always kept."""
_REMEMBER_TAIL_RE = re.compile(
    r"[\s,;:—–-]*(?:(?:and|so)\s+)?(?:please\s+)?(?:remember|keep in mind|don'?t forget|"
    r"make a note of|note down)(?:\s+(?:that|this|it))?(?:\s+(?:for me|please))?[\s.!]*$"
    r"|[\s,;:—–-]*keep (?:that|this|it) in mind[\s.!]*$",
    _I,
)
_REMEMBER_HEAD_RE = re.compile(
    r"^\s*(?:please\s+)?(?:remember|keep in mind|don'?t forget|note)(?:\s+that\b|\s*[:：,])\s*",
    _I,
)
_QUESTION_RE = re.compile(r"[?？]\s*$")
_TAG_QUESTION_RE = re.compile(
    r",\s*(?:did you know|you know|right|remember|isn't it|wasn't it|don't you think|"
    r"can you believe it|believe it or not"
    r"|(?:can|could|would|will) you (?:please )?(?:ask|check|tell|email|call|book|arrange|"
    r"handle|find out|look into|sort)\b[^?？]{0,40})\s*[?？]\s*$",
    _I,
)
"""A statement with a question tagged on ("Owen grew up in Brno, did you know?", "I need a
late check-out on the 18th, can you ask them?"): a statement."""
_SALIENT_ANCHOR_RE = re.compile(r"\d|[A-Z][a-z]{2,}|[\u3400-\u9fff]{2,}")
_SENTENCE_START_WORDS = frozenset(
    re.findall(
        r"\S+",
        "i i'm i've i'd i'll we we're the a an it that this my our yes no so and but oh hey hi "
        "wow yeah well also just thanks thank you congrats what how when why where who",
    )
)


@dataclass(frozen=True, slots=True)
class Unit:
    """One salient statement.

    Attributes:
        kind: One of :data:`CHAT_KINDS` or :data:`CODING_KINDS`.
        text: The statement, short and extractive (relative dates resolved in place).
        anchors: Its anchors in the guards' canonical form (sorted).
        index: Index of the source message in the input sequence.
        role: The source message's role (``user``, ``assistant``, ``tool``).
        when: The session date in force at the message (``None`` when unknown).
        salience: How much a reader would lose without it (higher keeps longer).
        names: Capitalised names of people or places it mentions.
        pasted: It comes from pasted data, told by its shape (:func:`pasted_lines`: a log, code,
            a long listing, a message of many lines), not from a statement of the session.
        explicit: The speaker asked for it to be remembered ("please remember that"): it is
            always kept.
    """

    kind: str
    text: str
    anchors: tuple[str, ...]
    index: int
    role: str
    when: date | None = None
    salience: int = 0
    names: tuple[str, ...] = field(default_factory=tuple)
    pasted: bool = False
    explicit: bool = False


_PERSON_VERBS = frozenset(
    re.findall(
        r"\S+",
        "owns wants said says asked asks told thinks agreed confirmed decided leads manages "
        "prefers approved approves reviews reviewed owes emailed suggested proposed promised "
        "insisted lives",
    )
)
_NOT_PERSONS = frozenset(
    re.findall(r"\S+", "everyone everybody someone somebody nobody anyone anybody no one none")
)
"""Verbs that make a capitalised first word a person ("Maria owns the migration plan")."""


_MID_CAPS_RE = re.compile(r"(?<=[a-z0-9,;] )[\"'(]?([A-Z][a-z]{2,})\b")
"""A capitalised word after a lower-case word: how a name shows it is one."""
_NOTES_CAPS_RE = re.compile(r"(?<=[a-z0-9,] )[\"'(]?([A-Z][a-z]{2,})\b")
"""The same in notes, where "; " joins statements (a word after it may open a sentence)."""


def _names(sentence: str, known: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The names ``sentence`` mentions; a capitalised first word counts when a person verb
    follows it ("Maria owns …") or the conversation writes it capitalised mid-sentence too
    (``known``: "my son Leo" makes "Leo is allergic to kiwi" name Leo)."""
    out: list[str] = []
    # "Way to go, Tomas!", "Tomas, you won't believe it": a name said to the reader.
    sentence = _VOCATIVE_RE.sub(" ", sentence)
    for match in re.finditer(r"(?<![\w'])([A-Z][a-z]{2,}(?:\s+[A-Z][a-z]{2,}){0,2})\b", sentence):
        name = match.group(1)
        first = name.split()[0].casefold()
        at_start = not sentence[: match.start()].strip(" \"'([")
        after = sentence[match.end() :].split(maxsplit=1)
        person = (
            bool(after)
            and after[0].casefold().strip(",;:") in _PERSON_VERBS
            and first not in _NOT_PERSONS
        )
        if first in _SENTENCE_START_WORDS or (
            at_start and " " not in name and not person and first not in known
        ):
            continue
        if first.removesuffix("s") in _WEEKDAYS or first in _MONTHS or name.casefold() in _MONTHS:
            continue
        if name not in out:
            out.append(name)
    return tuple(out)


_VOCATIVE_RE = re.compile(r",\s*[A-Z][a-z]{1,20}\s*(?=[.!?]*\s*$)|^\s*[A-Z][a-z]{1,20}\s*,\s*")


_PERSONAL_RE = re.compile(
    r"^\s*(?:(?:and|but|so|also|oh|well|btw|fyi)\b[\s,]*)*"
    r"(?:(?P<be>(?:I|we)(?:'m|’m| am|'re|’re| are))\s+(?P<pred>[\w'’-]+(?:\s+[\w'’-]+)?)"
    r"|(?:I|we)\s+(?:(?:still|also|usually|always|never|only|mostly|don'?t|do not|can'?t|cannot|"
    r"no longer)\s+)?(?:live|work|study|speak|take|eat|drink|use|drive|rent|teach|sleep|"
    r"wear|ride|cycle|commute|belong|support|follow)\b"
    r"|(?:my|our)\s+[\w-]+(?:\s+[\w-]+){0,2}?(?:\s+(?:is|are|is called|are called|was called|"
    r"has|have)|['’]s)\s+(?P<what>[\w'’-]+))",
    _I,
)
"""A present-tense statement about the speaker's world: who they are ("I'm vegetarian", "I'm
allergic to penicillin"), how they live ("I live in Porto now", "I work nights at the
hospital", "I don't eat pork") or what their things and people are ("My blood type is O
negative", "my sister is called Ana")."""
_FEELING_WORDS = frozenset(
    re.findall(
        r"\S+",
        "fine good ok okay great well alright happy sad tired sorry glad excited busy bored sure "
        "here there back done ready thrilled grateful thankful proud worried nervous stressed "
        "exhausted sick lucky curious afraid scared confused impressed amazed honored honoured "
        "delighted pleased relieved so really very just not kind pretty quite too bit little lot "
        "totally still also always never feeling doing trying thinking wondering hoping "
        "looking going planning getting having working waiting coming leaving heading "
        "struggling loving enjoying missing off on in at with about all fun cool lost late early "
        "home free away new old hungry cold hot awake asleep jealous upset angry mad annoyed "
        "down fed over sold hooked blessed speechless obsessed",
    )
)
"""What follows "I'm" in a feeling, a mood or a passing state ("I'm fine", "I'm so happy for
you", "I'm just tired", "I'm going to …"): chit-chat or another kind, no standing fact."""
_PASSING_RE = re.compile(
    r"\b(?:today|tonight|lately|this (?:morning|afternoon|evening|week)|"
    r"you|your)\b",
    _I,
)
"""A passing state, or words about the listener: no fact about the speaker's world."""


def is_personal_fact(sentence: str) -> bool:
    """Whether ``sentence`` states a standing fact about the speaker's world
    (:data:`_PERSONAL_RE`): not a feeling, a mood or a passing state ("I'm fine", "I'm so
    happy for you", "just tired lately", :data:`_FEELING_WORDS`, :data:`_PASSING_RE`), not a
    question, with at least two content words. Such a statement is kept even without an
    anchor: "I'm vegetarian" is what an assistant must not forget."""
    match = _PERSONAL_RE.match(sentence)
    if match is None or _QUESTION_RE.search(sentence) or _PASSING_RE.search(sentence):
        return False
    if match.group("be"):
        words = [w.casefold().strip("'’") for w in match.group("pred").split()]
        first = words[1] if words[0] in {"a", "an", "the"} and len(words) > 1 else words[0]
        if first in _FEELING_WORDS:
            return False  # "I'm fine", "I'm a bit tired", "I'm going to …"
    what = (match.group("what") or "").casefold()
    if what and what in _FEELING_WORDS:
        return False
    return len(_CONTENT_WORD_RE.findall(sentence)) >= 3


def _chat_kind(sentence: str) -> str:
    if _RELATIONSHIP_RE.search(sentence):
        return "relationship"
    if _POSSESSION_RE.search(sentence):
        return "possession"
    if _PLAN_RE.search(sentence):
        return "plan"
    if _PREFERENCE_RE.search(sentence):
        return "preference"
    if _EVENT_RE.search(sentence):
        return "event"
    if _PLACE_RE.search(sentence):
        return "place"
    return ""


def _coding_kind(sentence: str, role: str, correction: bool) -> str:
    if correction and (
        _CORRECTED_VALUE_RE.search(sentence)
        or _CORRECTION_RE.match(sentence)
        or _MISTAKE_RE.search(sentence)
    ):
        return "correction"
    technical = _TECH_RE.search(sentence) is not None
    if technical and _FIX_RE.search(sentence):
        return "fix"
    todo = _TODO_RE.search(sentence) is not None
    prose = _PROSE_ERROR_RE.search(_ATTRIBUTIVE_FAILURE_RE.sub(" ", sentence) if todo else sentence)
    if _ERROR_RE.search(sentence) or (technical and prose):
        return "error"
    if todo:
        return "todo"
    if _DECISION_RE.search(sentence):
        return "decision"
    if _CODING_PREFERENCE_RE.search(sentence):
        return "preference"
    if role == "user" and _CONSTRAINT_RE.search(sentence):
        return "constraint"
    if extract_paths(sentence):
        return "path"
    return ""


def is_correction(text: str) -> bool:
    """Whether a message ``text`` corrects something said before: it opens as a correction
    ("Actually, …", "Correction: …", "No, …", "更正：…"), owns a mistake ("I gave you the wrong
    number, it's …", "I swapped two digits") or opens with a hedge and retires a value ("Sorry,
    the blood test is at 8:45, not 8:15"). A correction carries the value it sets (a number, or
    the value it retires): "Sorry, I'm late" corrects nothing."""
    first = date_line(text)[1]
    if _CORRECTION_RE.match(first):
        return True
    if not _CORRECTED_VALUE_RE.search(first):
        return False
    if _MISTAKE_RE.search(first):
        return True
    return bool(_HEDGE_OPENER_RE.match(first) and _RETIRED_VALUE_RE.search(first))


def is_follow_up(sentence: str) -> bool:
    """Whether ``sentence`` leaves something to do or to hear back ("TODO: …", "I still have
    to …", "I need a late check-out", "escalated to billing", "let me know when …")."""
    return _TODO_RE.search(sentence) is not None


def without_tag_question(sentence: str) -> str:
    """``sentence`` without a question tagged on a statement ("…, did you know?", "I need a
    late check-out on the 18th, can you ask them?" -> "I need a late check-out on the 18th.")."""
    return _TAG_QUESTION_RE.sub(".", sentence)


def tells_failure(text: str) -> bool:
    """Whether ``text`` tells a failure or its fix in words about something technical ("the
    deploy fails with 'exec format error'", "Fixed it: rebuilt the image"), rather than only
    naming an exception class ("AssertionError is fine")."""
    if _TECH_RE.search(text) is None:
        return False
    return _PROSE_ERROR_RE.search(text) is not None or _FIX_RE.search(text) is not None


def _chit_chat(sentence: str) -> bool:
    """A greeting, a reaction or an acknowledgement. An interjection in front of a statement
    ("Oh, and my oven only goes up to 220°C", "ok, please let me know when billing answers")
    is not: what follows it has four words or more and an anchor (:data:`_STRONG_ANCHOR_RE`)
    or a follow-up ("let me know when …"); "ok, next point (3)" stays small talk."""
    if _EMPTY_PRAISE_RE.match(sentence):
        return True
    match = _CHITCHAT_RE.match(sentence)
    if match is None:
        return False
    rest = match.group("rest")
    if len(_CONTENT_WORD_RE.findall(rest)) < 4:
        return True
    return not (_STRONG_ANCHOR_RE.search(rest) or _TODO_RE.search(rest))


_INTERJECTION_RE = re.compile(
    r"^\s*(?:(?:oh|ok(?:ay)?|well|hey|hi|so|and|yeah|yes|great|cool|nice|perfect|good|alright|"
    r"right|hmm+|ah|btw)\b\s*[,.!:—–-]?\s*)+(?=\S)",
    _I,
)


def without_interjection(sentence: str) -> str:
    """``sentence`` without the interjections in front of its statement ("Oh, and my oven
    only goes up to 220°C" -> "My oven only goes up to 220°C"), or unchanged when nothing of
    a statement would be left."""
    rest = _INTERJECTION_RE.sub("", sentence, count=1)
    if rest == sentence or len(_CONTENT_WORD_RE.findall(rest)) < 3:
        return sentence
    return rest[:1].upper() + rest[1:]


def is_small_talk(text: str) -> bool:
    """Whether ``text`` (an item or a sentence, markers and speakers aside) is an
    acknowledgement, a greeting or a reaction: nothing to keep ("ok, next point (3)",
    "Thanks!", "That's great")."""
    core = statement_key(text)
    if not core:  # nothing but acknowledgements ("Noted: Got it.")
        return any(ch.isalnum() for ch in text)
    return _chit_chat(core) or _ACK_ONLY_RE.match(core) is not None


_ACK_ONLY_RE = re.compile(
    r"^(?:ok(?:ay)?|sure|thanks?|thank you|got it|noted|cool|great|fine|yes|yep|no problem|"
    r"next|go on|continue|bye|好的|收到|谢谢|继续)\b[^.!?。！？]{0,30}$",
    _I,
)


def statement_kind(text: str, role: str = "user") -> str:
    """The kind a unit of ``text`` would have (``error``, ``todo``, ``decision``…), markers,
    speakers and acknowledgements aside; ``""`` when it states nothing salient."""
    core = _MARKERS_RE.sub("", text).strip()
    units = extract_units([(role, core)])
    return units[0].kind if units else ""


_KIND_WEIGHT = {
    "correction": 6,
    "fix": 4,
    "decision": 5,
    "constraint": 5,
    "todo": 4,
    "error": 4,
    "event": 3,
    "plan": 3,
    "possession": 3,
    "relationship": 3,
    "preference": 2,
    "person": 2,
    "place": 2,
    "personal": 3,
    "path": 2,
    "fact": 1,
}


def _unit(
    sentence: str,
    index: int,
    role: str,
    *,
    when: date | None,
    correction: bool,
    ignore: frozenset[str] = frozenset(),
    known: frozenset[str] = frozenset(),
) -> Unit | None:
    sentence = _TAG_QUESTION_RE.sub(".", sentence)
    if _QUESTION_RE.search(sentence) or _chit_chat(sentence) or reads_as_instruction(sentence):
        return None
    sentence = without_interjection(sentence)
    if len(sentence) < (6 if _has_cjk(sentence) else 12):
        return None
    resolved = resolve_relative_dates(sentence, when)
    dated = resolved != sentence
    names = tuple(n for n in _names(sentence, known) if n.casefold() not in ignore)
    anchors = {
        a
        for a in extract_anchors(resolved, include_markers=False, include_phrases=False)
        if a not in ignore
    }
    explicit = _REMEMBER_RE.search(sentence) is not None
    if explicit:
        said = _REMEMBER_HEAD_RE.sub("", _REMEMBER_TAIL_RE.sub("", sentence)).strip()
        sentence = said[:1].upper() + said[1:] if said else sentence
        resolved = resolve_relative_dates(sentence, when)
    kind = _coding_kind(sentence, role, correction)
    if kind == "todo" and explicit and not _TODO_RE.search(sentence):
        kind = ""
    if not kind:
        kind = _chat_kind(sentence) if _FIRST_PERSON_RE.search(sentence) or names else ""
    if not kind and names:
        place = _PLACE_RE.search(sentence)
        kind = "place" if place and place.group("place") in names else "person"
    if kind in {"", "constraint"} and role == "user" and is_personal_fact(sentence):
        kind = "personal"  # "I don't eat pork" is who the speaker is, not a rule of a task
    if not kind and (explicit or (anchors and _SALIENT_ANCHOR_RE.search(" ".join(anchors)))):
        kind = "fact"
    if not kind:
        return None
    salient = bool(anchors or names or dated or explicit)
    if kind in {"event", "preference", "plan", "place", "person"} and not salient:
        # "We had fun." says nothing a question could ask about; a named or dated one does.
        words = re.findall(r"[A-Za-z]{4,}", sentence)
        if len(words) < 5 and not _has_cjk(sentence):
            return None
    score = _KIND_WEIGHT[kind] + min(len(anchors), 4) + 2 * len(names) + (3 if dated else 0)
    return Unit(
        kind=kind,
        text=shorten_whole(resolved, anchors),
        anchors=tuple(sorted(anchors)),
        index=index,
        role=role,
        when=when,
        salience=score + (6 if explicit else 0),
        names=names,
        explicit=explicit,
    )


_MAX_WHOLE_WORDS = 80
"""The longest statement a unit keeps whole rather than lose an anchor to a cut."""


def shorten_whole(
    text: str, anchors: Iterable[str] = (), *, max_words: int = _MAX_WORDS, max_cjk: int = _MAX_CJK
) -> str:
    """``text`` shortened as a unit is (``max_words`` words, ``max_cjk`` CJK characters), unless
    the cut would lose one of ``anchors`` or an identifier: then whole (up to
    :data:`_MAX_WHOLE_WORDS` words). Nothing is shortened in place so that a name, number or
    identifier is lost."""
    short = shorten(text, max_words=max_words, max_cjk=max_cjk)
    if short == " ".join(text.split()):
        return short
    kept = {a.casefold() for a in extract_anchors(short, include_markers=False)}
    lost = [a for a in anchors if a.casefold() not in kept]
    if not lost and not (set(_IDENTIFIER_RE.findall(text)) - set(_IDENTIFIER_RE.findall(short))):
        return short
    return shorten(text, max_words=max(max_words, _MAX_WHOLE_WORDS), max_cjk=3 * max_cjk)


_IDENTIFIER_RE = re.compile(r"(?=\S*[^\W\d_])(?=\S*\d)[\w./:-]+|\b[A-Z][a-z]+\b")


def extract_units(
    messages: Sequence[tuple[str, str]] | Iterable[tuple[str, str]],
    *,
    session_date: date | None = None,
    speakers: Iterable[str] = (),
    known: str = "",
) -> list[Unit]:
    """The salient units of ``messages``, in order.

    Args:
        messages: ``(role, text)`` pairs; roles ``user``, ``assistant``, ``tool``, ``system``.
        session_date: The date in force before any message carries its own (a message that
            starts with a date line, ``[… 4 March, 2021]``, sets it for itself and the
            following messages).
        speakers: The names of the people talking: a sentence that only addresses one of
            them ("Way to go, Tomas!") names no one worth a unit.
        known: Text said before (the notes so far): a word it writes capitalised
            mid-sentence is a name when a sentence opens with it ("my son Leo" earlier makes
            "Leo is allergic to kiwi" name Leo), as one the messages write so does.

    Returns:
        One unit per salient sentence (questions, greetings, reactions, instruction-like text
        and tool output left out); duplicates (same text) once.
    """
    when = session_date
    ignore = frozenset(name.casefold() for name in speakers if name)
    messages = list(messages)
    spoken = [raw for role, raw in messages if role in {"user", "assistant"}]
    names = frozenset(m.casefold() for raw in spoken for m in _MID_CAPS_RE.findall(raw))
    # in the notes "; " joins statements: a word after it opens a sentence ("…; Big news: …")
    names |= {m.casefold() for m in _NOTES_CAPS_RE.findall(known)}
    out: list[Unit] = []
    seen: set[str] = set()
    said: set[str] = set()  # the users' statements: an assistant's echo of one is no unit
    for index, (role, raw) in enumerate(messages):
        if role not in {"user", "assistant"}:
            continue  # tool output and system text are data, not statements of the chat
        correction = role == "user" and is_correction(raw)
        pasted = pasted_lines(raw)
        for number, line in enumerate(raw.splitlines()):
            # A message may join several sessions: each date line dates what follows it.
            dated, text = date_line(line)
            when = dated or when
            for sentence in split_sentences(text):
                if role == "assistant" and echoes(sentence, said):
                    continue  # "Noted: <what the user said>" is the user's statement
                if role != "assistant":
                    said.add(statement_key(sentence))
                statement = without_ack(sentence) if role == "assistant" else sentence
                unit = _unit(
                    statement,
                    index,
                    role,
                    when=when,
                    correction=correction,
                    ignore=ignore,
                    known=names,
                )
                if unit is None or statement_key(unit.text) in seen:
                    continue
                seen.add(statement_key(unit.text))
                out.append(replace(unit, pasted=True) if number in pasted else unit)
    return out


def is_chat(units: Sequence[Unit], *, tool_messages: int = 0) -> bool:
    """Whether ``units`` read as a personal chat rather than a working session: no tool
    messages, at least three narrative units (events, plans, preferences, possessions,
    relationships) and more than twice as many as coding kinds."""
    if tool_messages:
        return False
    return chat_kinds([u.kind for u in units])


def chat_kinds(kinds: Sequence[str]) -> bool:
    """:func:`is_chat` of units of these kinds (no tool messages)."""
    chat = sum(1 for kind in kinds if kind in _NARRATIVE_KINDS)
    coding = sum(1 for kind in kinds if kind in CODING_KINDS - {"fact"})
    return chat >= _MIN_NARRATIVE and chat > 2 * coding


_NARRATIVE_KINDS = CHAT_KINDS - {"person", "place"}
_MIN_NARRATIVE = 3


_ADDRESS_RE = re.compile(
    r"^\s*(?i:hey|hi|hello|hiya|yo|morning|good (?:morning|afternoon|evening)|thanks|thank you|"
    r"congrats|congratulations|wow|aw+|oh)\s*,?\s+(?P<name>[A-Z][a-z]{1,20})\b(?!\s+[a-z])"
    r"|^\s*(?P<zh>[\u4e00-\u9fff]{1,3})[，,]\s*(?:你好|早上好|晚上好)"
)
_NOT_NAMES = frozenset(
    re.findall(
        r"\S+",
        "there everyone guys all you man dude buddy friend again so it that this thanks yes no "
        "the my god wow",
    )
)


def addressed_name(text: str) -> str:
    """The name a message greets its reader by ("Hey Tomas!", "Thanks, Ana —"), or ``""``."""
    _, text = date_line(text)
    match = _ADDRESS_RE.match(text)
    if match is None:
        return ""
    name = match.group("name") or match.group("zh") or ""
    return "" if name.casefold() in _NOT_NAMES or name.casefold() in _MONTHS else name
