"""``thoughtline serve --workers 2`` when processes die: a worker killed mid-request leaves no
request counted in flight, and workers whose supervisor is killed stop serving the port and
exit. Loopback only; every wait is bounded; kills are SIGKILL (nothing gets to clean up)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from contextlib import suppress
from pathlib import Path

import httpx
from gateway_support import UPSTREAM_KEY, UPSTREAM_KEY_ENV, gateway_toml, start_serve
from prometheus_client.parser import text_string_to_metric_families
from slow_upstream import SlowUpstream, wait_for

TOKEN = "tenant-token-worker-death-7d2b"
IN_FLIGHT = "thoughtline_gateway_in_flight_requests"
BOUND_S = 20  # every wait for a process to notice a death


def _env(tmp_path: Path) -> dict[str, str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN, "TMPDIR": str(temp)}


def _in_flight(origin: str) -> float | None:
    """The requests in flight over all workers (None while no worker answers the scrape)."""
    try:
        scraped = httpx.get(origin + "/metrics", headers={"authorization": f"Bearer {TOKEN}"},
                            timeout=10)
    except httpx.HTTPError:  # a replacement worker not yet serving
        return None
    return sum(s.value for f in text_string_to_metric_families(scraped.text)
               for s in f.samples if s.name == IN_FLIGHT)


def test_a_worker_killed_mid_request_leaves_nothing_in_flight(tmp_path: Path) -> None:
    with SlowUpstream(delay=None) as hung:  # never answers: the request stays in flight
        config = tmp_path / "gateway.toml"
        config.write_text(gateway_toml(hung, provider="custom"))
        env = _env(tmp_path)
        serve = start_serve(config, tmp_path / "home", env, "--workers", "2")
        origin = serve.base_url.removesuffix("/v1")
        asked = threading.Thread(target=_ask_and_lose, args=(serve.base_url,), daemon=True)
        try:
            asked.start()
            assert wait_for(lambda: _in_flight(origin) == 1, BOUND_S)
            (metrics_dir,) = Path(env["TMPDIR"]).iterdir()
            # Only workers write live gauges; the one holding the request is among them.
            workers = {int(m.group(1)) for p in metrics_dir.iterdir()
                       if (m := re.fullmatch(r"gauge_livesum_(\d+)\.db", p.name))}
            assert workers
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            cleared = wait_for(lambda: _in_flight(origin) == 0, BOUND_S)
            asked.join(BOUND_S)
        finally:
            code = serve.terminate()
    assert cleared, "a killed worker's request is still counted in flight"
    assert code == 0


def _ask_and_lose(base_url: str) -> None:
    with suppress(httpx.HTTPError):  # its worker is killed: the connection drops
        httpx.post(base_url + "/chat/completions", timeout=BOUND_S,
                   headers={"authorization": f"Bearer {TOKEN}"},
                   json={"model": "ds/deepseek-v4-pro",
                         "messages": [{"role": "user", "content": "Hi"}]})


def test_workers_stop_serving_and_exit_when_their_supervisor_is_killed(
        tmp_path: Path) -> None:
    with SlowUpstream(delay=0) as upstream:
        config = tmp_path / "gateway.toml"
        config.write_text(gateway_toml(upstream, provider="custom"))
        argv = [sys.executable, "-c", "from thoughtline.cli.main import main; main()",
                "--home", str(tmp_path / "home"), "serve", "--config", str(config),
                "--port", "0", "--workers", "2"]
        # A session of its own: the workers share its process group, so the test can tell
        # when they are all gone (and clean up if they are not).
        supervisor = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True,
                                      env={**os.environ, **_env(tmp_path)},
                                      start_new_session=True)
        try:
            port = _announced_port(supervisor)
            assert wait_for(lambda: _accepts(port), BOUND_S)  # (a loaded machine: not at once)
            supervisor.kill()
            supervisor.wait(BOUND_S)
            stopped = wait_for(lambda: not _accepts(port), BOUND_S)
            exited = wait_for(lambda: not _group_alive(supervisor.pid), BOUND_S)
        finally:
            with suppress(ProcessLookupError):
                os.killpg(supervisor.pid, signal.SIGKILL)  # orphans, if the fix is missing
            supervisor.wait(BOUND_S)
    assert stopped, "the workers went on serving the port after their supervisor died"
    assert exited, "worker processes outlived their supervisor"


def _announced_port(process: subprocess.Popen[str]) -> int:
    assert process.stdout is not None
    for line in process.stdout:  # ends when the process does: bounded by its own start
        if match := re.search(r"listening on http://127\.0\.0\.1:(\d+) \(2 workers\)", line):
            return int(match.group(1))
    raise AssertionError("thoughtline serve --workers 2 did not start")


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
