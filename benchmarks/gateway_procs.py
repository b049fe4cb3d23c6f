"""The processes the gateway benchmark talks to: the emulator, ``thoughtline serve`` and LiteLLM.

Owns starting and stopping them, reading their announced URL, and the serve process's CPU time
(``/proc``). Each runs in its own OS process, so its CPU never shares this process's interpreter
with the clients that time it. Knows nothing about what is sent to them (``gateway_faces``) or
how it is timed (``gateway_load``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from thoughtline.testing.personalities import PERSONALITIES

ROOT = Path(__file__).resolve().parents[1]  # the repository: ``-m benchmarks.…`` runs from it
KEY_ENV = "TL_BENCH_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-bench"


def announced(process: subprocess.Popen[str], pattern: str, what: str) -> str:
    """The first stdout/stderr line containing ``pattern`` (the rest is drained in a thread)."""
    stream = process.stdout if process.stdout is not None else process.stderr
    assert stream is not None
    deadline = time.monotonic() + 90
    for line in stream:
        if pattern in line:
            threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
            return line
        if time.monotonic() > deadline:
            break
    process.kill()
    raise RuntimeError(f"{what} did not start")


@dataclass(frozen=True, kw_only=True, slots=True)
class Emulator:
    url: str
    pid: int


@contextmanager
def emulator_process(kind: str = "deepseek", *options: str) -> Iterator[Emulator]:
    """An emulator in its own process: by default the DeepSeek-personality Chat one;
    ``options``: its command-line options (``--no-auth``, ``--chunk-delay S``). A Chat
    personality runs as ``benchmarks._emulator``, which keeps no record of the requests (no one
    here reads it, and long conversations' bodies made it gigabytes)."""
    module = "benchmarks._emulator" if kind in PERSONALITIES else "thoughtline.testing"
    process = subprocess.Popen([sys.executable, "-m", module, kind, *options],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=ROOT)
    try:
        yield Emulator(url=announced(process, "http://", "the emulator").strip(),
                       pid=process.pid)
    finally:
        stop(process, 10)


def stop(process: subprocess.Popen[str], seconds: float) -> None:
    """Terminate ``process``; kill it if it has not ended within ``seconds`` (an emulator that
    recorded gigabytes of long-conversation bodies took longer than that to exit on a loaded
    machine)."""
    process.terminate()
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(seconds)


@contextmanager
def emulator() -> Iterator[str]:
    """The emulator's base URL only."""
    with emulator_process() as running:
        yield running.url


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and every process under it (uvicorn's supervisor and its
    workers), as far as ``/proc`` lists them right now."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    children: list[int] = []
    for task in tasks:
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children)


@dataclass(frozen=True, kw_only=True, slots=True)
class Served:
    """A running gateway: its ``…/v1`` base URL and the process id (the one serving process
    with one worker; uvicorn's supervisor with several)."""

    url: str
    pid: int


