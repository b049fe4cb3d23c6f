"""The reproductions named in issue 9, each a test that failed before the core rework.

- an encrypted OpenRouter-format item made at one host was sent to another host with the same
  provider id (the signature scope compared only provider and model);
- a stale ``Session`` in a second process wiped the verdicts another process had just written;
- configured ``[providers.X] headers`` were never sent (lost on the JSON round trip);
- a frozen ``Message`` shared plain dicts with the request body: editing the body changed history;
- a store failure after a streamed, billed reply lost the reply and logged ``cancelled``;
- a failed tool-results request left an unanswered tool call that every later request failed on;
- a stream without tool-call ids got the same synthetic id every turn;
- two turns at once on one session interleaved.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from thoughtline import Session, TurnOptions, open_store, replay
from thoughtline.codecs.openai_chat import StreamFold, decode_response, encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.config import ProviderConfig
from thoughtline.errors import ProviderError, StoreError, UsageError
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult, user
from thoughtline.requestlog import RequestLog
from thoughtline.testing import ChatEmulator
from thoughtline.transport import HttpTransport, TransportConfig

ITEM = {"type": "reasoning.encrypted", "data": "gAAAA-encrypted-at-openrouter", "id": "rs_1",
        "format": "openai-responses-v1", "index": 0}


@pytest.fixture()
def emulators() -> Iterator[Callable[[str], ChatEmulator]]:
    running: list[ChatEmulator] = []

    def start(personality: str) -> ChatEmulator:
        emulator = ChatEmulator(personality, require_auth=False).start()
        running.append(emulator)
        return emulator

    yield start
    for emulator in running:
        emulator.stop()


def _no_retry() -> HttpTransport:
    return HttpTransport(TransportConfig(max_retries=0, backoff_base=0.0))


# --- signature scope ----------------------------------------------------------------------


def _turn_made_at(host: str, model: str) -> Message:
    origin = Origin(api="openai-chat", provider="custom", host=host, model=model)
    return Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="encrypted", data=ITEM["data"], origin=origin,
                  native={"openrouter": ITEM}),
        Text(text="done")))


def test_an_item_made_at_one_host_is_not_sent_to_another_host_with_the_same_provider_id() -> None:
    history = [user("q"), _turn_made_at("openrouter.ai", "openai/gpt-5"), user("next")]
    elsewhere = resolve_chat("custom", "https://ai-gateway.vercel.sh/v1", "openai/gpt-5")
    home = resolve_chat("custom", "https://openrouter.ai/api/v1", "openai/gpt-5")
    assert elsewhere.profile.carriers == home.profile.carriers  # both read reasoning_details

    sent_elsewhere = encode_request(history, replay.plan(elsewhere), model="openai/gpt-5")
    sent_home = encode_request(history, replay.plan(home), model="openai/gpt-5")
    assert "reasoning_details" not in sent_elsewhere["messages"][1]
    assert orjson.dumps(sent_home["messages"][1]["reasoning_details"]) == orjson.dumps([ITEM])


# --- the model config merges ----------------------------------------------------------------


def test_a_stale_session_does_not_wipe_what_another_learned(
        emulators: Callable[[str], ChatEmulator], tmp_path: Path) -> None:
    emulator = emulators("strict-custom")
    provider = ProviderConfig(id="custom", base_url=emulator.base_url, model="relay-model")

    async def scenario() -> tuple[list[Any], list[Any]]:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            first = Session.create(store, provider, transport=_no_retry())
            stale = Session.resume(store, first.id, transport=_no_retry())  # "another terminal"
            await first.send("hi")
            await first.send("and again")  # the strict server rejects the carriers: learned
            learned = store.get_session(first.id).model_config["verdicts"]
            stale.set_model("relay-model-2")  # a stale writer changes something else
            after = store.get_session(first.id).model_config
            await first.aclose()
            await stale.aclose()
            return learned, after["verdicts"]

    learned, after = asyncio.run(scenario())
    assert learned, "the strict server should have taught a verdict"
    assert after == learned


# --- headers ------------------------------------------------------------------------------


def test_configured_headers_are_sent_on_the_first_turn_and_after_resume(
        emulators: Callable[[str], ChatEmulator], tmp_path: Path) -> None:
    emulator = emulators("plain")
    (tmp_path / "config.toml").write_text(
        f'[providers.relay]\nbase_url = "{emulator.base_url}"\nmodel = "demo-reasoner"\n'
        '[providers.relay.headers]\nx-relay-tenant = "team-7"\n')
    from thoughtline import config

    cfg = config.load_config(tmp_path)

    async def scenario() -> None:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, config.provider("relay", cfg))
            await session.send("one")
            await session.aclose()
            resumed = Session.resume(store, session.id, config=cfg)
            await resumed.send("two")
            await resumed.aclose()
            stored = json.dumps(store.get_session(session.id).model_config)
            assert "team-7" not in stored  # headers may hold secrets: never stored

    asyncio.run(scenario())
    assert [r.headers.get("x-relay-tenant") for r in emulator.received] == ["team-7", "team-7"]


# --- native values are immutable ---------------------------------------------------------


def test_editing_a_request_body_cannot_change_stored_history() -> None:
    turn = _turn_made_at("openrouter.ai", "openai/gpt-5")
    route = resolve_chat("custom", "https://openrouter.ai/api/v1", "openai/gpt-5")
    plan = replay.plan(route)
    body = encode_request([user("q"), turn], plan, model="openai/gpt-5")
    item = body["messages"][1]["reasoning_details"][0]
    with pytest.raises(TypeError):
        item["data"] = "edited"
    assert turn.parts[0].native["openrouter"]["data"] == ITEM["data"]


# --- nothing lost on the error paths -----------------------------------------------------


def test_a_reply_that_cannot_be_stored_is_rescued_and_logged_truthfully(
        emulators: Callable[[str], ChatEmulator], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    emulator = emulators("plain")
    provider = ProviderConfig(id="custom", base_url=emulator.base_url, model="demo-reasoner")
    rescue = tmp_path / "rescue"

    async def scenario() -> StoreError:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, provider, log=RequestLog(tmp_path / "logs"),
                                     rescue_dir=rescue)

            def locked(*_: Any, **__: Any) -> Any:
                raise StoreError("database is locked")

            monkeypatch.setattr(store, "append", locked)
            monkeypatch.setattr("thoughtline.session._WRITE_ATTEMPTS", (0.0, 0.0))
            with pytest.raises(StoreError) as caught:
                await session.send("keep this answer", TurnOptions(stream=True))
            await session.aclose()
            return caught.value

    error = asyncio.run(scenario())
    [saved] = rescue.iterdir()
    assert str(saved) in str(error)
    record = orjson.loads(saved.read_bytes())
    texts = ["".join(p.get("text", "") for p in m["parts"]) for m in record["messages"]]
    assert texts[0] == "keep this answer" and texts[1]  # the prompt and the streamed reply
    [line] = (tmp_path / "logs").glob("*.jsonl")
    logged = [orjson.loads(x) for x in line.read_text().splitlines()]
    assert [r["outcome"] for r in logged] == ["unsaved"]


def test_a_failed_tool_results_request_does_not_brick_the_session(
        emulators: Callable[[str], ChatEmulator], tmp_path: Path) -> None:
    emulator = emulators("deepseek")
    provider = ProviderConfig(id="deepseek", base_url=emulator.base_url,
                              model="deepseek-reasoner")

    async def scenario() -> None:
        from thoughtline.messages import ToolSpec

        tool = ToolSpec(name="weather", parameters={"type": "object", "properties": {
            "city": {"type": "string"}}})
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, provider, tools=[tool], transport=_no_retry())
            first = await session.send("weather in Paris?")
            [call] = first.message.tool_calls
            emulator.fail_next(500)
            with pytest.raises(ProviderError):
                await session.send([ToolResult(call_id=call.id, content="sunny")])
            # The user moves on without resending the results: the request must still be valid.
            await session.send("never mind, tell me a joke")
            await session.aclose()

    asyncio.run(scenario())
    statuses = [r.status for r in emulator.received]
    assert statuses == [200, 500, 200]
    messages = emulator.received[-1].body["messages"]
    answered = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == [
        emulator.received[0].body and _call_id(emulator)]


def _call_id(emulator: ChatEmulator) -> str:
    body = emulator.received[-1].body
    [assistant] = [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    return assistant["tool_calls"][0]["id"]


def test_synthetic_tool_call_ids_are_unique_per_turn() -> None:
    origin = Origin(api="openai-chat", provider="gemini-openai", model="gemini-3-pro")
    body = {"id": "", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}
    one = decode_response(body, origin, seed="turn-1").message.tool_calls[0].id
    two = decode_response(body, origin, seed="turn-2").message.tool_calls[0].id
    assert one != two and one.startswith("call_tl_")
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "stop"}]}
    ids = set()
    for seed in ("a", "b"):
        fold = StreamFold(origin, seed=seed)
        fold.add(chunk)
        ids.add(fold.finish().message.tool_calls[0].id)
    assert len(ids) == 2


def test_two_turns_at_once_are_refused_not_interleaved(
        emulators: Callable[[str], ChatEmulator], tmp_path: Path) -> None:
    emulator = emulators("plain")
    emulator.chunk_delay = 0.02
    provider = ProviderConfig(id="custom", base_url=emulator.base_url, model="demo-reasoner")

    async def scenario() -> list[Any]:
        with open_store(tmp_path / "state.db", tmp_path) as store:
            session = Session.create(store, provider)
            results = await asyncio.gather(session.send("one"), session.send("two"),
                                           return_exceptions=True)
            await session.aclose()
            assert len(session.history) == 2
            return results

    results = asyncio.run(scenario())
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], UsageError)
    assert "already answering" in str(errors[0])
    assert len(emulator.received) == 1


def test_tool_call_arguments_stream_as_deltas() -> None:
    from thoughtline.events import ToolCallDelta

    fold = StreamFold(Origin(api="openai-chat", provider="p"))
    events = []
    for piece in ('{"ci', 'ty": "Paris"}'):
        events += fold.add({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "weather", "arguments": piece}}]}}]})
    assert "".join(e.text for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Paris"}'
    assert ToolCall  # the canonical part the deltas add up to


def test_a_turn_that_lost_a_payload_on_load_is_marked_damaged(tmp_path: Path) -> None:
    import sqlite3

    turn = _turn_made_at("openrouter.ai", "openai/gpt-5")
    with open_store(tmp_path / "state.db", tmp_path) as store:
        record = store.create_session(title="t")
        store.append(record.id, [user("q"), turn])
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    for (blob,) in raw.execute("SELECT data FROM payloads").fetchall():
        if ITEM["data"].encode() in bytes(blob):
            raw.execute("UPDATE payloads SET data = ? WHERE data = ?",
                        (bytes(blob).replace(b"encrypted", b"ENCRYPTED"), blob))
    raw.close()
    with open_store(tmp_path / "state.db", tmp_path) as store:
        loaded = store.load_history(record.id)
    first, second = (m.message for m in loaded.messages)
    assert loaded.problems and not first.damaged
    assert second.damaged and not second.reasoning and second.text == "done"
