"""Scenario 6 — gateway: what ``thoughtline serve`` adds to a request, and how many it serves.

A DeepSeek-personality emulator and a real ``thoughtline serve`` run as their own processes (the
emulator with ``python -m thoughtline.testing``, the gateway through the CLI, access log to a
file). A 40-message tool-loop history (10 questions, each: user, assistant tool call, tool result,
assistant answer) is first built *through the gateway* by a client that strips reasoning, so every
measured request makes the gateway look up and rehydrate 20 assistant turns, store the answer with
its index rows (SQLite, ``synchronous=FULL``) and re-encode the history.

Added latency: the same next request, sent to the gateway (stripped history) and straight to the
emulator (the history with its reasoning put back, as the gateway sends it), interleaved call by
call on keep-alive connections; p50 and p99 of the difference of the two distributions' quantiles,
whole and streamed (a streamed request is timed to its last byte). Requests per second: four
clients in parallel for a fixed time, through the gateway and (floor) straight to the emulator.
The serve process's own CPU time per request (from ``/proc``) is reported too: on a shared,
overloaded machine wall-clock latency is mostly waiting for a CPU, CPU time is not.
LiteLLM's proxy is measured the same way beside it only when LiteLLM is installed
(``pip install 'thoughtline[bench]'``); the target is the issue's: at most a quarter of what
LiteLLM adds at p50 (15 ms measured in issue 15 when it is not installed here).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from benchmarks.measure import Row, at_most

SCENARIO = "gateway"
QUESTIONS = 10  # x 4 messages = a 40-turn history
LITELLM_P50_S = 0.015  # issue 15: LiteLLM's proxy adds 15–23 ms p50 on this machine
KEY_ENV = "TL_BENCH_UPSTREAM_KEY"
TOOLS = [{"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
RC = "reasoning_content"  # the client wire's field (the gateway returns it)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sizes:
    reps: int
    rps_seconds: float
    clients: int = 4


QUICK = Sizes(reps=15, rps_seconds=0.5)
FULL = Sizes(reps=300, rps_seconds=5.0)


# --- processes ----------------------------------------------------------------------------------


def _announced(process: subprocess.Popen[str], pattern: str, what: str) -> str:
    """The first stdout/stderr line containing ``pattern`` (the rest is drained in a thread)."""
    stream = process.stdout if process.stdout is not None else process.stderr
    assert stream is not None
    deadline = time.monotonic() + 60
    for line in stream:
        if pattern in line:
            threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()
            return line
        if time.monotonic() > deadline:
            break
    process.kill()
    raise RuntimeError(f"{what} did not start")


@contextmanager
def _emulator() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, "-m", "thoughtline.testing", "deepseek"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield _announced(process, "http://", "the emulator").strip()
    finally:
        process.terminate()
        process.wait(10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, kw_only=True, slots=True)
class Served:
    url: str
    pid: int


@contextmanager
def _gateway(upstream: str, home: Path) -> Iterator[Served]:
    config = home / "gateway.toml"
    config.write_text(
        f'[server]\nport = 0\naccess_log = "{home / "access.jsonl"}"\n\n[[upstream]]\n'
        f'name = "ds"\nprovider = "deepseek"\nbase_url = "{upstream}"\n'
        f'api_key_env = "{KEY_ENV}"\n')
    argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
            "--home", str(home), "serve", "--config", str(config)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={**os.environ, KEY_ENV: "sk-bench"})
    try:
        line = _announced(process, "listening on", "thoughtline serve")
        yield Served(url=line.rsplit(" ", 1)[-1].strip() + "/v1", pid=process.pid)
    finally:
        process.terminate()
        process.wait(40)


# --- the conversation ---------------------------------------------------------------------------


def build_history(client: httpx.Client, gateway: str) -> tuple[list[Any], list[Any]]:
    """Run the tool loop through the gateway: (stripped history, history with reasoning)."""
    stripped: list[dict[str, Any]] = []
    full: list[dict[str, Any]] = []
    for index in range(QUESTIONS):
        question = {"role": "user", "content": f"Weather in city number {index}?"}
        stripped.append(question)
        full.append(question)
        for _ in range(2):  # the tool call, then the answer
            body = {"model": "ds/deepseek-v4-pro", "messages": stripped, "tools": TOOLS}
            response = client.post(gateway + "/chat/completions", content=orjson.dumps(body))
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
            kept = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
            stripped.append(kept)
            full.append({**kept, RC: message.get(RC, "")})
            for call in message.get("tool_calls") or ():
                result = {"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 °C"}
                stripped.append(result)
                full.append(result)
    return stripped, full


def _body(history: list[Any], *, stream: bool, model: str) -> bytes:
    asked = [*history, {"role": "user", "content": "Thanks. One more?"}]
    body: dict[str, Any] = {"model": model, "messages": asked, "tools": TOOLS}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return orjson.dumps(body)


def _timed(client: httpx.Client, url: str, body: bytes, stream: bool) -> float:
    start = time.perf_counter()
    if stream:
        with client.stream("POST", url, content=body) as response:
            response.raise_for_status()
            for _ in response.iter_bytes():
                pass
    else:
        client.post(url, content=body).raise_for_status()
    return time.perf_counter() - start


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(client: httpx.Client, gateway: str, upstream: str, stripped: list[Any],
            full: list[Any], *, stream: bool, reps: int) -> dict[str, float]:
    ours_body = _body(stripped, stream=stream, model="ds/deepseek-v4-pro")
    direct_body = _body(full, stream=stream, model="deepseek-v4-pro")
    ours: list[float] = []
    direct: list[float] = []
    for _ in range(3):  # warm-up: connections, caches, the gateway's first store writes
        _timed(client, gateway + "/chat/completions", ours_body, stream)
        _timed(client, upstream + "/chat/completions", direct_body, stream)
    for _ in range(reps):
        ours.append(_timed(client, gateway + "/chat/completions", ours_body, stream))
        direct.append(_timed(client, upstream + "/chat/completions", direct_body, stream))
    return {"ours_p50": statistics.median(ours), "direct_p50": statistics.median(direct),
            "ours_p99": _quantile(ours, 0.99), "direct_p99": _quantile(direct, 0.99)}


def throughput(url: str, body: bytes, *, seconds: float, clients: int,
               headers: dict[str, str]) -> float:
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def worker(slot: int) -> None:
        with httpx.Client(headers=headers, timeout=60) as client:
            while time.perf_counter() < stop:
                client.post(url, content=body).raise_for_status()
                counts[slot] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


# --- rows ---------------------------------------------------------------------------------------


def _rows(numbers: dict[str, Any], peer: dict[str, Any] | None) -> list[Row]:
    size = f"{len(numbers['history'])} turns"
    target_s = (peer["whole"]["added_p50"] if peer else LITELLM_P50_S) / 4
    source = "LiteLLM measured here" if peer else "LiteLLM's 15 ms p50 from issue 15"
    rows = []
    for mode in ("whole", "stream"):
        m = numbers[mode]
        added50 = m["ours_p50"] - m["direct_p50"]
        added99 = m["ours_p99"] - m["direct_p99"]
        peer_added = peer[mode]["added_p50"] if peer else None
        rows.append(Row(scenario=SCENARIO, case=f"added latency p50, {mode}", size=size,
                        ours=added50, floor=peer_added,
                        floor_kind="LiteLLM proxy's added latency" if peer else "",
                        target=f"≤ {target_s * 1e3:.2f} ms (¼ of {source})",
                        ok=at_most(added50, target_s), reps=numbers["reps"],
                        note=f"direct emulator p50 {m['direct_p50'] * 1e3:.2f} ms, via gateway "
                             f"{m['ours_p50'] * 1e3:.2f} ms", extra=m))
        rows.append(Row(scenario=SCENARIO, case=f"added latency p99, {mode}", size=size,
                        ours=added99, reps=numbers["reps"],
                        note=f"direct p99 {m['direct_p99'] * 1e3:.2f} ms, via gateway "
                             f"{m['ours_p99'] * 1e3:.2f} ms"))
    for mode in ("whole", "stream"):
        rows.append(Row(scenario=SCENARIO, case=f"gateway process CPU per request, {mode}",
                        size=size, ours=numbers[mode]["cpu_per_request"], reps=numbers["reps"],
                        note="user+system CPU of the serve process (/proc), independent of how "
                             "busy the machine is; wall-clock rows are not"))
    rows.append(Row(scenario=SCENARIO, case=f"requests per second, {numbers['clients']} clients",
                    size=size, ours=numbers["rps"], floor=numbers["direct_rps"],
                    floor_kind="emulator called directly", unit="req/s",
                    note="whole answers; each request rehydrates 20 turns and stores one"))
    if peer is None:
        rows.append(Row(scenario=SCENARIO, case="LiteLLM proxy side by side", size=size,
                        ours=None, note="LiteLLM not installed (pip install 'thoughtline[bench]')"))
    return rows


def run(quick: bool) -> list[Row]:
    sizes = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="tl-bench-gateway-") as tmp, _emulator() as upstream, \
            _gateway(upstream, Path(tmp)) as served:
        gateway = served.url
        headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
        with httpx.Client(headers=headers, timeout=60) as client:
            stripped, full = build_history(client, gateway)
            numbers: dict[str, Any] = {"history": stripped, "reps": sizes.reps,
                                       "clients": sizes.clients}
            for mode in ("whole", "stream"):
                before = cpu_seconds(served.pid)
                numbers[mode] = latency(client, gateway, upstream, stripped, full,
                                        stream=mode == "stream", reps=sizes.reps)
                # Per request (warm-up included in both counts): independent of machine load.
                numbers[mode]["cpu_per_request"] = (cpu_seconds(served.pid) - before) / (
                    sizes.reps + 3)
        numbers["rps"] = throughput(gateway + "/chat/completions",
                                    _body(stripped, stream=False, model="ds/deepseek-v4-pro"),
                                    seconds=sizes.rps_seconds, clients=sizes.clients,
                                    headers=headers)
        numbers["direct_rps"] = throughput(upstream + "/chat/completions",
                                           _body(full, stream=False, model="deepseek-v4-pro"),
                                           seconds=sizes.rps_seconds, clients=sizes.clients,
                                           headers=headers)
        peer = _litellm(upstream, Path(tmp), full, sizes)
    rows = _rows(numbers, peer if isinstance(peer, dict) else None)
    if isinstance(peer, str):
        rows[-1].note = peer
    return rows


# --- LiteLLM, when installed ----------------------------------------------------------------------


def _litellm(upstream: str, home: Path, full: list[Any], sizes: Sizes,
             ) -> dict[str, Any] | str | None:
    """LiteLLM's proxy in front of the same emulator, timed like ours.

    None: not installed; a string: why it could not be measured.
    """
    binary = shutil.which("litellm") or str(Path(sys.executable).with_name("litellm"))
    if not Path(binary).exists():
        return None
    try:
        return _measure_litellm(binary, upstream, home, full, sizes)
    except (RuntimeError, httpx.HTTPError) as exc:
        return f"LiteLLM installed but not measured: {exc}"


def _measure_litellm(binary: str, upstream: str, home: Path, full: list[Any],
                     sizes: Sizes) -> dict[str, Any]:
    config = home / "litellm.yaml"
    config.write_text("model_list:\n  - model_name: ds/deepseek-v4-pro\n    litellm_params:\n"
                      f"      model: openai/deepseek-v4-pro\n      api_base: {upstream}\n"
                      "      api_key: sk-bench\n")
    port = _free_port()
    log = home / "litellm.log"
    # Newer LiteLLM proxies refuse to start without a master key; the clients then send it.
    key = "sk-bench-" + os.urandom(16).hex()
    process = subprocess.Popen([binary, "--config", str(config), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=log.open("wb"),
                               env={**os.environ, "LITELLM_LOG": "ERROR",
                                    "LITELLM_MASTER_KEY": key})
    proxy = f"http://127.0.0.1:{port}/v1"
    try:
        _wait(lambda: httpx.get(f"http://127.0.0.1:{port}/health/liveliness", timeout=2),
              process, log)
        headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
        with httpx.Client(headers=headers, timeout=60) as client:
            out: dict[str, Any] = {}
            for mode in ("whole", "stream"):
                # LiteLLM does not rehydrate: it gets the history with reasoning kept.
                m = latency(client, proxy, upstream, full, full,
                            stream=mode == "stream", reps=sizes.reps)
                out[mode] = {**m, "added_p50": m["ours_p50"] - m["direct_p50"]}
        return out
    finally:
        process.terminate()
        process.wait(30)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(probe: Callable[[], Any], process: subprocess.Popen[bytes], log: Path,
          seconds: float = 90) -> None:
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
