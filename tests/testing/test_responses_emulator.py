"""The Responses emulator on its own, through raw HTTP: what it issues, streams, accepts and
refuses. Requests are written by hand from the documented wire shape
(developers.openai.com/api/docs/guides/reasoning and the recordings), never by thoughtline's codec,
so these tests check the emulator, not the codec.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from thoughtline.testing.responses_emulator import ResponsesEmulator

TOOLS = [{"type": "function", "name": "lookup", "description": "look something up",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}]
AUTH = {"authorization": "Bearer test"}


@pytest.fixture(scope="module")
def emu() -> Iterator[ResponsesEmulator]:
    with ResponsesEmulator("openai") as emulator:
        yield emulator


def post(emu: ResponsesEmulator, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{emu.base_url}/responses", json=body, headers=AUTH, timeout=10)


def first_turn(emu: ResponsesEmulator) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    request = {"model": "gpt-5.5", "store": False, "include": ["reasoning.encrypted_content"],
               "tools": TOOLS, "input": [{"role": "user", "content": "what is up"}]}
    response = post(emu, request)
    assert response.status_code == 200
    return request["input"], response.json()


def replay_body(history: list[dict[str, Any]], output: list[dict[str, Any]],
                **changes: Any) -> dict[str, Any]:
    """The stateless next request a client sends: every output item back, then the result."""
    call = next(i for i in output if i["type"] == "function_call")
    items = [*history, *output, {"type": "function_call_output", "call_id": call["call_id"],
                                 "output": "sunny"}]
    return {"model": "gpt-5.5", "store": False, "tools": TOOLS, "input": items, **changes}


def error_of(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    return response.json()["error"]["message"]


def test_a_tool_turn_is_reasoning_commentary_then_the_call(emu: ResponsesEmulator) -> None:
    _, body = first_turn(emu)
    kinds = [i["type"] for i in body["output"]]
    assert kinds == ["reasoning", "message", "function_call"]
    reasoning, message, _ = body["output"]
    assert reasoning["encrypted_content"].startswith("gAAAAAB")
    assert reasoning["summary"][0]["type"] == "summary_text"
    assert message["phase"] == "commentary"
    assert emu.received[-1].body["input"][0]["content"] == "what is up"


def test_a_verbatim_replay_is_accepted_and_answered(emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    answer = post(emu, replay_body(history, body["output"]))
    assert answer.status_code == 200, answer.text
    final = answer.json()["output"]
    assert [i["type"] for i in final] == ["reasoning", "message"]
    assert final[1]["phase"] == "final_answer"
    assert "sunny" in final[1]["content"][0]["text"]


def test_an_altered_item_is_refused(emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    reasoning = body["output"][0]
    value = reasoning["encrypted_content"]
    edited = value[:-6] + ("A" if value[-6] != "A" else "B") + value[-5:]
    output = [{**reasoning, "encrypted_content": edited}, *body["output"][1:]]
    message = error_of(post(emu, replay_body(history, output)))
    assert message == (f"The encrypted content for item {reasoning['id']} could not be verified."
                       " Reason: Encrypted content could not be decrypted or parsed.")


def test_another_issuers_item_is_refused_and_a_restart_keeps_verifying(
        emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    with ResponsesEmulator("openai", issuer="org-other") as other:
        message = error_of(post(other, replay_body(history, body["output"])))
        assert message.startswith("The encrypted content gAAAAAB")
        assert message.endswith("could not be verified.")
    with ResponsesEmulator("openai") as restarted:  # same issuer and secret
        assert post(restarted, replay_body(history, body["output"])).status_code == 200


def test_an_orphaned_item_is_refused_with_the_recorded_wording(emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    reasoning, _, call = body["output"]
    message = error_of(post(emu, replay_body(history, [reasoning, call])))
    assert message == (f"Item '{reasoning['id']}' of type 'reasoning' was provided without its "
                       "required following item.")


def test_an_item_sent_by_id_alone_is_not_found_when_nothing_is_stored(
        emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    reasoning = {k: v for k, v in body["output"][0].items() if k != "encrypted_content"}
    message = error_of(post(emu, replay_body(history, [reasoning, *body["output"][1:]])))
    assert "Items are not persisted when `store` is set to false" in message
    assert message.startswith(f"Item with id '{reasoning['id']}' not found.")


def test_unknown_parameters_and_item_fields_are_refused(emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    assert error_of(post(emu, replay_body(history, body["output"], stream_usage=True))) == (
        "Unknown parameter: 'stream_usage'.")
    leaked = [{**body["output"][0], "native": {}}, *body["output"][1:]]
    assert error_of(post(emu, replay_body(history, leaked))).startswith(
        "Unknown parameter: 'input[1].native'")


def test_a_call_without_its_output_is_refused(emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    request = replay_body(history, body["output"])
    request["input"] = request["input"][:-1]
    assert error_of(post(emu, request)).startswith("No tool output found for function call")


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            out.append((lines.get("event", ""), orjson.loads(lines["data"])))
    return out


def test_streams_name_events_and_only_the_done_item_is_the_one_to_keep(
        emu: ResponsesEmulator) -> None:
    request = {"model": "gpt-5.5", "store": False, "stream": True, "tools": TOOLS,
               "input": [{"role": "user", "content": "stream please"}]}
    with httpx.stream("POST", f"{emu.base_url}/responses", json=request, headers=AUTH,
                      timeout=10) as response:
        events = _events(response.read().decode())
    assert all(name == payload["type"] for name, payload in events)
    assert [p["sequence_number"] for _, p in events] == list(range(len(events)))
    added = next(p["item"] for _, p in events if p["type"] == "response.output_item.added")
    done = next(p["item"] for _, p in events if p["type"] == "response.output_item.done")
    final = events[-1][1]["response"]["output"][0]
    assert added["encrypted_content"] != done["encrypted_content"] != final["encrypted_content"]
    assert done["encrypted_content"] in emu.issued
    assert emu.sealer.open(done["encrypted_content"]).verdict == "ok"
    assert emu.sealer.open(final["encrypted_content"]).verdict == "ok"
    assert emu.sealer.open(added["encrypted_content"]).verdict == "altered"


@pytest.mark.parametrize(("personality", "wording"), [
    ("xai", "Could not decrypt the provided encrypted_content. Ensure the value is the "
            "unmodified encrypted_content from a previous response."),
    ("relay", "was not issued to this caller"),
])
def test_other_personalities_use_their_own_wordings(personality: str, wording: str,
                                                    emu: ResponsesEmulator) -> None:
    history, body = first_turn(emu)
    with ResponsesEmulator(personality) as other:
        assert wording in error_of(post(other, replay_body(history, body["output"])))


def test_requests_need_a_bearer_token(emu: ResponsesEmulator) -> None:
    response = httpx.post(f"{emu.base_url}/responses", json={"model": "m", "input": []},
                          timeout=10)
    assert response.status_code == 401
    assert emu.received[-1].status == 401
