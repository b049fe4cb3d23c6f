"""The gateway does not care which API an upstream speaks: the test-only "stub" API (issue 9's
codec and emulator, registered at run time) sits behind it, and the opaque sealed value of each
answer — never shown to the Chat client — goes back verbatim on the next request."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import openai
import stub_api

from thoughtline.codecs import registry
from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.testing.loopback import LoopbackServer


@pytest.fixture()
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[stub_api.StubEmulator]:
    monkeypatch.setenv("STUB_KEY", "stub-secret-key")
    registry.register("stub", stub_api.CODEC)
    try:
        with stub_api.StubEmulator() as emulator:
            yield emulator
    finally:
        registry.unregister("stub")


@pytest.mark.parametrize("stream", [False, True])
def test_a_non_chat_upstream_gets_its_opaque_values_back(stub: stub_api.StubEmulator,
                                                         tmp_path: Path, stream: bool) -> None:
    config = parse(tomllib.loads(
        f'[[upstream]]\nname = "st"\nprovider = "stub-provider"\napi = "stub"\n'
        f'base_url = "{stub.base_url}"\napi_key_env = "STUB_KEY"\nmodels = ["stub-1"]\n'))
    store = SQLiteStore(tmp_path / "state.db")
    server = LoopbackServer(create_app(Gateway(config, store, environ={}))).start()
    try:
        client = openai.OpenAI(base_url=server.origin + "/v1", api_key="x", max_retries=0)
        messages = [{"role": "user", "content": "hello"}]
        for question in ("and then?", "one more"):
            if stream:
                chunks = list(client.chat.completions.create(model="st/stub-1",
                                                             messages=messages, stream=True))
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            else:
                text = client.chat.completions.create(
                    model="st/stub-1", messages=messages, temperature=0.5,
                ).choices[0].message.content
            messages += [{"role": "assistant", "content": text},
                         {"role": "user", "content": question}]
        client.chat.completions.create(model="st/stub-1", messages=messages)
    finally:
        server.stop()
        store.close()
    assert stub.statuses == [200, 200, 200]
    headers, last = stub.received[-1]
    assert headers["x-api-key"] == "stub-secret-key"
    assistants = [t for t in last["turns"] if t["role"] == "assistant"]
    assert len(assistants) == 2
    for turn in assistants:  # each answer's seal, byte for byte, though the client never had it
        assert turn["sealed"] == stub_api.seal(turn["text"])
    assert all("temperature" not in body for _, body in stub.received)  # Chat params stay home


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_client_through_the_gateway_to_the_interactions_api(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    """Issue 29: the sixth API behind the gateway's Chat face. The Chat client never sees a
    thought step; the server-side chain is continued on every turn the history still matches."""
    from thoughtline.testing.interactions_emulator import InteractionsEmulator

    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-key")
    with InteractionsEmulator() as emu:
        config = parse(tomllib.loads(
            f'[[upstream]]\nname = "gi"\nprovider = "gemini-interactions"\n'
            f'api = "gemini-interactions"\nbase_url = "{emu.base_url}"\n'
            f'api_key_env = "GEMINI_API_KEY"\nmodels = ["gemini-3-pro-preview"]\n'))
        store = SQLiteStore(tmp_path / "state.db")
        server = LoopbackServer(create_app(Gateway(config, store, environ={}))).start()
        try:
            client = openai.OpenAI(base_url=server.origin + "/v1", api_key="x", max_retries=0)
            messages = [{"role": "user", "content": "hello"}]
            texts = []
            for question in ("and then?", "one more"):
                if stream:
                    chunks = list(client.chat.completions.create(
                        model="gi/gemini-3-pro-preview", messages=messages, stream=True))
                    text = "".join(c.choices[0].delta.content or "" for c in chunks
                                   if c.choices)
                else:
                    text = client.chat.completions.create(
                        model="gi/gemini-3-pro-preview", messages=messages,
                    ).choices[0].message.content
                texts.append(text)
                messages += [{"role": "assistant", "content": text},
                             {"role": "user", "content": question}]
            last = client.chat.completions.create(model="gi/gemini-3-pro-preview",
                                                  messages=messages).choices[0].message.content
        finally:
            server.stop()
            store.close()
        received = emu.received
    assert [r.status for r in received] == [200, 200, 200]
    assert all(r.headers["x-goog-api-key"] == "gemini-secret-key" for r in received)
    assert "previous_interaction_id" not in received[0].body
    assert received[1].body["previous_interaction_id"] == "v1_emu0001"
    assert received[2].body["previous_interaction_id"] == "v1_emu0002"
    assert [s["type"] for s in received[2].body["input"]] == ["user_input"]
    assert texts[0] == "reply 1 (thoughts in context: 0)"
    assert last == "reply 3 (thoughts in context: 2)"  # the model kept every thought
