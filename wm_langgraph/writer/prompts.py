"""The prompt files (``prompts/*.md``): loading, checking and rendering.

The prompts ship inside the wheel as ``wm_langgraph/prompts/*.md`` (pyproject force-includes
the repository's top-level ``prompts/`` there) and are read with ``importlib.resources``; in a
source or editable checkout, where that package directory does not exist, the repository's
``prompts/`` directory is used instead.

Placeholders are written ``{{name}}`` and are replaced literally, in one pass: a value that
itself contains ``{{messages}}`` is inserted as is, never expanded. Each prompt's inputs are
wrapped in tags so that a reader of the rendered prompt (e.g. the offline model) can find them
(:func:`extract_block`):

* ``create``: ``<prior_summary>{{prior_summary}}</prior_summary>`` (the prior WM or legacy
  summary, ``(none)`` when there is none) and ``<messages>{{messages}}</messages>``.
* ``update``: ``<working_memory>{{working_memory}}</working_memory>``,
  ``<messages>{{messages}}</messages>`` and ``{{section_size_warnings}}`` on a line of its own,
  whose value is the whole ``<section_size_warnings>…</section_size_warnings>`` block —
  ``<section_size_warnings></section_size_warnings>`` when no section is oversized.
  ``render_update_prompt`` builds that block from the Working Memory.
* ``system``: no placeholders (the assemble addition of behaviour §7.4).
* ``capture``: ``<working_memory>{{working_memory}}</working_memory>`` and
  ``<capture_items>{{capture_items}}</capture_items>`` (the capture check's follow-up,
  behaviour §5.11: the numbered statements the merged document lacks, quoted as data).

Inside each tag the value sits on its own lines (``<messages>\\n…\\n</messages>``).

The values come from the conversation and from earlier model output, so any of them may contain
a delimiter: ``render_create_prompt`` and ``render_update_prompt`` neutralise every tag of
:data:`PROMPT_DELIMITERS` (and every tag the template itself uses) inside the values they fill
in, opening or closing, any case or spacing (``</messages>`` becomes ``&lt;/messages>``), so user
text cannot close the messages block or open a second Working Memory. The section-size warnings
block is built by the engine and inserted as is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from wm_langgraph.document.protocol import (
    EMPTY_SECTION_SIZE_WARNINGS,
    TARGET_WARN_SHARE,
    section_size_warnings,
)

__all__ = [
    "NO_PRIOR_SUMMARY",
    "PROMPT_DELIMITERS",
    "PROMPT_PLACEHOLDERS",
    "PromptName",
    "check_prompt",
    "extract_block",
    "load_prompt",
    "neutralise_delimiters",
    "placeholders",
    "render_create_prompt",
    "render_prompt",
    "render_update_prompt",
]

PromptName = Literal["create", "update", "system", "capture"]

PROMPT_PLACEHOLDERS: Mapping[str, frozenset[str]] = {
    "create": frozenset({"prior_summary", "messages"}),
    "update": frozenset({"working_memory", "messages", "section_size_warnings"}),
    "system": frozenset(),
    "capture": frozenset({"working_memory", "capture_items"}),
}
"""The placeholders each prompt must contain, every one of them, and no others."""

NO_PRIOR_SUMMARY = "(none)"
"""What the create prompt shows as the prior summary when there is none."""

_PLACEHOLDER_RE = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
_TEMPLATE_TAG_RE = re.compile(r"</([A-Za-z_][A-Za-z0-9_-]*)>")

PROMPT_DELIMITERS: frozenset[str] = frozenset(
    {"prior_summary", "messages", "working_memory", "section_size_warnings", "capture_items"}
)
"""The tags the shipped prompts wrap their inputs in (never left intact inside a value)."""


def neutralise_delimiters(value: str, names: Iterable[str] = PROMPT_DELIMITERS) -> str:
    """``value`` with every ``<name>`` / ``</name>`` of ``names`` made inert.

    Matches any case and blank space inside the brackets (``< /Messages >``) and an unclosed
    ``</messages``; only the ``<`` is replaced (by ``&lt;``), so the text stays readable.
    """
    tags = sorted({n for n in names if n}, key=len, reverse=True)
    if not tags or "<" not in value:
        return value
    pattern = re.compile(
        r"<(?=\s*/?\s*(?:" + "|".join(map(re.escape, tags)) + r")(?![A-Za-z0-9_-]))",
        re.IGNORECASE,
    )
    return pattern.sub("&lt;", value)


def _delimiters(template: str) -> frozenset[str]:
    return PROMPT_DELIMITERS | frozenset(_TEMPLATE_TAG_RE.findall(template))


_SOURCE_PROMPTS = Path(__file__).resolve().parents[2] / "prompts"


def _check_name(name: str) -> None:
    if name not in get_args(PromptName):
        raise ValueError(f"unknown prompt {name!r}; expected one of {list(get_args(PromptName))!r}")


@functools.cache
def load_prompt(name: PromptName) -> str:
    """Return the text of a shipped prompt.

    Args:
        name: ``"create"``, ``"update"``, ``"system"`` or ``"capture"``.

    Raises:
        ValueError: ``name`` is not one of the shipped prompts.
        FileNotFoundError: the prompt file is neither in the installed package nor in the
            source checkout (a broken installation).
    """
    _check_name(name)
    filename = f"{name}.md"
    packaged = resources.files("wm_langgraph").joinpath("prompts", filename)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = _SOURCE_PROMPTS / filename
    if source.is_file():
        return source.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"prompt {filename!r} not found in the wm_langgraph package nor in {_SOURCE_PROMPTS}; "
        "reinstall wm-langgraph"
    )


def placeholders(template: str) -> frozenset[str]:
    """The names of the ``{{name}}`` placeholders in ``template``."""
    return frozenset(_PLACEHOLDER_RE.findall(template))


def check_prompt(name: PromptName, template: str) -> str:
    """Validate a (possibly user-supplied) template for the prompt ``name``.

    Args:
        name: Which prompt the template replaces.
        template: The template text.

    Returns:
        ``template`` unchanged, so a constructor can write ``self._p = check_prompt(...)``.

    Raises:
        ValueError: the template lacks a placeholder the prompt needs or has one it cannot fill.
        TypeError: ``template`` is not a string.
    """
    _check_name(name)
    if not isinstance(template, str):
        raise TypeError(f"the {name} prompt must be a str, got {type(template).__name__}")
    expected = PROMPT_PLACEHOLDERS[name]
    found = placeholders(template)
    problems = []
    if expected - found:
        problems.append(f"missing {sorted(expected - found)!r}")
    if found - expected:
        problems.append(f"unknown {sorted(found - expected)!r}")
    if problems:
        raise ValueError(
            f"the {name} prompt template has wrong placeholders ({'; '.join(problems)}); "
            f"it must contain exactly {sorted('{{' + p + '}}' for p in expected)!r}"
        )
    return template


def render_prompt(template: str, **values: str) -> str:
    """Fill the ``{{name}}`` placeholders of ``template`` in one pass.

    Args:
        template: The prompt text.
        **values: One string per placeholder of the template.

    Returns:
        The rendered text. Substituted values are not scanned again.

    Raises:
        ValueError: a placeholder of the template has no value, or a value was given for a
            placeholder the template does not contain.
        TypeError: a value is not a string.
    """
    found = placeholders(template)
    missing = sorted(found - values.keys())
    unknown = sorted(values.keys() - found)
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"no value for placeholder(s) {missing!r}")
        if unknown:
            parts.append(f"value(s) given for placeholder(s) not in the template {unknown!r}")
        raise ValueError(f"cannot render prompt: {'; '.join(parts)}")
    for key, value in values.items():
        if not isinstance(value, str):
            raise TypeError(f"prompt value {key!r} must be a str, got {type(value).__name__}")
    return _PLACEHOLDER_RE.sub(lambda match: values[match.group(1)], template)


def extract_block(prompt: str, tag: str) -> str | None:
    """The text inside ``<tag>…</tag>`` in a rendered ``prompt``; ``None`` when the tag is
    absent. The inverse of the tags the render functions wrap each input in.

    The prompt's own prose may mention the tag (``the <messages> block``); the block chosen is
    the longest span from an opening tag to the next closing tag, preferring openings that sit
    on a line of their own.
    """
    opening, closing = f"<{tag}>", f"</{tag}>"
    best: tuple[bool, int, str] | None = None
    start = prompt.find(opening)
    while start != -1:
        end = prompt.find(closing, start + len(opening))
        if end == -1:
            break
        body = prompt[start + len(opening) : end]
        line_start = prompt.rfind("\n", 0, start) + 1
        own_line = not prompt[line_start:start].strip()
        candidate = (own_line, len(body), body)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
        start = prompt.find(opening, start + len(opening))
    if best is None:
        return None
    return best[2].strip("\n")


def render_create_prompt(*, prior_summary: str, messages: str, template: str | None = None) -> str:
    """Render the create prompt.

    Args:
        prior_summary: The prior Working Memory or legacy summary; blank means none.
        messages: The rendered messages to fold in.
        template: A replacement for the shipped ``create`` prompt.
    """
    text = load_prompt("create") if template is None else template
    tags = _delimiters(text)
    prior = (
        neutralise_delimiters(prior_summary, tags) if prior_summary.strip() else NO_PRIOR_SUMMARY
    )
    return render_prompt(text, prior_summary=prior, messages=neutralise_delimiters(messages, tags))


def render_update_prompt(
    *,
    working_memory: str,
    messages: str,
    template: str | None = None,
    size_target: int | None = None,
) -> str:
    """Render the update prompt, with the size-warnings block computed from ``working_memory``.

    Args:
        working_memory: The current Working Memory document.
        messages: The rendered new messages.
        template: A replacement for the shipped ``update`` prompt.
        size_target: The document's size target in tokens (warnings from
            ``TARGET_WARN_SHARE`` of it on).
    """
    text = load_prompt("update") if template is None else template
    warnings = (
        section_size_warnings(
            working_memory,
            target_tokens=size_target,
            warn_from=None if size_target is None else int(TARGET_WARN_SHARE * size_target),
        )
        or EMPTY_SECTION_SIZE_WARNINGS
    )
    tags = _delimiters(text)
    return render_prompt(
        text,
        working_memory=neutralise_delimiters(working_memory, tags),
        messages=neutralise_delimiters(messages, tags),
        section_size_warnings=warnings,
    )


def render_capture_prompt(*, working_memory: str, items: str, template: str | None = None) -> str:
    """Render the capture follow-up prompt (``prompts/capture.md``).

    Args:
        working_memory: The merged Working Memory document.
        items: The numbered statements it lacks, one per line (quoted data).
        template: A replacement for the shipped ``capture`` prompt.
    """
    text = load_prompt("capture") if template is None else template
    tags = _delimiters(text)
    return render_prompt(
        text,
        working_memory=neutralise_delimiters(working_memory, tags),
        capture_items=neutralise_delimiters(items, tags),
    )
