"""What a results file measured: the code fingerprint, the commit, the versions, the machine.

Every results file of ``bench/`` opens with a *Provenance* list written by :func:`stamp_lines`;
``tests/bench/test_results_fresh.py`` reads it back with :func:`read_stamp` and compares the
recorded fingerprint with :func:`code_fingerprint` of the tree it runs in, so results older
than the code they claim to measure fail the suite.

The fingerprint is the sha256 over the files matched by :data:`FINGERPRINTED` (the package,
its prompts and the benchmark's own code), sorted by path; for each file, its path relative to
the repository root, a NUL, its length in bytes, a NUL and its bytes (line endings normalised
to LF, so a Windows checkout gives the same value). Result files (``*.md``, ``*.png``,
``*.json``) are not matched, so writing them never changes it.

``python -m bench.provenance`` prints the fingerprint of the current tree.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

__all__ = [
    "FINGERPRINTED",
    "ROOT",
    "Stamp",
    "code_fingerprint",
    "fingerprinted_files",
    "git_commit",
    "load_average",
    "machine",
    "measured_on",
    "read_stamp",
    "settled_fingerprint",
    "stamp_lines",
    "versions",
]

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (the directory holding ``bench/``)."""

FINGERPRINTED: tuple[str, ...] = ("wm_langgraph/**/*.py", "prompts/*.md", "bench/**/*.py")
"""The files whose contents the fingerprint covers (globs relative to the repository root)."""

VERSIONED: tuple[str, ...] = (
    "wm-langgraph",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain",
    "langchain-core",
    "langmem",
    "tiktoken",
    "matplotlib",
)
"""The distributions whose versions a results file states."""


def fingerprinted_files(root: Path = ROOT) -> list[Path]:
    """The files :func:`code_fingerprint` reads, sorted by their path relative to ``root``."""
    found: set[Path] = set()
    for pattern in FINGERPRINTED:
        found.update(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def code_fingerprint(root: Path = ROOT) -> str:
    """sha256 (hex) of the code a benchmark measures; see the module docstring."""
    digest = hashlib.sha256()
    for path in fingerprinted_files(root):
        data = path.read_bytes().replace(b"\r\n", b"\n")
        name = path.relative_to(root).as_posix()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def git_commit(root: Path = ROOT) -> str:
    """The checked-out commit, and whether the fingerprinted files differ from it."""
    pathspecs = [f":(glob){pattern}" for pattern in FINGERPRINTED]
    try:
        head = _git(root, "rev-parse", "--short=12", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *pathspecs)
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    if dirty:
        return f"{head} with uncommitted changes to the fingerprinted files"
    return f"{head}, the fingerprinted files as committed"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def versions(names: Iterable[str] = VERSIONED) -> dict[str, str]:
    """Installed version of each distribution ("not installed" when absent), and of the SQLite
    library (the checkpoint file sizes depend on it)."""
    import sqlite3

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["SQLite"] = sqlite3.sqlite_version
    return out


def machine() -> str:
    """OS, CPUs and Python of this machine."""
    cpu = platform.processor() or platform.machine()
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({cpu}), "
        f"Python {platform.python_version()}"
    )


def load_average() -> str:
    """The 1 / 5 / 15 minute load average now ("unknown" where the OS does not say)."""
    if not hasattr(os, "getloadavg"):
        return "unknown"
    return "{:.2f} / {:.2f} / {:.2f}".format(*os.getloadavg())


@dataclass(frozen=True)
class Stamp:
    """The provenance of one results file.

    Attributes:
        command: the command that wrote it, as typed from the repository root.
        seeds: the seeds (or why there are none).
        fingerprint: :func:`code_fingerprint` when the run started, or a sentence saying why
            there is none (e.g. the code changed while the run went on).
        commit: :func:`git_commit` when the run started.
        versions: :func:`versions`.
        generated: when the file was written (UTC, to the minute).
        machine: :func:`machine`, for files that hold timings.
        extra: further labelled lines (e.g. the dataset and its sha256).
    """

    command: str
    seeds: str
    fingerprint: str
    commit: str
    versions: dict[str, str] = field(default_factory=versions)
    generated: str = field(
        default_factory=lambda: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    )
    machine: str | None = None
    extra: Sequence[tuple[str, str]] = ()


def settled_fingerprint(started: str, root: Path = ROOT) -> str:
    """``started`` when the tree still has that fingerprint; else a sentence saying it moved."""
    now = code_fingerprint(root)
    if now == started:
        return started
    return (
        f"none: the code changed during the run ({started[:12]}… at the start, "
        f"{now[:12]}… at the end)"
    )


def stamp_lines(stamp: Stamp) -> list[str]:
    """The *Provenance* section of a results file (read back by :func:`read_stamp`)."""
    fingerprint = stamp.fingerprint
    if re.fullmatch(r"[0-9a-f]{64}", fingerprint):
        fingerprint = (
            f"`{fingerprint}` (sha256 of {', '.join(f'`{p}`' for p in FINGERPRINTED)}; "
            "`python -m bench.provenance` prints the current tree's)"
        )
    lines = [
        "## Provenance",
        "",
        f"- Command: `{stamp.command}` (from the repository root)",
        f"- Seeds: {stamp.seeds}",
        f"- Code fingerprint: {fingerprint}",
        f"- Commit: {stamp.commit}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in stamp.versions.items()),
    ]
    if stamp.machine:
        lines.append(f"- Machine: {stamp.machine}")
    lines += [f"- {label}: {text}" for label, text in stamp.extra]
    lines += [f"- Generated: {stamp.generated}", ""]
    return lines


def read_stamp(text: str) -> dict[str, str]:
    """The labelled lines of the first *Provenance* section of ``text`` (label -> text).

    ``"fingerprint"`` holds the bare 64-hex fingerprint when one is recorded, ``"command"`` the
    bare command.
    """
    section = text.split("## Provenance", 1)[1] if "## Provenance" in text else ""
    section = section.split("\n## ", 1)[0]
    out: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"^- ([A-Z][A-Za-z ]+): (.*)$", line)
        if match and match.group(1) not in out:
            out[match.group(1)] = match.group(2)
    found = re.match(r"^`([0-9a-f]{64})`", out.get("Code fingerprint", ""))
    if found:
        out["fingerprint"] = found.group(1)
    command = re.match(r"^`([^`]+)`", out.get("Command", ""))
    if command:
        out["command"] = command.group(1)
    return out


def measured_on(stamp: Mapping[str, str], fingerprint: str, what: str) -> str:
    """ "on code fingerprint … (commit …) — the same code as <what>" (or not), for a file that
    names another results file's stamp (:func:`read_stamp`) next to its own ``fingerprint``."""
    recorded = stamp.get("fingerprint")
    if recorded is None:
        return f"on code whose fingerprint is {stamp.get('Code fingerprint', 'not recorded')}"
    if recorded == fingerprint:
        verdict = f"the same code as {what}"
    else:
        verdict = f"NOT the code of {what} (`{fingerprint[:12]}…`): it needs regenerating"
    commit = stamp.get("Commit", "unknown")
    return f"on code fingerprint `{recorded[:12]}…` (commit {commit}) — {verdict}"


if __name__ == "__main__":
    print(code_fingerprint())
