"""Concurrency and liveness: many conversations at once lose no turn, concurrent requests on one
conversation never interleave, the event loop never touches the store, a client that leaves
— mid-stream or while waiting for a whole answer — cancels the upstream request."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import orjson
from gateway_support import MODEL, SESSION_HEADER, TOOLS, running_gateway, tool_output
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.requestlog import RequestLog
from thoughtline.store import SQLiteStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer

CONVERSATIONS = 50


async def _conversation(client: Any, index: int) -> tuple[str, str, list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Weather in city {index}?"}]
    raw = await client.chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=TOOLS)
    message = raw.parse().choices[0].message
    call = message.tool_calls[0]
    shown = message.model_extra["reasoning_content"]
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": call.id, "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments}}]})
    messages.append({"role": "tool", "tool_call_id": call.id,
                     "content": tool_output(call.function.arguments)})
    second = await client.chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=TOOLS, stream=False)
    final = second.parse().choices[0]
    assert final.finish_reason == "stop"
    messages.append({"role": "assistant", "content": final.message.content})
    return raw.headers[SESSION_HEADER], shown, messages


def test_fifty_concurrent_conversations_lose_no_turn(deepseek: ChatEmulator,
                                                     tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        async def main() -> list[tuple[str, str, list[dict[str, Any]]]]:
            client = gw.async_client(timeout=120)
            try:
                return await asyncio.gather(*(_conversation(client, i)
                                              for i in range(CONVERSATIONS)))
            finally:
                await client.close()

        results = asyncio.run(main())
        sessions = {session for session, _, _ in results}
        assert len(sessions) == CONVERSATIONS
        for session, shown, _ in results:
            history = [m.message for m in gw.store.load_history(session).messages]
            assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
            assert history[1].reasoning_text() == shown
    assert len(deepseek.received) == 2 * CONVERSATIONS
    assert {r.status for r in deepseek.received} == {200}
    second_requests = [r.raw for r in deepseek.received if b'"role":"tool"' in r.raw]
    assert len(second_requests) == CONVERSATIONS
    for _, shown, _ in results:  # each conversation's own reasoning, in exactly one request
        assert sum(orjson.dumps(shown) in raw for raw in second_requests) == 1


def test_concurrent_requests_on_one_conversation_never_interleave(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        async def main() -> str:
            client = gw.async_client(timeout=120)
            try:
                session, _, messages = await _conversation(client, 0)
                # Ten clients resend the same history at once (e.g. retries of one step).
                await asyncio.gather(*(client.chat.completions.create(
                    model=MODEL, messages=[*messages, {"role": "user", "content": f"n{i}"}],
                    tools=TOOLS, extra_headers={SESSION_HEADER: session}) for i in range(10)))
                return session
            finally:
                await client.close()

        session = asyncio.run(main())
        # Each answer was written against the same four turns: one goes on after them in the
        # session, the others (the head had moved) on branches forking right after them, as
        # concurrent ``chat -c`` do. No history holds a turn its model did not see.
        lineage = [s.id for s in gw.store.list_sessions()
                   if s.id == session or s.parent_id == session]
        histories = [[m.message for m in gw.store.load_history(sid).messages] for sid in lineage]
    assert len(histories) == 10
    questions = []
    for history in histories:
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant",
                                             "user", "assistant"]
        questions.append(history[4].text)
    assert sorted(questions) == sorted(f"n{i}" for i in range(10))


def test_the_event_loop_thread_never_calls_the_store(deepseek: ChatEmulator,
                                                     tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        store = gw.gateway.store.store
        callers: list[str] = []
        originals = {}
        for name in ("rehydrate", "append_indexed", "get_session", "create_session",
                     "verdicts", "update_model_config", "record_verdict"):
            originals[name] = getattr(store, name)

            def spy(*args: Any, _name: str = name, **kwargs: Any) -> Any:
                callers.append(threading.current_thread().name)
                return originals[_name](*args, **kwargs)

            setattr(store, name, spy)
        asyncio.run(_single(gw))
        asyncio.run(_single(gw, stream=True))
    assert callers  # the store was used ...
    assert "gateway" not in callers  # ... never from the thread running the event loop


async def _single(gw: Any, *, stream: bool = False) -> None:
    client = gw.async_client()
    try:
        if stream:
            async for _ in await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True):
                pass
        else:
            await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}])
    finally:
        await client.close()


def test_a_client_that_leaves_mid_stream_cancels_the_upstream_request(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    deepseek.chunk_delay = 0.2  # about 20 chunks: several seconds of answer
    with running_gateway(deepseek, tmp_path) as gw:
        stream = gw.client().chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "a long story please"}],
            stream=True)
        next(iter(stream))
        stream.close()
        log = RequestLog(tmp_path / "logs")
        deadline = time.monotonic() + 30
        records: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not records:
            records = list(log.read())
            time.sleep(0.05)
        history = gw.store.list_sessions()
    assert [r["outcome"] for r in records] == ["cancelled"]
    assert history == []  # nothing half-answered was stored, no session either (issue 46)


def test_a_client_that_gives_up_on_a_whole_answer_cancels_the_upstream_request(
        tmp_path: Path) -> None:
    arrived = threading.Event()

    async def slow(request: Any) -> JSONResponse:  # an upstream that takes its time
        arrived.set()
        await asyncio.sleep(60)
        return JSONResponse({})

    upstream = LoopbackServer(Starlette(routes=[Route("/v1/chat/completions", slow,
                                                      methods=["POST"])])).start()
    config = parse(tomllib.loads(
        f'[[upstream]]\nname = "ds"\nprovider = "custom"\n'
        f'base_url = "{upstream.origin}/v1"\napi_key_env = "TL_GATEWAY_TEST_UPSTREAM_KEY"\n'))
    store = SQLiteStore(tmp_path / "state.db")
    gateway = Gateway(config, store, environ={}, request_log=RequestLog(tmp_path / "logs"))
    server = LoopbackServer(create_app(gateway)).start()
    try:
        body = orjson.dumps({"model": "ds/m", "messages": [{"role": "user", "content": "hi"}]})
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
            raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n"
                        b"content-type: application/json\r\ncontent-length: "
                        + str(len(body)).encode() + b"\r\n\r\n" + body)
            assert arrived.wait(30)
        # The client hung up while the upstream was still thinking.
        log = RequestLog(tmp_path / "logs")
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not records:
            records = list(log.read())
            time.sleep(0.05)
    finally:
        server.stop()
        upstream.stop()
        store.close()
    assert arrived.is_set()
    assert [r["outcome"] for r in records] == ["cancelled"]
