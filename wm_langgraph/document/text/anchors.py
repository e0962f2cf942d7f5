"""Lexical anchors (behaviour §4.3 and its go-further kinds). Public names are re-exported by
``document.text``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from wm_langgraph.document.text.cjk import cjk_entities
from wm_langgraph.document.text.match import term_in
from wm_langgraph.document.text.paths import CJK_CHARS, extract_paths, normalise_path, words
from wm_langgraph.document.text.phrases import phrase_anchors

# --------------------------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------------------------

DECISION_MARKERS: frozenset[str] = frozenset(
    {"because", "decided", "chose", "committed", "agreed", "resolved"}
    | {"因为", "决定", "选择", "同意", "确定", "決定", "選択"}
)
"""Decision markers counted as anchors (behaviour §4.3)."""

ANCHOR_STOPWORDS: frozenset[str] = words(
    """the a an and or of to in on for with by at from as is are was were be been being it its
    this that these those there here then than them they their we our you your he she his her
    him i me my not no yes but if so all any each every some most more less many much few
    new old also just only very can could should would will shall may might must need needs
    use used uses using add added adds update updated fix fixed make made set get got see
    seen now next last first second third after before when where which who whom what why
    how into over under about above below between during via per until while since both
    either neither other others such same own user users assistant note notes todo done
    true false none null key facts fact decisions decision files context errors error
    corrections open issues issue current state task tasks goals goal session title working
    memory plan plans prefers prefer likes wants want asked asks said says mentioned
    confirmed currently still already always never maybe please thanks okay yes
    today tomorrow yesterday important
    consolidation required exceeds size limit update merge compress existing bullets before
    adding restored silently dropped resolved
    switched moved removed changed created deleted installed configured deployed migrated
    upgraded downgraded tested ran run runs built wrote written read reads sent received paid
    booked bought sold ordered cancelled canceled scheduled planned planning started finished
    completed stopped paused resumed merged reverted released opened closed filed reported
    found noticed learned learnt tried attempted failed works worked lives lived owns owned
    has had have having keeps kept takes took taken gives gave given goes went gone comes came
    knows knew thinks thought feels felt looks looked seems seemed shows showed shown tells told
    call calls called needed wanted liked loves loved hates hated preferred avoid avoids
    avoided allergic requires supports supported includes included contains cannot
    budget deadline meeting trip flight hotel price cost costs total amount option options
    choice preference preferences constraint constraints requirement requirements rule rules
    policy background status result results outcome summary reason reasons warning tip idea
    ideas question questions answer answers problem problems bug bugs fixes feature features
    version release config configuration setting settings default defaults database server
    client service endpoint endpoints function functions method methods class classes module
    modules file folder directory repo repository branch commit tests test script scripts
    command commands output input log logs data dataset model models team project projects
    customer customers manager owner family kids wife husband daughter son mother father
    partner friend friends home house apartment room office school work job salary rent
    main primary secondary final initial previous latest another often usually typically
    later soon early late daily weekly monthly yearly morning evening night week weeks month
    months year years day days hour hours minute minutes time times date dates note
    fyi btw imo imho tbh afaik iirc fwiw lol omg asap aka etc hey hi hello ok okay
    understood sorry good great nice cool sure right noted thank awesome perfect alright
    yeah yep nope oh wow well indeed exactly absolutely certainly congrats welcome
    remind reminder random"""
)
"""Capitalised words that are not proper nouns (sentence starters, section vocabulary, chat
abbreviations, greetings and acknowledgements such as FYI, Hey, Understood, Sorry)."""

# Words that cannot be the unit of a number phrase ("3 of", "2 and").
_FUNCTION_WORDS = words(
    """the a an and or of to in on for with by at from as is are was were be been it its this
    that these those than then we you he she they i me my not no but if so all any each more
    less many much also just only very can could should would will may might must per into
    over under about after before when where which who what why how out up off"""
)

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_L = r"(?<![A-Za-z0-9_])"  # ASCII word boundaries that also work next to CJK characters
_R = r"(?![A-Za-z0-9_])"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CJK_NUM = "[零一二三四五六七八九十百千万两]+"
_CJK_UNITS = (
    "个月|个小时|小时|分钟|星期|个|天|日|年|月|周|秒|次|人|岁|位|名|台|本|家|张|件|条|篇|"
    "公里|千米|米|厘米|公斤|千克|斤|克|吨|升|元|块钱|块|角|分|美元|欧元|英镑|日元|人民币|"
    "万元|亿元|万|亿|倍|%|％|号|楼|层|室|页|章|节|版|期|届|円|人前|ヶ月|か月|週間|時間|分間"
)
_KEYWORDS = (
    "port|http|https|status|exit code|error|code|pid|issue|pr|ticket|bug|line|version|build|"
    "release|room|gate|flight|step|page|chapter|section|phase|round|sprint|order|invoice|"
    "account|case|table|row|node|job|run|attempt|item"
)


def _iso(year: str, month: int, day: str | None) -> str | None:
    if not 1 <= month <= 12:
        return None
    if day is None:
        return f"{int(year):04d}-{month:02d}"
    if not 1 <= int(day) <= 31:
        return None
    return f"{int(year):04d}-{month:02d}-{int(day):02d}"


def _month_day(month: int, day: int) -> str | None:
    return f"--{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 else None


def _plain_number(text: str) -> str:
    return text.replace(",", "")


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _date_ymd(m: re.Match[str]) -> str | None:
    return _iso(m["year"], int(m["mon"]), m["day"])


def _date_named(m: re.Match[str]) -> str | None:
    month = _MONTHS[m["month"].casefold()]
    day = m["day"]
    if m["year"] is None:
        return _month_day(month, int(day)) if day else None
    return _iso(m["year"], month, day)


def _time(m: re.Match[str]) -> str:
    minutes = f":{m['min']}" if m["min"] else ""
    return f"{int(m['hour'])}{minutes} {m['ampm'].replace('.', '').casefold()}"


def _money(m: re.Match[str]) -> str:
    return _collapse(re.sub(r"\s+", "", _plain_number(m.group())))


def _keyword_number(m: re.Match[str]) -> str:
    return f"{_collapse(m['kw'])} {m['val'].casefold()}"


def _number_unit(m: re.Match[str]) -> str | None:
    unit = m["unit"].casefold()
    if unit in _FUNCTION_WORDS:
        return None
    return f"{_plain_number(m['num'])} {unit}"


_SENTENCE_START_RE = re.compile(
    r"(?:^|[.!?:;]|^[ \t]*(?:[-*+•]|\d{1,3}[.)]))(?:[ \t]*\[[^\]\n]*\])*[ \t]*$"
)


def _proper_noun(m: re.Match[str]) -> str | None:
    word = m["word"].casefold()
    if word in ANCHOR_STOPWORDS or re.match(r"['’]t\b", m.string[m.end() :]):
        return None  # a stopword, or a contraction ("Don't", "Won’t")
    # A capitalised -ed / -ing / -ly word opening a sentence is a verb or adverb, not a name
    # ("Switched to Rust", "Using uv"), unless it has inner capitals ("LangGraph").
    if len(word) >= 5 and word.endswith(("ed", "ing", "ly")) and m["word"][1:].islower():
        line_start = m.string.rfind("\n", 0, m.start()) + 1
        if _SENTENCE_START_RE.search(m.string[line_start : m.start()]):
            return None
    return word


def _identifier(m: re.Match[str]) -> str | None:
    text = m.group()
    return text.casefold() if re.search(r"\d", text) and re.search(r"[A-Za-z]", text) else None


def _bare_number(m: re.Match[str]) -> str | None:
    text = _plain_number(m.group())
    return text if len(text.replace(".", "")) >= 2 else None


def _cjk_number(m: re.Match[str]) -> str:
    return re.sub(r"\s+", "", _plain_number(m.group())).casefold()


def _marker(m: re.Match[str]) -> str:
    return m.group().casefold()


def _lower(m: re.Match[str]) -> str:
    return _collapse(m.group())


def _backtick(m: re.Match[str]) -> str | None:
    inner = _collapse(m["code"])
    return inner or None


_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]

# Applied in order; a match overlapping an earlier match is skipped, so each piece of text
# gives one anchor (``port 5432`` is not also the bare number ``5432``).
_RULES: tuple[_Rule, ...] = (
    (re.compile(r"`(?P<code>[^`\n]{1,60})`"), _backtick),
    (
        re.compile(
            r"(?P<year>\d{4})[^\S\n]*年[^\S\n]*(?P<mon>\d{1,2})[^\S\n]*月(?:[^\S\n]*(?P<day>\d{1,2})[^\S\n]*[日号])?"
        ),
        _date_ymd,
    ),
    (re.compile(_L + r"(?P<year>\d{4})([-/.])(?P<mon>\d{1,2})\2(?P<day>\d{1,2})" + _R), _date_ymd),
    (
        re.compile(_L + r"(?P<year>\d{4})-(?P<mon>\d{1,2})" + _R),
        lambda m: _iso(m["year"], int(m["mon"]), None),
    ),
    (
        re.compile(r"(?P<mon>\d{1,2})[^\S\n]*月[^\S\n]*(?P<day>\d{1,2})[^\S\n]*[日号]"),
        lambda m: _month_day(int(m["mon"]), int(m["day"])),
    ),
    (
        re.compile(
            r"(?i)"
            + _L
            + r"(?P<day>\d{1,2})(?:st|nd|rd|th)?[^\S\n]+(?:of[^\S\n]+)?"
            + _MONTH
            + r"(?:,?[^\S\n]+(?P<year>\d{4}))?"
            + _R
        ),
        _date_named,
    ),
    (
        re.compile(
            r"(?i)" + _L + _MONTH + r"[^\S\n]+(?:(?P<day>\d{1,2})(?:st|nd|rd|th)?,?[^\S\n]+)?"
            r"(?P<year>\d{4})" + _R
        ),
        _date_named,
    ),
    (re.compile(_L + r"\d{1,2}/\d{1,2}/\d{2,4}" + _R), _lower),
    (
        re.compile(
            r"(?i)"
            + _L
            + r"(?P<hour>\d{1,2})(?::(?P<min>\d{2}))?[^\S\n]*(?P<ampm>[ap]\.?m\.?)"
            + r"(?![A-Za-z0-9_])"
        ),
        _time,
    ),
    (re.compile(_L + r"\d{1,2}:\d{2}(?::\d{2})?" + _R), _lower),
    (
        re.compile(
            r"[$€£¥￥][^\S\n]?(?:"
            + _NUM
            + r")(?:[^\S\n]?(?:k|m|bn|million|billion|thousand)"
            + _R
            + ")?",
            re.IGNORECASE,
        ),
        _money,
    ),
    (
        re.compile(r"(?<![A-Za-z0-9_.#\-])(?:" + _NUM + r")[^\S\n]*(?:" + _CJK_UNITS + ")"),
        _cjk_number,
    ),
    (re.compile("第?" + _CJK_NUM + "(?:" + _CJK_UNITS + ")"), _cjk_number),
    (re.compile(r"第[^\S\n]*\d+"), _cjk_number),
    (
        re.compile(
            r"(?i)"
            + _L
            + r"(?P<kw>"
            + _KEYWORDS
            + r")[^\S\n]*[#:]?[^\S\n]*(?P<val>\d\w*(?:[.\-]\w+)*)"
            + _R
        ),
        _keyword_number,
    ),
    (re.compile(r"(?<![A-Za-z0-9_&])#\d+" + _R), _lower),
    (re.compile(_L + r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+" + _R), _lower),
    (
        re.compile(r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9][A-Za-z0-9_]*(?:[-.:][A-Za-z0-9_]+)+" + _R),
        _identifier,
    ),
    (
        re.compile(
            r"(?<![A-Za-z0-9_.\-])(?P<num>" + _NUM + r")[^\S\n]?(?P<unit>%|[A-Za-z]{1,15})" + _R
        ),
        lambda m: f"{_plain_number(m['num'])}%" if m["unit"] == "%" else _number_unit(m),
    ),
    (re.compile(r"(?<![A-Za-z0-9_.\-])[A-Za-z]+\d[A-Za-z0-9]*" + _R), _identifier),
    (
        re.compile(r"(?i)" + _L + r"(?:because|decided|chose|committed|agreed|resolved)" + _R),
        _marker,
    ),
    (re.compile("因为|决定|选择|同意|确定|決定|選択"), _marker),
    (re.compile(_L + r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+" + _R), _lower),
    (re.compile(_L + r"[a-z]+(?:[A-Z][a-z0-9]*)+" + _R), _lower),
    (re.compile(_L + r"(?P<word>[A-Z][A-Za-z]{2,})(?:['’]s)?" + _R), _proper_noun),
    (re.compile(r"[\u30a1-\u30fa\u30fc]{3,}"), _lower),
    (re.compile(r"(?<![A-Za-z0-9_.\-])(?:" + _NUM + r")" + _R), _bare_number),
    (re.compile(r"(?<=[" + CJK_CHARS + r"])\d+(?:\.\d+)?"), _bare_number),
)


def extract_anchors(
    text: str, *, include_markers: bool = True, include_phrases: bool = True
) -> set[str]:
    """The lexical anchors of ``text`` in canonical form (behaviour §4.3 and its go-further items).

    Kinds: paths and URLs; dates (ISO, day-month-year, month-day-year, ``2024年3月15日``);
    times (``10 am``); money (``$200``, ``200元``); numbers with a unit (``3 months``,
    ``3个月``, ``5%``); keyword numbers (``port 5432``, ``http 429``, ``#42``); identifiers with
    digits (``fact-017``, ``v2.3.1``); code identifiers (``DATABASE_URL``, ``parse_config``,
    ``getUser``, backticked spans); decision markers; capitalised proper nouns of 3+ letters not
    in ``ANCHOR_STOPWORDS``; CJK names and proper nouns (``王小明``, ``招商``, ``田中``,
    ``《三体》`` -> ``三体``; see ``document.text.cjk``); katakana words; other numbers of
    2+ digits; constraint and decision phrases (``never push``, ``always open``,
    ``only read``, ``不要推送``, ``because smooth``, ``decided postgresql``: a negation /
    obligation / decision marker with the word it governs, see ``document.text.phrases``).

    Args:
        text: Any text.
        include_markers: When False, decision markers (``because``…) are left out; they say
            that a decision exists, not which one.
        include_phrases: When False, constraint and decision phrases are left out (the
            layer-2 coverage check of a consolidation does not count them: a reworded rule
            must not make a clean consolidation fail; the restore pass does count them).
    """
    # Line breaks as str.splitlines() (and so section_items) sees them: a bullet's anchors
    # must not depend on whether it is read alone or inside its section ("$\x850B").
    text = text.translate(_LINE_BREAKS)
    # The guards ask for the anchors of the same bullets and bodies many times a merge.
    return set(_anchors(text, include_markers, include_phrases))


_LINE_BREAKS = str.maketrans(dict.fromkeys("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r", "\n"))


@lru_cache(maxsize=8192)
def _anchors(text: str, include_markers: bool, include_phrases: bool) -> frozenset[str]:
    anchors: set[str] = set()
    mask = bytearray(len(text))
    for path in extract_paths(text):
        anchors.add(normalise_path(path).casefold())
        for match in re.finditer(re.escape(path), text):
            mask[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    for regex, convert in _RULES:
        for match in regex.finditer(text):
            start, end = match.span()
            if start == end or any(mask[start:end]):
                continue
            value = convert(match)
            if value is None:
                continue
            mask[start:end] = b"\x01" * (end - start)
            if include_markers or value not in DECISION_MARKERS:
                anchors.add(value)
    # CJK names and proper nouns (document.text.cjk) overlap other CJK anchors' text.
    anchors |= cjk_entities(text)
    # Phrases overlap other anchors' text on purpose ("never use Redis" gives both ``redis``
    # and ``never redis``), so they are added without the overlap mask.
    if include_phrases:
        anchors |= phrase_anchors(text)
    return frozenset(anchors)


def anchor_in_text(anchor: str, text: str, text_anchors: set[str] | None = None) -> bool:
    """True when ``anchor`` is among the anchors of ``text`` or appears in it as a bounded term
    (``document.text.match.term_in``: not inside a longer word, number, version or file name).

    Args:
        anchor: A canonical anchor from :func:`extract_anchors`.
        text: The text to look in.
        text_anchors: ``extract_anchors(text)`` when the caller already has it.
    """
    found = extract_anchors(text) if text_anchors is None else text_anchors
    return anchor in found or term_in(anchor, text)


def missing_anchors(anchors: Iterable[str], text: str) -> set[str]:
    """The anchors of ``anchors`` that do not appear in ``text`` (see :func:`anchor_in_text`)."""
    found = extract_anchors(text)
    collapsed = _collapse(text)
    return {anchor for anchor in anchors if anchor not in found and not term_in(anchor, collapsed)}


def anchor_wording(text: str, anchors: Iterable[str]) -> list[str]:
    """Each anchor as ``text`` writes it (anchors are case-folded: ``alice`` for ``Alice``; the
    anchor itself when ``text`` does not have it), without repeats, in the order given."""
    out: list[str] = []
    for anchor in anchors:
        pattern = r"\s+".join(re.escape(part) for part in anchor.split())
        match = re.search(pattern, text, re.IGNORECASE)
        out.append(match.group(0) if match else anchor)
    return list(dict.fromkeys(out))
