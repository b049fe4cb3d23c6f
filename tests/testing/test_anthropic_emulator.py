"""The Anthropic emulator enforces the documented contract
(docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
platform.claude.com/docs/en/build-with-claude/preserved-thinking) on raw HTTP, independently of
thoughtline's codec: signed thinking bound to its block and prefix, the model and account checks,
``drop_block``, the in-loop rule, the endpoints' shapes, and the real wordings.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from thoughtline.testing.anthropic_emulator import AnthropicEmulator

KEY = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}
BINDING = {**KEY, "anthropic-beta": "thinking-binding-controls-2026-08-01"}
TOOLS = [{"name": "lookup", "description": "look it up", "input_schema": {"type": "object"}}]


@pytest.fixture(scope="module")
def emu() -> Iterator[AnthropicEmulator]:
    with AnthropicEmulator() as emulator:
        yield emulator


def post(emu: AnthropicEmulator, body: dict[str, Any], *, headers: dict[str, str] | None = None,
         path: str = "/v1/messages") -> httpx.Response:
    return httpx.post(emu.base_url + path, headers=KEY if headers is None else headers,
                      content=orjson.dumps(body), timeout=10)


def request(model: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 2048, "messages": list(messages),
                            "tools": TOOLS, "system": [{"type": "text", "text": "Be brief."}]}
    if not model.startswith(("claude-fable", "claude-sonnet-5", "claude-opus-5")):
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    body.update(extra)
    return body


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def tool_loop(emu: AnthropicEmulator, model: str, **extra: Any) -> tuple[dict[str, Any], Any]:
    """Turn 1 (a tool call) and the request that answers it: (turn-2 body, turn-1 reply)."""
    first = request(model, user("what is the weather"), **extra)
    reply = post(emu, first, headers=BINDING).json()
    call = next(b for b in reply["content"] if b["type"] == "tool_use")
    second = request(model, user("what is the weather"),
                     {"role": "assistant", "content": reply["content"]},
                     {"role": "user", "content": [{"type": "tool_result",
                                                   "tool_use_id": call["id"],
                                                   "content": "sunny"}]}, **extra)
    return second, reply


def error_message(response: httpx.Response) -> str:
    body = response.json()
    assert body["type"] == "error"
    return body["error"]["message"]


def test_whole_and_streamed_replies_carry_the_same_blocks(emu: AnthropicEmulator) -> None:
    body = request("claude-sonnet-4-5", user("hello"))
    whole = post(emu, body).json()
    streamed = post(emu, {**body, "stream": True})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = sse(streamed.text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == payload["type"] for name, payload in events)
    thinking = "".join(p["delta"].get("thinking", "") for _, p in events
                       if p["type"] == "content_block_delta")
    signatures = [p["delta"]["signature"] for _, p in events
                  if p["type"] == "content_block_delta" and p["delta"]["type"] == "signature_delta"]
    assert thinking == whole["content"][0]["thinking"]
    assert signatures == [whole["content"][0]["signature"]]
    after = names[names.index("content_block_delta"):]
    assert after[after.index("content_block_stop") - 1] == "content_block_delta"


def test_its_own_blocks_replay_and_the_loop_ends_with_signed_and_redacted_thinking(
        emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    answer = post(emu, second)
    assert answer.status_code == 200, answer.text
    kinds = [b["type"] for b in answer.json()["content"]]
    assert kinds == ["thinking", "redacted_thinking", "text"]
    assert answer.json()["content"][0]["thinking"] == ""  # an empty-text signed block


@pytest.mark.parametrize("edit", ["signature", "text", "data"])
def test_tampered_blocks_are_rejected_with_the_real_wording(emu: AnthropicEmulator,
                                                            edit: str) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    third = post(emu, second).json()
    body = request("claude-sonnet-4-5", *second["messages"],
                   {"role": "assistant", "content": copy.deepcopy(third["content"])},
                   user("and tomorrow?"))
    blocks = body["messages"][3]["content"]
    if edit == "signature":
        blocks[0]["signature"] = blocks[0]["signature"][:-6] + "AAAAA="
    elif edit == "text":
        body["messages"][1]["content"][0]["thinking"] += " (edited)"
    else:
        blocks[1]["data"] = "Eo" + blocks[1]["data"][4:]
    response = post(emu, body)
    assert response.status_code == 400
    expected = {"signature": "messages.3.content.0: Invalid `signature` in `thinking` block",
                "text": "messages.1.content.0: Invalid `signature` in `thinking` block",
                "data": "messages.3.content.1: Invalid 'data' in 'redacted_thinking' block"}
    assert error_message(response) == expected[edit]


def test_an_unsigned_block_needs_its_signature(emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    del second["messages"][1]["content"][0]["signature"]
    response = post(emu, second)
    assert error_message(response) == "messages.1.content.0.thinking.signature: Field required"


def test_a_missing_in_loop_block_is_rejected(emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    second["messages"][1]["content"] = second["messages"][1]["content"][1:]
    message = error_message(post(emu, second))
    assert message.startswith("messages.1.content.0.type: Expected `thinking` or "
                              "`redacted_thinking`, but found `tool_use`.")


def test_reordered_blocks_are_rejected(emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    third = post(emu, second).json()["content"]
    swapped = [third[1], third[0], third[2]]
    body = request("claude-sonnet-4-5", *second["messages"],
                   {"role": "assistant", "content": swapped}, user("next"))
    assert error_message(post(emu, body)) == (
        "messages.3.content.1: Invalid `signature` in `thinking` block")


def test_a_foreign_block_fails_on_older_models_and_is_dropped_on_binding_ones(
        emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-sonnet-4-5")
    moved = request("claude-opus-4-5", *second["messages"])
    assert error_message(post(emu, moved)) == (
        "messages.1.content.0: Invalid `signature` in `thinking` block")
    to_fable = request("claude-fable-5-1", *second["messages"])
    response = post(emu, to_fable, headers=BINDING)
    assert response.status_code == 200, response.text
    assert emu.reports[-1] == [{"type": "thinking_dropped", "path": "messages.1.content.0",
                                "reason": "model_binding_mismatch"}]


def test_a_changed_system_prompt_on_a_binding_model(emu: AnthropicEmulator) -> None:
    second, _ = tool_loop(emu, "claude-fable-5-1")
    assert post(emu, second, headers=BINDING).status_code == 200
    changed = {**second, "system": [{"type": "text", "text": "Be verbose."}]}
    refused = post(emu, changed, headers=BINDING)
    assert refused.status_code == 400
    assert error_message(refused) == (
        "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a "
        "different conversation. Remove the block, or set `thinking.block_binding."
        "prefix_mismatch_behavior` to \"drop_block\". The `system` prompt differs from the one "
        "this block was created with.")
    dropping = {**changed, "thinking": {"type": "adaptive",
                                        "block_binding": {"prefix_mismatch_behavior":
                                                          "drop_block"}}}
    answer = post(emu, {**dropping, "stream": True}, headers=BINDING)
    assert answer.status_code == 200
    start = sse(answer.text)[0][1]["message"]
    assert start["input_transformations"] == [
        {"type": "thinking_dropped", "path": "messages.1.content.0",
         "reason": "prefix_binding_mismatch"}]
    no_beta = post(emu, dropping, headers=KEY)
    assert "requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` " \
           "header" in error_message(no_beta)


def test_a_gap_in_the_middle_of_a_binding_chain_is_refused_but_the_start_may_go(
        emu: AnthropicEmulator) -> None:
    model = "claude-fable-5-1"
    second, _ = tool_loop(emu, model)
    third = post(emu, second, headers=BINDING).json()["content"]
    history = [*second["messages"], {"role": "assistant", "content": third}, user("more")]
    assert post(emu, request(model, *history), headers=BINDING).status_code == 200
    gap = copy.deepcopy(history)
    gap[3]["content"] = [third[1], third[2]]  # the middle block of the chain removed
    message = error_message(post(emu, request(model, *gap), headers=BINDING))
    assert "The `thinking` block that preceded this one when it was created is missing" in message
    start = copy.deepcopy(history)
    start[1]["content"] = start[1]["content"][1:]  # the first block removed: still fine
    assert post(emu, request(model, *start), headers=BINDING).status_code == 200


def test_account_bound_blocks_are_dropped_in_another_account() -> None:
    with AnthropicEmulator(account="a") as mine, AnthropicEmulator(account="b") as theirs:
        second, _ = tool_loop(mine, "claude-sonnet-5-5")
        assert post(mine, second, headers=BINDING).status_code == 200
        assert mine.reports[-1] is None
        assert post(theirs, second, headers=BINDING).status_code == 200
        assert theirs.reports[-1] == [{"type": "thinking_dropped", "path": "messages.1.content.0",
                                       "reason": "account_binding_mismatch"}]


def test_adaptive_only_models_refuse_disabled_thinking(emu: AnthropicEmulator) -> None:
    body = request("claude-opus-5-5", user("hi"), thinking={"type": "disabled"})
    assert error_message(post(emu, body)) == (
        '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" '
        'and "output_config.effort" to control thinking behavior.')


def test_vertex_paths_and_body_shape(emu: AnthropicEmulator) -> None:
    path = "/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5"
    bearer = {"authorization": "Bearer ya29.token"}
    body = request("claude-sonnet-4-5", user("hi"))
    assert error_message(post(emu, body, headers=bearer, path=path + ":rawPredict")) == (
        "anthropic_version: Input should be 'vertex-2023-10-16'")
    vertex = {k: v for k, v in body.items() if k != "model"}
    vertex["anthropic_version"] = "vertex-2023-10-16"
    with_model = post(emu, {**vertex, "model": "x"}, headers=bearer, path=path + ":rawPredict")
    assert error_message(with_model) == "model: Extra inputs are not permitted"
    assert post(emu, vertex, headers=bearer, path=path + ":rawPredict").json()["model"] == (
        "claude-sonnet-4-5")
    streamed = post(emu, vertex, headers=bearer, path=path + ":streamRawPredict")
    assert sse(streamed.text)[0][0] == "message_start"
    assert post(emu, vertex, headers=KEY, path=path + ":rawPredict").status_code == 401


def test_bedrock_and_foundry_paths_check_their_credentials(emu: AnthropicEmulator) -> None:
    body = request("claude-sonnet-4-5", user("hi"))
    sigv4 = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/"
                              "bedrock/aws4_request, SignedHeaders=host, Signature=abc",
             "x-amz-date": "20261201T000000Z"}
    assert post(emu, body, headers=sigv4, path="/anthropic/v1/messages").status_code == 200
    foundry = {"api-key": "k", "anthropic-version": "2023-06-01"}
    assert post(emu, body, headers=foundry, path="/anthropic/v1/messages").status_code == 200
    assert post(emu, body, headers={"anthropic-version": "2023-06-01"},
                path="/anthropic/v1/messages").status_code == 401
    no_version = post(emu, body, headers={"x-api-key": "k"})
    assert error_message(no_version) == "anthropic-version: header is required"


def test_it_records_what_it_received_and_injects_failures(emu: AnthropicEmulator) -> None:
    emu.fail_next(529, {"type": "error", "error": {"type": "overloaded_error",
                                                   "message": "Overloaded"}})
    body = request("claude-sonnet-4-5", user("recorded"))
    assert post(emu, body).status_code == 529
    assert post(emu, body).status_code == 200
    last = emu.received[-1]
    assert last.path == "/v1/messages" and last.body == body and last.headers["x-api-key"]
    assert orjson.loads(last.raw) == body and emu.received[-2].status == 529


def test_a_cut_stream_stops_before_the_signature(emu: AnthropicEmulator) -> None:
    emu.cut_stream_after(4, graceful=True)
    streamed = post(emu, {**request("claude-sonnet-4-5", user("cut")), "stream": True})
    kinds = [p.get("delta", {}).get("type") for _, p in sse(streamed.text)]
    assert "signature_delta" not in kinds and len(kinds) == 4
