"""Codex 0.171.0 on its newest model profile (Responses Lite, code mode) through the gateway.

The recording (``tests/fixtures/clients/codex_lite_run1``) has no top-level ``tools``: they come
in an ``additional_tools`` input item, grouped in namespaces, and the one tool the model calls
directly is the ``custom`` tool ``exec`` (a lark grammar over JavaScript source). Replayed with
the gateway's own answers in place of the recorded ones, to an upstream of every API: each
upstream request must offer the tools, the loop must run (a custom call back to Codex, its
output forwarded as the tool result), and the earlier turn's reasoning must go back — the
emulators reject a request whose signed or must-echo reasoning is missing or altered
(``thoughtline.testing``'s rules, each citing its source).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from gateway_support import running_gateway
from test_gateway_codex import Replayer, recorded
from test_gateway_replay import UPSTREAMS
from test_gateway_responses import aws  # noqa: F401  (a fixture: Bedrock signs with test keys)

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.codecs.openai_responses.tools import flat_name

RUN = "codex_lite_run1"
#: The tools the recording offers, as (namespace, name), read from its additional_tools item.
_ITEM = recorded(RUN)[0]["body"]["input"][0]
OFFERED = [(ns["name"], tool["name"]) for ns in _ITEM["tools"] for tool in ns["tools"]]
EXEC = flat_name("functions", "exec")


def _names_chat(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", ())]


def _names_anthropic(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", ())]


def _names_gemini(body: dict[str, Any]) -> list[str]:
    return [f["name"] for t in body.get("tools", ()) for f in t.get("functionDeclarations", ())]


def _names_bedrock(body: dict[str, Any]) -> list[str]:
    return [t["toolSpec"]["name"] for t in body.get("toolConfig", {}).get("tools", ())]


def _carries_reasoning_chat(body: dict[str, Any]) -> bool:
    return any(m.get("reasoning_content") for m in body["messages"]
               if m["role"] == "assistant" and m.get("tool_calls"))


def _carries_reasoning_anthropic(body: dict[str, Any]) -> bool:
    return any(b.get("type") == "thinking" and b.get("signature")
               for m in body["messages"] if m["role"] == "assistant"
               for b in m["content"] if isinstance(b, dict))


def _carries_reasoning_gemini(body: dict[str, Any]) -> bool:
    return any(p.get("thoughtSignature") for c in body["contents"] if c["role"] == "model"
               for p in c["parts"])


def _carries_reasoning_bedrock(body: dict[str, Any]) -> bool:
    return any("reasoningContent" in b for m in body["messages"] if m["role"] == "assistant"
               for b in m["content"])


READERS: dict[str, tuple[Callable[[dict], list[str]], Callable[[dict], bool]]] = {
    "deepseek": (_names_chat, _carries_reasoning_chat),
    "anthropic": (_names_anthropic, _carries_reasoning_anthropic),
    "gemini": (_names_gemini, _carries_reasoning_gemini),
    "bedrock": (_names_bedrock, _carries_reasoning_bedrock),
}
_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("name", sorted(READERS))
def test_the_code_mode_loop_runs_on_every_upstream_api(tmp_path: Path, name: str) -> None:
    upstream = UPSTREAMS[name]
    names_of, carries_reasoning = READERS[name]
    with upstream.emulator() as emu, running_gateway(emu, tmp_path, name="up",
                                                     provider=upstream.provider,
                                                     model=upstream.model) as gw:
        replayer = Replayer(gw.server.origin, model=f"up/{upstream.model}")
        replayer.replay(recorded(RUN))
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    expected = [flat_name(ns, tool) for ns, tool in OFFERED]
    for request in received:
        assert names_of(request.body) == expected
        assert MINT_PREFIX.encode() not in request.raw
    assert all(_SAFE.fullmatch(n) for n in expected)
    # The first answer called exec (the only tool a code-mode model calls directly) and went
    # back to Codex as a custom call under its namespace; its output reached the upstream.
    first = next(iter(replayer.answers.values()))
    calls = [i for i in first if i["type"] in ("custom_tool_call", "function_call")]
    assert calls and all(c["type"] == "custom_tool_call" and c["name"] == "exec"
                         and c["namespace"] == "functions" for c in calls), calls
    output = recorded(RUN)[1]["body"]["input"][-1]
    shown = "\n".join(p["text"] for p in output["output"])
    assert orjson.dumps(shown)[1:-1] in received[1].raw
    assert carries_reasoning(received[1].body)


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("name", sorted(READERS))
def test_a_restarted_gateway_sends_the_resumed_loop_byte_identical(tmp_path: Path,
                                                                   name: str) -> None:
    """Codex resumes by resending its own history; a gateway started afresh on the same store
    must send the upstream exactly what the first one did (tools and reasoning included)."""
    upstream = UPSTREAMS[name]
    requests = recorded(RUN)
    with upstream.emulator() as emu:
        with running_gateway(emu, tmp_path, name="up", provider=upstream.provider,
                             model=upstream.model) as gw:
            replayer = Replayer(gw.server.origin, model=f"up/{upstream.model}")
            replayer.replay(requests)
        with running_gateway(emu, tmp_path, name="up", provider=upstream.provider,
                             model=upstream.model) as again:
            headers = {k: v for k, v in requests[1]["headers"].items()
                       if k.lower() not in ("authorization", "content-length", "host",
                                            "accept-encoding")}
            answer = httpx.post(again.server.origin + "/v1/responses", headers=headers,
                                content=replayer.bodies[1], timeout=60)
            assert answer.status_code == 200, answer.text
        first, resumed = emu.received[1], emu.received[2]
    assert resumed.status == 200
    assert resumed.raw == first.raw


def test_exec_reaches_a_function_upstream_as_a_one_string_function_with_its_grammar(
        tmp_path: Path) -> None:
    upstream = UPSTREAMS["deepseek"]
    with upstream.emulator() as emu, running_gateway(emu, tmp_path, name="up",
                                                     provider=upstream.provider,
                                                     model=upstream.model) as gw:
        Replayer(gw.server.origin, model=f"up/{upstream.model}").replay(recorded(RUN)[:1])
        (sent,) = emu.received
    (tool,) = [t["function"] for t in sent.body["tools"] if t["function"]["name"] == EXEC]
    assert tool["parameters"] == {"type": "object", "properties": {"input": {"type": "string"}},
                                  "required": ["input"]}
    grammar = _ITEM["tools"][0]["tools"][0]["format"]["definition"]
    assert tool["description"].endswith(grammar) and "lark grammar" in tool["description"]


def test_a_responses_upstream_gets_the_lite_items_verbatim_in_place(tmp_path: Path) -> None:
    upstream = UPSTREAMS["openai-responses"]
    requests = recorded(RUN)
    with upstream.emulator() as emu, running_gateway(emu, tmp_path, name="up",
                                                     provider=upstream.provider,
                                                     model=upstream.model) as gw:
        replayer = Replayer(gw.server.origin, model=f"up/{upstream.model}")
        replayer.replay(requests)
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    for request, sent in zip(requests, received, strict=True):
        assert "tools" not in sent.body  # the item carries them, once
        items = sent.body["input"]
        assert orjson.dumps(items[0]) == orjson.dumps(request["body"]["input"][0])
        assert [i.get("type") for i in items].count("additional_tools") == 1
    # The client's custom call output went back as itself, its parts and id included.
    ours = received[1].body["input"]
    (given,) = [i for i in requests[1]["body"]["input"] if i["type"] == "custom_tool_call_output"]
    (sent_output,) = [i for i in ours if i.get("type") == "custom_tool_call_output"]
    assert orjson.dumps({k: v for k, v in sent_output.items() if k != "call_id"}) == \
        orjson.dumps({k: v for k, v in given.items() if k != "call_id"})


def test_the_openai_sdk_drives_additional_tools_and_custom_calls(tmp_path: Path) -> None:
    """The SDK's own types, whole and streamed: a namespaced custom tool in an
    additional_tools item, answered by a must-echo upstream as a custom call."""
    upstream = UPSTREAMS["deepseek"]
    item = {"type": "additional_tools", "role": "developer", "tools": [
        {"type": "namespace", "name": "shell", "description": "Run things.", "tools": [
            {"type": "custom", "name": "run", "description": "Run a script.",
             "format": {"type": "text"}}]}]}
    question = {"type": "message", "role": "user", "content": "List the files."}
    with upstream.emulator() as emu, running_gateway(emu, tmp_path, name="up",
                                                     provider=upstream.provider,
                                                     model=upstream.model) as gw:
        client = gw.client()
        whole = client.responses.create(model=f"up/{upstream.model}", input=[item, question])
        (call,) = [o for o in whole.output if o.type == "custom_tool_call"]
        assert (call.namespace, call.name) == ("shell", "run")
        events = list(client.responses.create(model=f"up/{upstream.model}",
                                              input=[item, question], stream=True))
        done = [e for e in events if e.type == "response.custom_tool_call_input.done"]
        assert len(done) == 1 and isinstance(done[0].input, str)
        history = [item, question, *[o.model_dump(exclude_none=True) for o in whole.output],
                   {"type": "custom_tool_call_output", "call_id": call.call_id,
                    "output": [{"type": "input_text", "text": "a.txt"},
                               {"type": "input_text", "text": "b.txt"}]}]
        again = client.responses.create(model=f"up/{upstream.model}", input=history)
        assert again.status == "completed"
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200, 200]
    assert _names_chat(received[0].body) == [flat_name("shell", "run")]
    (result,) = [m for m in received[2].body["messages"] if m["role"] == "tool"]
    assert result["content"] == "a.txt\nb.txt"
    assert _carries_reasoning_chat(received[2].body)


def test_a_tool_list_that_is_not_an_array_is_a_clear_400(tmp_path: Path) -> None:
    upstream = UPSTREAMS["deepseek"]
    with upstream.emulator() as emu, running_gateway(emu, tmp_path, name="up",
                                                     provider=upstream.provider,
                                                     model=upstream.model) as gw:
        with pytest.raises(openai.BadRequestError) as caught:
            gw.client().responses.create(model=f"up/{upstream.model}", input=[
                {"type": "additional_tools", "role": "developer", "tools": {"no": "list"}},
                {"role": "user", "content": "hi"}])
        assert not emu.received
    assert "input[0].tools must be an array" in str(caught.value)
