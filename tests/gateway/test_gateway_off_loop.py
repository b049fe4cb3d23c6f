"""A large request's CPU work runs off the event loop, a small one's on it, and the upstream gets
the same bytes either way (issue 45 item 2: another tenant's 8 MB body held ``/healthz`` for
2.6 s, a 200,000-message one for 30 s). The gateway warms at start, so its first request loads
nothing (item 3). Where the work ran is observed, not timed: a worker thread has no running
event loop."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_support import MODEL, running_gateway

from thoughtline.gateway import app as app_module
from thoughtline.gateway import offload, rehydrate
from thoughtline.testing import ChatEmulator
from thoughtline.turn import TurnEngine


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _spied(seen: dict[str, list[bool]], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.setdefault(name, []).append(_on_loop())
        return fn(*args, **kwargs)
    return spy


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """Where (on the loop: True) each heavy step ran, per request."""
    seen: dict[str, list[bool]] = {}
    monkeypatch.setattr(app_module, "client_request",
                        _spied(seen, "parse", app_module.client_request))
    monkeypatch.setattr(rehydrate, "chain", _spied(seen, "match", rehydrate.chain))
    build = TurnEngine.build
    monkeypatch.setattr(TurnEngine, "build", staticmethod(_spied(seen, "build", build)))
    return seen


def _ask(deepseek: ChatEmulator, tmp_path: Path, text: str) -> bytes:
    with running_gateway(deepseek, tmp_path) as gw:
        answer = gw.client().chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": text}])
    assert answer.choices[0].message.content
    return deepseek.received[-1].body


def test_a_large_body_is_parsed_matched_and_built_off_the_loop(
        deepseek: ChatEmulator, tmp_path: Path, seen: dict[str, list[bool]]) -> None:
    _ask(deepseek, tmp_path, "x" * offload.HEAVY_BYTES)
    assert seen == {"parse": [False], "match": [False], "build": [False]}


def test_a_small_body_is_worked_on_the_loop(
        deepseek: ChatEmulator, tmp_path: Path, seen: dict[str, list[bool]]) -> None:
    _ask(deepseek, tmp_path, "a small question")
    assert seen == {"parse": [True], "match": [True], "build": [True]}


def test_the_upstream_gets_the_same_bytes_on_or_off_the_loop(
        deepseek: ChatEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inline = _ask(deepseek, tmp_path / "inline", "the same question")
    monkeypatch.setattr(app_module, "HEAVY_BYTES", 0)  # every request is heavy
    offloaded = _ask(deepseek, tmp_path / "offloaded", "the same question")
    assert offloaded == inline


def test_a_warmed_gateway_loads_nothing_on_its_first_request(tmp_path: Path) -> None:
    """In a fresh interpreter (this one has loaded everything already)."""
    script = textwrap.dedent(f"""
        import asyncio, sys, tomllib
        from pathlib import Path
        import httpx
        from thoughtline.gateway.app import Gateway, create_app
        from thoughtline.gateway.config import parse
        from thoughtline.store import SQLiteStore
        from thoughtline.testing import ChatEmulator

        async def main(base):
            config = parse(tomllib.loads(
                '[[upstream]]\\nname = "ds"\\nprovider = "deepseek"\\n'
                f'base_url = "{{base}}"\\napi_key_env = "TL_WARM_KEY"\\n'))
            gateway = Gateway(config, SQLiteStore(Path({str(tmp_path)!r}) / "state.db"),
                              environ={{"TL_WARM_KEY": "sk-warm"}})
            await gateway.warm()
            before = set(sys.modules)
            transport = httpx.ASGITransport(app=create_app(gateway))
            async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
                answer = await client.post("/v1/chat/completions", json={{
                    "model": "ds/deepseek-v4-pro",
                    "messages": [{{"role": "user", "content": "hi"}}]}})
            assert answer.status_code == 200, answer.text
            print(sorted(set(sys.modules) - before))

        with ChatEmulator("deepseek") as emu:
            asyncio.run(main(emu.base_url))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"TL_WARM_KEY": "sk-warm", "PATH": "/usr/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_more_messages_than_max_items_is_a_400_naming_the_limit(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    import openai

    with running_gateway(deepseek, tmp_path, extra_server="max_items = 3\n") as gw:
        client = gw.client()
        three = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                 {"role": "user", "content": "c"}]
        assert client.chat.completions.create(model=MODEL, messages=three).choices
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model=MODEL, messages=[
                *three, {"role": "assistant", "content": "d"}, {"role": "user", "content": "e"}])
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "too_many_items"
    assert "5 messages" in error["message"] and "[server] max_items" in error["message"]
    assert len(deepseek.received) == 1  # the refused one was never sent


# --- the overhead header (issue 45 item 4) ------------------------------------------------------

def _overhead(headers: Any) -> float:
    value = float(headers["x-thoughtline-overhead-ms"])
    assert value >= 0
    return value


def test_the_overhead_header_leaves_out_a_retry_wait_on_the_upstream(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    """A 429 asking for one second: the gateway waited it on the upstream, not on itself."""
    import time

    deepseek.fail_next(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
    with running_gateway(deepseek, tmp_path) as gw:
        started = time.monotonic()
        raw = gw.client().chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])
        elapsed_ms = (time.monotonic() - started) * 1000
    assert len(deepseek.received) == 2  # the 429, then the answer
    assert _overhead(raw.headers) <= elapsed_ms - 1000


def test_a_stream_says_its_overhead_before_its_first_byte(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    """The headers go with the first frame; the upstream's pause before its first chunk is not
    the gateway's."""
    import time

    import httpx

    deepseek.chunk_delay = 0.4
    with running_gateway(deepseek, tmp_path) as gw, httpx.Client(timeout=30) as client:
        started = time.monotonic()
        with client.stream("POST", gw.base_url + "/chat/completions", json={
                "model": MODEL, "stream": True,
                "messages": [{"role": "user", "content": "hi"}]}) as answer:
            to_headers_ms = (time.monotonic() - started) * 1000
            overhead = _overhead(answer.headers)
            assert b"[DONE]" in answer.read()
    assert overhead <= to_headers_ms - 400


def test_an_error_answer_says_its_overhead_too(deepseek: ChatEmulator, tmp_path: Path) -> None:
    import httpx

    with running_gateway(deepseek, tmp_path) as gw:
        refused = httpx.post(gw.base_url + "/chat/completions", content=b"{not json")
    assert refused.status_code == 400
    _overhead(refused.headers)


def test_each_face_parses_its_own_smallest_request() -> None:
    """What warming parses comes from each face's codec; a face that refused its own would be
    skipped at start (and its first request would pay the cold cost again)."""
    import orjson

    from thoughtline.gateway.faces import FACES
    from thoughtline.gateway.request import client_request

    for face in FACES:
        parsed = client_request(orjson.dumps(face.smallest_request("m")), face)
        assert parsed.model == "m" and [m.role for m in parsed.messages] == ["user"]
