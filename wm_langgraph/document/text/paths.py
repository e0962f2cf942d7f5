"""Path-like tokens and URLs (behaviour §4.4). Public names are re-exported by ``document.text``,
whose docstring states the rule."""

from __future__ import annotations

import re
from itertools import pairwise

CJK_CHARS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
"""Character-class ranges of Chinese, Japanese and Korean script (for use inside ``[...]``)."""


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` as a frozenset."""
    return frozenset(text.split())


# --------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------

PATH_EXTENSIONS: frozenset[str] = words(
    """py pyi ipynb ts tsx js jsx mjs cjs md rst yaml yml json jsonl sh bash zsh ps1 cmd bat
    toml ini cfg conf env rs go java kt kts scala swift rb php pl lua r c cc cpp cxx h hh hpp
    cs m mm vue svelte html htm css scss sass less sql db sqlite csv tsv parquet xml xsd proto
    graphql gql tf hcl dockerfile lock txt log pdf png jpg jpeg gif svg webp ico mp3 mp4 wav
    zip tar gz tgz bz2 xz whl so dll exe dylib jar wasm ex exs erl hs ml clj dart gradle
    properties pem crt key tex bib docx xlsx pptx"""
)
"""File extensions that make a token a path (case-insensitive)."""

_KNOWN_FILES = words(
    "dockerfile makefile procfile jenkinsfile gemfile rakefile vagrantfile license readme "
    "changelog codeowners"
)
_KNOWN_DIRS = words(
    """src lib libs test tests spec specs doc docs app apps bin etc usr var tmp opt home srv
    config configs conf scripts script build dist pkg packages cmd internal vendor
    node_modules public static assets templates include examples notebooks prompts migrations
    tools bench benchmarks data .github .ci .vscode"""
)
# First segments of absolute paths on real file systems and in containers. An absolute shape
# without a file name whose first segment is none of these (and that looks like an API route)
# is a route, not a path: routes seen in tool output ("/healthz", "/orders/1") were listed and
# protected in Files & Context as if they were files.
_ROOT_DIRS = words(
    """etc usr var tmp home opt srv bin sbin lib lib64 mnt media proc sys dev root run boot
    private nix snap workspace workspaces app code work data repo repos project projects src
    build dist out github builds cygdrive Users Volumes Library Applications System"""
)
_ROUTE_HEADS = words(
    """api apis graphql rest rpc auth oauth oauth2 login logout signin signup health healthz
    livez readyz metrics status ping webhooks webhook callback"""
)
_PLATFORM_OS = words("linux windows darwin macos freebsd openbsd netbsd android ios wasip1 js")
"""Operating systems of ``os/arch`` platform strings (``--platform linux/amd64``)."""
_ROUTE_SEGMENT_RE = re.compile(r"\d+|v\d+(?:\.\d+)?|\{[^}/]*\}|:[A-Za-z_]\w*|\*")
MAX_PATH_CHARS = 300
"""A token longer than this is never a path (an entry is a path, not a payload)."""
_HEX_RUN_RE = re.compile(
    r"(?<![0-9a-f])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}(?![0-9a-f])", re.I
)
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_RUN_RE = re.compile(r"[A-Za-z0-9+=]+")
_KEY_RE = re.compile(
    r"(?:^|[/@])(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}|(?:^|/)(?:gh[pousr]|glpat|xox[abprs])[_\-][A-Za-z0-9_\-]{16,}"
    r"|AKIA[0-9A-Z]{16}|(?:^|[/.])eyJ[A-Za-z0-9_\-]{8,}"
)
_CJK_PUNCT = r"\u3000-\u303f\uff00-\uffef"
_URL_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:https?|ftp|file|wss?)://[^\s<>\"'`\[\](){}"
    + CJK_CHARS
    + _CJK_PUNCT
    + "]+"
)
_WINDOWS_RE = re.compile(r"(?<![\w])[A-Za-z]:\\[^\s<>\"'`|*?]+")
_PW = r"[^\W" + CJK_CHARS + "]"  # a word character that is not CJK (paths stop at CJK text)
_ENV_PREFIX = r"\$\{?[A-Za-z_]\w*\}?(?=/)"  # $HOME/... or ${XDG_CONFIG_HOME}/...
_TOKEN_RE = re.compile(
    r"(?<![/.~\-@+])(?<!" + _PW + r")(?:~|\.{1,2}|" + _ENV_PREFIX + r")?/?(?:" + _PW + r"|[@+\-.])"
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
    if re.fullmatch(r"\.[a-z][a-z0-9_\-]*(?:\.[a-z0-9_\-]+)*", segment):
        return True  # a dotfile such as .env, .gitignore, .env.example
    stem, dot, ext = segment.rpartition(".")
    if not dot or not stem:
        return False
    return ext.casefold() in PATH_EXTENSIONS and bool(re.search(r"[\w]", stem))


def _random_run(run: str) -> bool:
    """A run of letters and digits that no one would type: base64, a key, a digest."""
    if len(run) >= 64:
        return True
    if len(run) < 25:
        return False
    digits = sum(ch.isdigit() for ch in run)
    rises = sum(1 for a, b in pairwise(run) if a.islower() and b.isupper())
    return digits >= 3 or rises >= 6 or "+" in run or "=" in run.rstrip("=")


def is_junk(token: str) -> bool:
    """True for a token that is data, not a path: base64-like runs, hex digests, UUIDs, keys
    and tokens, or anything longer than :data:`MAX_PATH_CHARS` (digests, keys and base64 in tool
    results filled Files & Context with "paths" that the guard then protected for good)."""
    if len(token) > MAX_PATH_CHARS:
        return True
    if _URL_RE.fullmatch(token):
        return any(len(run) >= 64 for run in _RUN_RE.findall(token))
    if _HEX_RUN_RE.search(token) or _UUID_RE.search(token) or _KEY_RE.search(token):
        return True
    if any(_random_run(run) for run in _RUN_RE.findall(token)):
        return True
    if _has_extension(token.rsplit("/", maxsplit=1)[-1]):
        return False
    joined = "".join(_RUN_RE.findall(token))
    return len(joined) >= 30 and _random_run(joined)


def _is_route(named: list[str]) -> bool:
    """An absolute shape that reads as an API route rather than a file-system path."""
    if named[0] in _ROOT_DIRS:
        return False
    if len(named) < 3 or named[0].casefold() in _ROUTE_HEADS:
        return True
    return any(_ROUTE_SEGMENT_RE.fullmatch(segment) for segment in named)


def is_path_like(token: str) -> bool:
    """Apply the path rule of this module's docstring to one whitespace-free token."""
    text = token.rstrip(_TRAILING_PUNCT)
    if not text or len(text) > MAX_PATH_CHARS or any(ch.isspace() for ch in text):
        return False
    return _path_shape(text) and not is_junk(text)


def _path_shape(text: str) -> bool:
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
    if not any(len(segment) > 1 for segment in named):
        return False  # not a format spec like "%d/"
    if text.startswith(("./", "../", "~/")):
        return True
    if text.startswith("/"):
        return not _is_route(named)
    if len(named) == 1:
        return False  # a bare "tests/" names a directory in passing, not a file
    if text.endswith("/"):
        return True
    if len(named) >= 3:
        return True
    if named[0].casefold() in _KNOWN_DIRS:
        return True
    if len(named) == 2 and named[0].casefold() in _PLATFORM_OS:
        return False  # a platform ("linux/amd64", "windows/arm64"), not a file
    for segment in named:
        if "_" in segment or "." in segment.strip("."):
            return True
        if re.search(r"\d", segment) and re.search(r"[^\W\d_]", segment):
            return True
    return False


def _is_markup(text: str, match: re.Match[str]) -> bool:
    """A fragment of a tag (``/td`` of ``</td>``) or of a ``blob:`` / ``data:`` URL."""
    before = text[max(0, match.start() - 5) : match.start()]
    return before.endswith(("<", "blob:", "data:"))


def _is_attribute(text: str, match: re.Match[str]) -> bool:
    """A dotfile-shaped token that is really an attribute or method (``f().join``, ``.x(``)."""
    token = match.group().rstrip(_TRAILING_PUNCT)
    if not token.startswith(".") or token.startswith(("./", "../")):
        return False
    before = text[match.start() - 1] if match.start() else ""
    after = text[match.start() + len(token) : match.start() + len(token) + 1]
    return before in {")", "]", "}", ">"} or after == "("


_IMPORT_RE = re.compile(r"\b(?:from|import)[ \t]+$")


def _is_module_name(text: str, match: re.Match[str]) -> bool:
    """A dotted Python module in an import statement (``from orders.db import x``)."""
    token = match.group()
    return "/" not in token and bool(
        _IMPORT_RE.search(text[max(0, match.start() - 12) : match.start()])
    )


def _host(tld: str) -> str:
    """A host: dotted labels ending in a top-level domain (group ``tld``), ``localhost`` or an
    IPv4 address."""
    return (
        r"(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<" + tld + r">[A-Za-z]{2,63})"
        r"|localhost|\d{1,3}(?:\.\d{1,3}){3})"
    )


# A URL without its scheme: a host, an optional port, then a path; or an scp-style remote
# (``git@github.com:org/repo.git``). ``evil.example/x.sh`` is a place on the web, not a file.
_HOSTED_RE = re.compile(
    r"(?<![\w./~@$:%-])" + _host("tld") + r"(?::\d{1,5})?(?:/[^\s<>\"'`]*|(?=:\d))"
    r"|(?<![\w./~$-])[\w.-]+@" + _host("remote_tld") + r":[^\s<>\"'`]+"
)


def _hosted(match: re.Match[str]) -> bool:
    """A host-shaped match whose last label is not a file extension (``notes.md/`` is a
    directory named like a file, ``example/`` after ``evil.`` is a domain)."""
    tld = match.group("tld") or match.group("remote_tld") or ""
    return not tld or tld.casefold() not in PATH_EXTENSIONS | _KNOWN_FILES


def is_url(token: str) -> bool:
    """True for a URL (behaviour §5.8: a URL is never a file the session touched): one with a
    scheme (``https://…``, ``ftp://…``, ``data:``/``blob:``/``mailto:``), or without one, a
    host and a path (``evil.example/x.sh``, ``github.com/org/repo``, ``localhost:8080/x``,
    ``127.0.0.1/collect``, ``git@github.com:org/repo.git``)."""
    text = token.strip().rstrip(_TRAILING_PUNCT)
    if re.match(r"(?i)[a-z][a-z0-9+.-]*://", text) or re.match(r"(?i)(?:data|blob|mailto):", text):
        return True
    match = _HOSTED_RE.fullmatch(text)
    return match is not None and _hosted(match)


def strip_urls(text: str, mask: str = " ") -> str:
    """``text`` with every URL (:func:`is_url`: with a scheme or host-shaped) replaced by
    ``mask``, so that no part of one is read as a path (``https://evil.example/x.sh`` gives no
    ``x.sh``, ``127.0.0.1:8000/x.sh`` no ``8000/x.sh``)."""
    text = re.sub(r"(?i)(?<![A-Za-z0-9])[a-z][a-z0-9+.-]*://\S*", mask, text)

    def blank(match: re.Match[str]) -> str:
        return mask if _hosted(match) else match.group()

    return _HOSTED_RE.sub(blank, text)


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
            spans.append(match.span())
            if not _is_markup(text, match) and not is_junk(match.group().rstrip(_TRAILING_PUNCT)):
                hits.append((match.start(), match.group()))
    for match in _TOKEN_RE.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue
        if (
            is_path_like(match.group())
            and not _is_markup(text, match)
            and not _is_attribute(text, match)
            and not _is_module_name(text, match)
        ):
            hits.append((match.start(), match.group()))
    for _, candidate in sorted(hits, key=lambda hit: hit[0]):
        _add(candidate)
    return found
