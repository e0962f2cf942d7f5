"""Text analysis for the guards: meaningful title words, lexical anchors, path-like tokens.

Pure functions, no I/O, CJK-aware. The guards (``core/guards.py``) decide with these; the engine
reuses :func:`extract_paths` for the artifact trail and the offline model reuses
:func:`extract_anchors`.

Path rule (SPEC §4.4, made stricter so that prose is not a path). A token is a path when it is

* a URL (``scheme://…``), or a Windows path (``C:\\…``);
* a file name with a known extension (``main.py``, ``docs/index.html``, ``Cargo.lock``), a
  well-known extension-less file (``Dockerfile``, ``Makefile``) or a dotfile (``.env``);
* a slash shape ``a/b[/c…]`` that has a letter and at least one of: a leading ``/``, ``./``,
  ``../`` or ``~/``; a trailing ``/``; three or more segments; a first segment that is a
  well-known directory (``src/…``, ``tests/…``); a segment containing ``_`` or ``.``, or mixing
  letters and digits (``api/v2``).

So ``and/or``, ``input/output``, ``TCP/IP``, ``read/write``, ``media/search``, ``HTTP/2`` and
``3/15/2024`` are not paths, while ``src/utils``, ``app/models/user``, ``./run`` are.

Anchors (SPEC §4.3 plus the go-further kinds) are returned in a canonical, case-folded form:
dates become ISO (``15 March 2024`` and ``2024年3月15日`` both give ``2024-03-15``), numbers lose
their thousands separators, ``HTTP 429`` gives ``http 429``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = [
    "ANCHOR_STOPWORDS",
    "DECISION_MARKERS",
    "PATH_EXTENSIONS",
    "TITLE_STOPWORDS",
    "anchor_in_text",
    "contains_cjk",
    "extract_anchors",
    "extract_paths",
    "is_path_like",
    "meaningful_words",
    "missing_anchors",
    "normalise_path",
    "shares_meaningful_word",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --------------------------------------------------------------------------------------------
# Titles
# --------------------------------------------------------------------------------------------

TITLE_STOPWORDS: frozenset[str] = _words(
    "the a an and or of to in on for with by at from session title working memory "
    "plan plans notes note"
)
"""Words that carry no meaning in a session title (SPEC §4.1)."""

# CJK bigrams that are as empty as the English stopwords above (会话 session, 标题 title,
# 工作记忆 working memory, 笔记 notes, 计划 plan).
_CJK_TITLE_STOP_BIGRAMS = frozenset(
    {"会话", "标题", "工作", "作记", "记忆", "笔记", "计划", "計画", "メモ"}
)

_CJK_CHAR = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RE = re.compile(f"[{_CJK_CHAR}]")
_WORD_RUN_RE = re.compile(r"[^\W_]+")
_SCRIPT_SPLIT_RE = re.compile(f"([{_CJK_CHAR}]+)")
# Characters that split a CJK run before bigrams: hiragana (Japanese particles and inflection)
# and common Chinese function characters (的 了 和 与 及 在 是 …), so titles do not match on them.
_CJK_SEPARATOR_RE = re.compile(r"[\u3040-\u309f的了和与及在是为对之把被等或中]+")


def contains_cjk(text: str) -> bool:
    """True when ``text`` has at least one Chinese, Japanese or Korean character."""
    return bool(_CJK_RE.search(text))


def _stem(word: str) -> str:
    """A crude English stem so that ``migration`` and ``migrating`` compare equal."""
    for suffix in ("ations", "ation", "ings", "ing", "ions", "ion", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def meaningful_words(text: str) -> set[str]:
    """The meaningful words of a title: lower-cased stems without stopwords, plus CJK bigrams.

    Latin-script words drop ``TITLE_STOPWORDS`` and are stemmed crudely. CJK runs (split at
    hiragana and common function characters) give their character bigrams (a one-character run
    gives itself), so ``数据库迁移`` yields ``数据 据库 库迁 迁移``.
    """
    words: set[str] = set()
    for run in _WORD_RUN_RE.findall(text):
        for part in _SCRIPT_SPLIT_RE.split(run):
            if not part:
                continue
            if _CJK_RE.match(part):
                for piece in _CJK_SEPARATOR_RE.split(part):
                    if len(piece) == 1:
                        words.add(piece)
                    for i in range(len(piece) - 1):
                        bigram = piece[i : i + 2]
                        if bigram not in _CJK_TITLE_STOP_BIGRAMS:
                            words.add(bigram)
            else:
                word = part.casefold()
                if word not in TITLE_STOPWORDS and (len(word) > 1 or word.isdigit()):
                    words.add(_stem(word))
    return words


def shares_meaningful_word(old: str, new: str) -> bool:
    """True when ``new`` keeps a meaningful word of ``old``, or ``old`` has none (SPEC §4.1)."""
    old_words = meaningful_words(old)
    return not old_words or bool(old_words & meaningful_words(new))


# --------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------

PATH_EXTENSIONS: frozenset[str] = _words(
    """py pyi ipynb ts tsx js jsx mjs cjs md rst yaml yml json jsonl sh bash zsh ps1 cmd bat
    toml ini cfg conf env rs go java kt kts scala swift rb php pl lua r c cc cpp cxx h hh hpp
    cs m mm vue svelte html htm css scss sass less sql db sqlite csv tsv parquet xml xsd proto
    graphql gql tf hcl dockerfile lock txt log pdf png jpg jpeg gif svg webp ico mp3 mp4 wav
    zip tar gz tgz bz2 xz whl so dll exe dylib jar wasm ex exs erl hs ml clj dart gradle
    properties pem crt key tex bib docx xlsx pptx"""
)
"""File extensions that make a token a path (case-insensitive)."""

_KNOWN_FILES = _words(
    "dockerfile makefile procfile jenkinsfile gemfile rakefile vagrantfile license readme "
    "changelog codeowners"
)
_KNOWN_DIRS = _words(
    """src lib libs test tests spec specs doc docs app apps bin etc usr var tmp opt home srv
    config configs conf scripts script build dist pkg packages cmd internal vendor
    node_modules public static assets templates include examples notebooks prompts migrations
    tools bench benchmarks data .github .ci .vscode"""
)
_CJK_PUNCT = r"\u3000-\u303f\uff00-\uffef"
_URL_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:https?|ftp|file|wss?)://[^\s<>\"'`\[\](){}"
    + _CJK_CHAR
    + _CJK_PUNCT
    + "]+"
)
_WINDOWS_RE = re.compile(r"(?<![\w])[A-Za-z]:\\[^\s<>\"'`|*?]+")
_PW = r"[^\W" + _CJK_CHAR + "]"  # a word character that is not CJK (paths stop at CJK text)
_TOKEN_RE = re.compile(
    r"(?<![/.~\-@+])(?<!" + _PW + r")(?:~|\.{1,2})?/?(?:" + _PW + r"|[@+\-.])"
    r"(?:" + _PW + r"|[.@+~\-])*(?:/(?:" + _PW + r"|[.@+~\-])*)*"
)
_TRAILING_PUNCT = ".,;:!?'\")]}>"


def normalise_path(path: str) -> str:
    """Comparison form of a path: no leading ``./``, no trailing ``/`` or punctuation."""
    text = path.strip().rstrip(_TRAILING_PUNCT)
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/") or text


def _has_extension(segment: str) -> bool:
    if segment.casefold() in _KNOWN_FILES:
        return True
    stem, dot, ext = segment.rpartition(".")
    if not dot:
        return False
    if not stem:  # a dotfile such as .env or .gitignore
        return bool(re.fullmatch(r"[a-z][a-z0-9_\-]*(?:\.[a-z0-9]+)*", ext))
    return ext.casefold() in PATH_EXTENSIONS and bool(re.search(r"[\w]", stem))


def is_path_like(token: str) -> bool:
    """Apply the path rule of this module's docstring to one whitespace-free token."""
    text = token.rstrip(_TRAILING_PUNCT)
    if not text or any(ch.isspace() for ch in text):
        return False
    if _URL_RE.fullmatch(text) or _WINDOWS_RE.fullmatch(text):
        return True
    segments = text.split("/")
    if _has_extension(segments[-1]):
        return len(text) > 1
    if "/" not in text or not re.search(r"[^\W\d_]", text):
        return False
    named = [s for s in segments if s not in ("", ".", "..", "~")]
    if not named:
        return False
    if text.startswith(("/", "./", "../", "~/")) or text.endswith("/"):
        return True
    if len(named) >= 3:
        return True
    if named[0].casefold() in _KNOWN_DIRS:
        return True
    for segment in named:
        if "_" in segment or "." in segment.strip("."):
            return True
        if re.search(r"\d", segment) and re.search(r"[^\W\d_]", segment):
            return True
    return False


