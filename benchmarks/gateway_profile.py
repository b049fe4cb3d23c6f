"""Where ``thoughtline serve`` spends its CPU on one request, per face (issue 27 item 1).

    .venv/bin/python -m benchmarks.gateway_profile [--faces chat messages responses]
        [--questions 10] [--requests 200] [--profile DIR [--callgrind]] [--rps SECONDS]
        [--server uvicorn|granian]

For each face (Chat on a DeepSeek emulator, Messages on the Anthropic one, Responses on the
OpenAI Responses one, each its own process) a real ``thoughtline serve`` is started, a tool-loop
history of ``4 x questions`` messages is built through it by a client that resends what it got
as its face's clients do (Chat: reasoning stripped; Messages: content blocks as received;
Responses: output items as received), then the next request is sent ``--requests`` times, whole
and then streamed, one at a time. Printed per face and mode: the serve process's user+system CPU
per request (``/proc``, independent of how busy the machine is). ``--profile DIR`` runs the gateway
under cProfile (``_profiled_serve``: only the measured requests, the store's worker thread
included) and writes ``DIR/<face>-<mode>.prof`` plus the top functions by own time.
``--profile DIR --callgrind`` counts instructions instead (valgrind, switched on only around the
measured requests, every thread): deterministic, the number to compare on a loaded machine.
``--rps`` adds whole requests/s with 4 clients for that many seconds (wall clock: noisy).
``--server granian`` serves the same app under granian (``_granian_serve``), for comparison.
Results and how to read them: docs/benchmarks.md, "Profile".
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from benchmarks.gateway_load import throughput, timed
from benchmarks.gateway_procs import announced, cpu_seconds

KEY_ENV = "TL_BENCH_UPSTREAM_KEY"
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench",
           "x-api-key": "sk-bench"}
CHAT_TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES_TOOLS = [{"name": "weather", "description": "Current weather for a city",
                   "input_schema": {"type": "object",
                                    "properties": {"city": {"type": "string"}}}}]
RESPONSES_TOOLS = [{"type": "function", "name": "weather",
                    "description": "Current weather for a city",
                    "parameters": {"type": "object",
                                   "properties": {"city": {"type": "string"}}}}]


@dataclass(frozen=True, kw_only=True, slots=True)
class Face:
    """One client face: its emulator, upstream, path, and how its client keeps a history."""

    name: str
    emulator: str
    provider: str
    model: str
    path: str
    #: (history, question text) -> history with the question appended
    ask: Callable[[list[Any], str], list[Any]]
    #: (history, stream) -> the request body
    body: Callable[[list[Any], bool], dict[str, Any]]
    #: (history, whole answer JSON) -> (history with the answer kept, it called a tool)
    keep: Callable[[list[Any], Any], tuple[list[Any], bool]]


def _chat_keep(history: list[Any], answer: Any) -> tuple[list[Any], bool]:
    message = answer["choices"][0]["message"]
    kept = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
    out = [*history, kept]
    calls = message.get("tool_calls") or ()
    out += [{"role": "tool", "tool_call_id": c["id"], "content": "Sunny, 21 °C"} for c in calls]
    return out, bool(calls)


def _messages_keep(history: list[Any], answer: Any) -> tuple[list[Any], bool]:
    content = answer["content"]
    out = [*history, {"role": "assistant", "content": content}]
    results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "Sunny, 21 °C"}
               for b in content if b["type"] == "tool_use"]
    if results:
        out.append({"role": "user", "content": results})
    return out, bool(results)


def _responses_keep(history: list[Any], answer: Any) -> tuple[list[Any], bool]:
    out = list(history)
    called = False
    for item in answer["output"]:
        item = {k: v for k, v in item.items() if v is not None}
        if item.get("type") == "reasoning":
            item["content"] = None
        out.append(item)
        if item.get("type") == "function_call":
            called = True
            out.append({"type": "function_call_output", "call_id": item["call_id"],
                        "output": "Sunny, 21 °C"})
    return out, called


FACES = {
    "chat": Face(
        name="chat", emulator="deepseek", provider="deepseek", model="deepseek-v4-pro",
        path="/v1/chat/completions",
        ask=lambda h, text: [*h, {"role": "user", "content": text}],
        body=lambda h, stream: {"model": "up/deepseek-v4-pro", "messages": h,
                                "tools": CHAT_TOOLS, **({"stream": True, "stream_options": {
                                    "include_usage": True}} if stream else {})},
        keep=_chat_keep),
    "messages": Face(
        name="messages", emulator="anthropic", provider="anthropic", model="claude-opus-5-5",
        path="/v1/messages",
        ask=lambda h, text: [*h, {"role": "user", "content": text}],
        body=lambda h, stream: {"model": "up/claude-opus-5-5", "max_tokens": 8192,
                                "thinking": {"type": "adaptive"},
                                "messages": h, "tools": MESSAGES_TOOLS,
                                **({"stream": True} if stream else {})},
        keep=_messages_keep),
    "responses": Face(
        name="responses", emulator="responses", provider="openai-responses", model="gpt-5.5",
        path="/v1/responses",
        ask=lambda h, text: [*h, {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": text}]}],
        body=lambda h, stream: {"model": "up/gpt-5.5", "input": h, "tools": RESPONSES_TOOLS,
                                "store": False, "reasoning": {"effort": "medium"},
                                "include": ["reasoning.encrypted_content"],
                                **({"stream": True} if stream else {})},
        keep=_responses_keep),
}


@contextmanager
def _process(argv: list[str], pattern: str, what: str,
             env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=env)
    try:
        yield announced(process, pattern, what).strip(), process.pid
    finally:
        process.terminate()
        process.wait(40)


@contextmanager
def _served(face: Face, home: Path, profile_out: Path | None,
            server: str = "uvicorn") -> Iterator[tuple[str, int]]:
    with _process([sys.executable, "-m", "thoughtline.testing", face.emulator],
                  "http://", "the emulator") as (upstream, _):
        config = home / "gateway.toml"
        config.write_text(
            f'[server]\nport = 0\naccess_log = "{home / "access.jsonl"}"\n\n[[upstream]]\n'
            f'name = "up"\nprovider = "{face.provider}"\nbase_url = "{upstream}"\n'
            f'api_key_env = "{KEY_ENV}"\n')
        profiled = profile_out is not None and profile_out.suffix == ".prof"
        lead = ["-m", "benchmarks._profiled_serve"] if profiled else \
            ["-c", "from thoughtline.cli.main import main; main()"]
        env = {**os.environ, KEY_ENV: "sk-bench"}
        if profiled:
            env["TL_PROFILE_OUT"] = str(profile_out)
        argv = [sys.executable, *lead, "--home", str(home), "serve", "--config", str(config)]
        if profile_out is not None and not profiled:  # instruction counts (callgrind)
            argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                    f"--callgrind-out-file={profile_out}", *argv]
        if server == "granian":  # the same app under granian, for the comparison only
            port = _free_port()
            argv = [str(Path(sys.executable).with_name("granian")), "--interface", "asgi",
                    "--factory", "--port", str(port), "--loop", "uvloop", "--no-ws",
                    "--log-level", "warning", "benchmarks._granian_serve:app"]
            env.update(TL_GRANIAN_CONFIG=str(config), TL_GRANIAN_HOME=str(home))
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, env=env)
            try:
                _wait_up(f"http://127.0.0.1:{port}/healthz")
                yield f"http://127.0.0.1:{port}", process.pid
            finally:
                process.terminate()
                process.wait(40)
            return
        with _process(argv, "listening on", "thoughtline serve", env) as (line, pid):
            yield line.rsplit(" ", 1)[-1], pid


def _wait_up(url: str) -> None:
    for _ in range(300):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every process under it (granian serves in child workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += cpu_seconds(current)
        todo += children.get(current, [])
    return total


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build(client: httpx.Client, url: str, face: Face, questions: int) -> list[Any]:
    history: list[Any] = []
    for index in range(questions):
        history = face.ask(history, f"Weather in city number {index}?")
        for _ in range(2):  # the tool call, then the answer
            reply = client.post(url, content=orjson.dumps(face.body(history, False)))
            if reply.status_code != 200:
                raise RuntimeError(f"{face.name}: {reply.status_code} {reply.text[:300]}")
            history, called = face.keep(history, reply.json())
            if not called:
                break
    return face.ask(history, "Thanks. One more?")


def _switch(profile_out: Path | None, pid: int, *, on: bool) -> None:
    """Start or stop collecting (cProfile by signal, callgrind by its control tool)."""
    if profile_out is None:
        return
    if profile_out.suffix == ".prof":
        os.kill(pid, signal.SIGUSR1 if on else signal.SIGUSR2)
        time.sleep(0.2 if on else 1.0)
        return
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)],
                   check=True, capture_output=True)


def _instructions(path: Path) -> int:
    """The instructions a finished callgrind run counted while collecting."""
    for _ in range(100):
        if path.exists() and "totals:" in path.read_text(errors="replace"):
            break
        time.sleep(0.2)
    for line in reversed(path.read_text(errors="replace").splitlines()):
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def top(path: Path, count: int = 25) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.sort_stats("tottime").print_stats(count)
    return out.getvalue()


def measure(face: Face, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for mode in ("whole", "stream"):
        with tempfile.TemporaryDirectory(prefix="tl-profile-") as tmp:
            suffix = "callgrind" if args.callgrind else "prof"
            profile_out = Path(args.profile) / f"{face.name}-{mode}.{suffix}" \
                if args.profile else None
            with _served(face, Path(tmp), profile_out, args.server) as (origin, pid), \
                    httpx.Client(headers=HEADERS, timeout=60) as client:
                url = origin + face.path
                history = build(client, url, face, args.questions)
                body = orjson.dumps(face.body(history, mode == "stream"))
                for _ in range(5):  # warm-up
                    timed(client, url, body, mode == "stream")
                _switch(profile_out, pid, on=True)
                before = tree_cpu(pid)
                for _ in range(args.requests):
                    timed(client, url, body, mode == "stream")
                cpu = (tree_cpu(pid) - before) / args.requests
                _switch(profile_out, pid, on=False)
                results[mode] = {"cpu_ms": cpu * 1e3, "body_bytes": len(body),
                                 "messages": len(history)}
                if args.rps and mode == "whole":
                    results["rps4"] = throughput(url, orjson.dumps(face.body(history, False)),
                                                 seconds=args.rps, clients=4, headers=HEADERS)
        if profile_out and profile_out.suffix == ".prof":
            print(f"--- {face.name} {mode}: top by own time ---")
            print(top(profile_out, args.top))
        elif profile_out:
            results[mode]["instructions"] = _instructions(profile_out) / args.requests
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.gateway_profile")
    parser.add_argument("--faces", nargs="+", default=list(FACES), choices=list(FACES))
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--profile", default="")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rps", type=float, default=0.0)
    parser.add_argument("--server", choices=("uvicorn", "granian"), default="uvicorn",
                        help="granian: the same app under granian (pip install granian)")
    parser.add_argument("--callgrind", action="store_true",
                        help="with --profile: instruction counts under valgrind, not cProfile")
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    for name in args.faces:
        r = measure(FACES[name], args)
        line = ", ".join(f"{mode} {r[mode]['cpu_ms']:.2f} ms CPU/request" for mode in
                         ("whole", "stream"))
        extra = f", 4 clients {r['rps4']:.0f} req/s" if "rps4" in r else ""
        if "instructions" in r["whole"]:
            extra += ", instructions/request " + ", ".join(
                f"{mode} {r[mode]['instructions'] / 1e6:.2f} M" for mode in ("whole", "stream"))
        print(f"{name}: {r['whole']['messages']} messages, {r['whole']['body_bytes']} B body: "
              f"{line}{extra}", flush=True)


if __name__ == "__main__":
    main()