@contextmanager
def gateway(upstream: str, home: Path, *, workers: int = 1, store: str = "",
            provider: str = "deepseek", name: str = "ds", upstream_extra: str = "",
            ) -> Iterator[Served]:
    """``thoughtline serve`` through the CLI, one upstream (by default DeepSeek, named ``ds``),
    access log to a file; ``store``: a store URL or SQLite path (default: the home's
    ``state.db``); ``upstream_extra``: more TOML lines of the ``[[upstream]]`` table."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "gateway.toml"
    stored = f'store = "{store}"\n' if store else ""
    config.write_text(
        f'[server]\nport = 0\n{stored}access_log = "{home / "access.jsonl"}"\n\n[[upstream]]\n'
        f'name = "{name}"\nprovider = "{provider}"\nbase_url = "{upstream}"\n'
        f'api_key_env = "{KEY_ENV}"\n{upstream_extra}')
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            "--home", str(home), "serve", "--config", str(config), "--workers", str(workers)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={**os.environ, KEY_ENV: UPSTREAM_KEY})
    try:
        line = announced(process, "listening on", "thoughtline serve")
        url = line.split("listening on ", 1)[1].split()[0].strip()
        yield Served(url=url + "/v1", pid=process.pid)
    finally:
        process.terminate()
        process.wait(40)


@contextmanager
def passthrough(upstream: str) -> Iterator[Served]:
    """The bare pass-through proxy (``_passthrough``) in front of ``upstream``, its own process."""
    process = subprocess.Popen([sys.executable, "-m", "benchmarks._passthrough", upstream],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=ROOT)
    try:
        line = announced(process, "listening on", "the pass-through proxy")
        yield Served(url=line.split("listening on ", 1)[1].strip() + "/v1", pid=process.pid)
    finally:
        process.terminate()
        process.wait(40)


# --- LiteLLM's proxy, when installed --------------------------------------------------------------

#: What each client API is routed to in LiteLLM's ``model_list``: the same emulator every time.
#: Chat and Messages go to ``openai/`` (Messages translated to Chat Completions: LiteLLM would
#: otherwise send an ``openai/`` model's Messages request to the upstream's Responses API, which
#: a DeepSeek upstream has not); Responses goes to LiteLLM's ``deepseek/`` provider, whose
#: Responses requests LiteLLM bridges to Chat Completions (its ``openai/`` would call
#: ``/responses`` upstream).
LITELLM_MODELS = {"chat": ("ds/deepseek-v4-pro", "openai/deepseek-v4-pro"),
                  "messages": ("ds/deepseek-v4-pro", "openai/deepseek-v4-pro"),
                  "responses": ("dsr/deepseek-v4-pro", "deepseek/deepseek-v4-pro")}


#: The ``litellm`` command to start, when it is installed elsewhere than this environment (its
#: pins conflict with the project's: a venv of its own, ``pip install 'litellm[proxy]'``).
LITELLM_ENV = "TL_BENCH_LITELLM"


def litellm_binary() -> str | None:
    """``$TL_BENCH_LITELLM``, else ``litellm`` on the PATH or beside this interpreter."""
    binary = (os.environ.get(LITELLM_ENV) or shutil.which("litellm")
              or str(Path(sys.executable).with_name("litellm")))
    return binary if Path(binary).exists() else None


def litellm_version(binary: str) -> str:
    """The version of the LiteLLM that ``binary`` runs (its own environment's), or "?"."""
    python = Path(binary).with_name("python")
    try:
        done = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                               "print(m.version('litellm'))"],
                              capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return "?"
    return done.stdout.strip() or "?"


def litellm_config(upstream: str) -> str:
    """LiteLLM's proxy config: one ``model_list`` entry per distinct routing above."""
    entries = dict(LITELLM_MODELS.values())
    return "model_list:\n" + "".join(
        f"  - model_name: {name}\n    litellm_params:\n      model: {model}\n"
        f"      api_base: {upstream}\n      api_key: {UPSTREAM_KEY}\n"
        for name, model in entries.items())


@dataclass(frozen=True, kw_only=True, slots=True)
class Proxy:
    url: str
    key: str
    pid: int


@contextmanager
def litellm(binary: str, upstream: str, home: Path) -> Iterator[Proxy]:
    """LiteLLM's proxy in front of ``upstream``; raises RuntimeError when it does not start."""
    config = home / "litellm.yaml"
    config.write_text(litellm_config(upstream))
    port = free_port()
    log = home / "litellm.log"
    # Newer LiteLLM proxies refuse to start without a master key; the clients then send it.
    key = "sk-bench-" + os.urandom(16).hex()
    env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_MASTER_KEY": key,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # offline: no price-map download
           "LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES": "True"}
    process = subprocess.Popen([binary, "--config", str(config), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env)
    try:
        wait_ready(lambda: httpx.get(f"http://127.0.0.1:{port}/health/liveliness", timeout=2),
                   process, log)
        yield Proxy(url=f"http://127.0.0.1:{port}/v1", key=key, pid=process.pid)
    finally:
        process.terminate()
        process.wait(30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(probe: Callable[[], Any], process: subprocess.Popen[bytes], log: Path,
               seconds: float = 150) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            lines = [ln for ln in log.read_text("utf-8", "replace").splitlines() if ln.strip()]
            last = lines[-1][:200] if lines else "no output"
            raise RuntimeError(f"LiteLLM's proxy exited at start (it needs 'litellm[proxy]', "
                               f"the bench extra); its last line: {last}")
        try:
            if probe().status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError("LiteLLM's proxy did not start")