def extract_paths(text: str) -> list[str]:
    """Path-like tokens and URLs in ``text``, in order of first appearance, unique.

    Trailing sentence punctuation is removed (``see main.py.`` gives ``main.py``).
    """
    found: list[str] = []
    seen: set[str] = set()
    spans: list[tuple[int, int]] = []

    def _add(candidate: str) -> None:
        clean = candidate.rstrip(_TRAILING_PUNCT)
        if clean and clean not in seen:
            seen.add(clean)
            found.append(clean)

    hits: list[tuple[int, str]] = []
    for regex in (_URL_RE, _WINDOWS_RE):
        for match in regex.finditer(text):
            hits.append((match.start(), match.group()))
            spans.append(match.span())
    for match in _TOKEN_RE.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue
        if is_path_like(match.group()):
            hits.append((match.start(), match.group()))
    for _, candidate in sorted(hits, key=lambda hit: hit[0]):
        _add(candidate)
    return found


# --------------------------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------------------------

DECISION_MARKERS: frozenset[str] = frozenset(
    {"because", "decided", "chose", "committed", "agreed", "resolved"}
    | {"因为", "决定", "选择", "同意", "确定", "決定", "選択"}
)
"""Decision markers counted as anchors (SPEC §4.3)."""

ANCHOR_STOPWORDS: frozenset[str] = _words(
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
    adding restored silently dropped resolved"""
)
"""Capitalised words that are not proper nouns (sentence starters, section vocabulary)."""

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
    if unit in ANCHOR_STOPWORDS or unit in TITLE_STOPWORDS:
        return None
    return f"{_plain_number(m['num'])} {unit}"


def _proper_noun(m: re.Match[str]) -> str | None:
    word = m["word"].casefold()
    return None if word in ANCHOR_STOPWORDS else word


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
    (re.compile(r"(?:" + _NUM + r")[^\S\n]*(?:" + _CJK_UNITS + ")"), _cjk_number),
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
    (re.compile(r"(?<![\w&])#\d+" + _R), _lower),
    (re.compile(_L + r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+" + _R), _lower),
    (re.compile(r"(?<![\w.\-])[A-Za-z0-9][A-Za-z0-9_]*(?:[-.:][A-Za-z0-9_]+)+" + _R), _identifier),
    (
        re.compile(r"(?<![\w.\-])(?P<num>" + _NUM + r")[^\S\n]?(?P<unit>%|[A-Za-z]{1,15})" + _R),
        lambda m: f"{_plain_number(m['num'])}%" if m["unit"] == "%" else _number_unit(m),
    ),
    (re.compile(r"(?<![\w.\-])[A-Za-z]+\d[A-Za-z0-9]*" + _R), _identifier),
    (
        re.compile(r"(?i)" + _L + r"(?:because|decided|chose|committed|agreed|resolved)" + _R),
        _marker,
    ),
    (re.compile("因为|决定|选择|同意|确定|決定|選択"), _marker),
    (re.compile(_L + r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+" + _R), _lower),
    (re.compile(_L + r"[a-z]+(?:[A-Z][a-z0-9]*)+" + _R), _lower),
    (re.compile(_L + r"(?P<word>[A-Z][A-Za-z]{2,})(?:['’]s)?" + _R), _proper_noun),
    (re.compile(r"[\u30a1-\u30fa\u30fc]{3,}"), _lower),
    (re.compile(r"(?<![\w.\-])(?:" + _NUM + r")" + _R), _bare_number),
    (re.compile(r"(?<=[" + _CJK_CHAR + r"])\d+(?:\.\d+)?"), _bare_number),
)


def extract_anchors(text: str, *, include_markers: bool = True) -> set[str]:
    """The lexical anchors of ``text`` in canonical form (SPEC §4.3 and its go-further items).

    Kinds: paths and URLs; dates (ISO, day-month-year, month-day-year, ``2024年3月15日``);
    times (``10 am``); money (``$200``, ``200元``); numbers with a unit (``3 months``,
    ``3个月``, ``5%``); keyword numbers (``port 5432``, ``http 429``, ``#42``); identifiers with
    digits (``fact-017``, ``v2.3.1``); code identifiers (``DATABASE_URL``, ``parse_config``,
    ``getUser``, backticked spans); decision markers; capitalised proper nouns of 3+ letters not
    in ``ANCHOR_STOPWORDS``; katakana words; other numbers of 2+ digits.

    Args:
        text: Any text.
        include_markers: When False, decision markers (``because``…) are left out; they say
            that a decision exists, not which one.
    """
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
    return anchors


def anchor_in_text(anchor: str, text: str, text_anchors: set[str] | None = None) -> bool:
    """True when ``anchor`` is among the anchors of ``text`` or appears in it literally.

    Args:
        anchor: A canonical anchor from :func:`extract_anchors`.
        text: The text to look in.
        text_anchors: ``extract_anchors(text)`` when the caller already has it.
    """
    found = extract_anchors(text) if text_anchors is None else text_anchors
    if anchor in found:
        return True
    pattern = r"(?<![0-9a-z_])" + re.escape(anchor) + r"(?![0-9a-z_])"
    return re.search(pattern, _collapse(text)) is not None


def missing_anchors(anchors: Iterable[str], text: str) -> set[str]:
    """The anchors of ``anchors`` that do not appear in ``text`` (see :func:`anchor_in_text`)."""
    found = extract_anchors(text)
    collapsed = _collapse(text)
    missing: set[str] = set()
    for anchor in anchors:
        if anchor in found:
            continue
        pattern = r"(?<![0-9a-z_])" + re.escape(anchor) + r"(?![0-9a-z_])"
        if re.search(pattern, collapsed) is None:
            missing.add(anchor)
    return missing
