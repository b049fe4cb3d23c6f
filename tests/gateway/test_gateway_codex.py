"""The recorded Codex CLI requests replayed through the gateway, its own answers substituted.

Each recorded request is sent as Codex sent it (body, ``session-id`` / ``thread-id`` headers), but
every answer the recording's test server gave is replaced by the gateway's answer to the same
history — as Codex itself would have resent it: output items in order, call ids followed into the
``function_call_output`` items, a ``compaction`` item for a ``compaction_trigger``. History the
recording brought from before its first request (a resumed session) is asked of the gateway
first, so every answer in every request is one the gateway gave. A must-echo DeepSeek upstream
accepts every request, and each tool turn's reasoning goes back to it byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import running_gateway
from test_gateway_responses import serving

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.testing import ChatEmulator
from thoughtline.testing.responses_emulator import ResponsesEmulator

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"
_CALLS = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_ANSWER = frozenset({"reasoning", *_CALLS})
_DROPPED_HEADERS = frozenset({"authorization", "content-length", "accept-encoding", "host"})


def recorded(name: str) -> list[dict[str, Any]]:
    lines = (CLIENTS / f"{name}.requests.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def _is_answer(item: dict[str, Any]) -> bool:
    return item.get("type") in _ANSWER or (item.get("type") == "message"
                                          and item.get("role") == "assistant")


def _sse_items(raw: bytes) -> list[dict[str, Any]]:
    """The output items Codex keeps: each ``response.output_item.done``'s item, in order."""
    items = []
    for frame in raw.split(b"\n\n"):
        for line in frame.split(b"\n"):
            if line.startswith(b"data: "):
                event = orjson.loads(line[6:])
                if event.get("type") == "response.output_item.done":
                    items.append(event["item"])
                assert event.get("type") not in ("error", "response.failed"), event
    return items


class Replayer:
    """Sends recorded requests with the gateway's answers in place of the recorded ones."""

    def __init__(self, origin: str, model: str = "", pad: str = "") -> None:
        self.origin = origin
        self.model = model  # the model to ask for instead of the recorded one ("" keeps it)
        self.pad = pad  # appended to each tool output (a conversation a compaction can shrink)
        self.answers: dict[str, list[dict[str, Any]]] = {}  # first recorded id → ours
        self.calls: dict[str, str] = {}  # recorded call id → ours
        self.compactions: dict[str, dict[str, Any]] = {}  # recorded id → our compaction item
        self.sent = 0
        self.bodies: list[bytes] = []  # each request as sent, in order
        self.compactions_asked = 0  # requests that asked for a compaction item

    def _send(self, request: dict[str, Any], items: list[dict[str, Any]]) -> list[dict]:
        headers = {k: v for k, v in request["headers"].items()
                   if k.lower() not in _DROPPED_HEADERS}
        body = {**request["body"], "input": items}
        if self.model:
            body["model"] = self.model
        self.bodies.append(orjson.dumps(body))
        reply = httpx.post(self.origin + request["path"], headers=headers,
                           content=self.bodies[-1], timeout=60)
        assert reply.status_code == 200, reply.text
        self.sent += 1
        return _sse_items(reply.content) if body.get("stream") else reply.json()["output"]

    def _ours(self, request: dict[str, Any], recorded_items: list[dict]) -> list[dict]:
        out: list[dict[str, Any]] = []
        index = 0
        while index < len(recorded_items):
            item = recorded_items[index]
            if _is_answer(item):
                end = index
                while end < len(recorded_items) and _is_answer(recorded_items[end]):
                    end += 1
                run = recorded_items[index:end]
                key = run[0].get("id") or orjson.dumps(run[0]).decode()
                if key not in self.answers:  # history from before the recording: ask for it
                    self.answers[key] = self._send(request, [*out])
                ours = self.answers[key]
                mine = [i["call_id"] for i in ours if i["type"] in _CALLS]
                theirs = [i["call_id"] for i in run if i["type"] in _CALLS]
                # The emulator may answer where the recorded server called a tool (after a
                # mid-turn compaction it sees the tool's output last): Codex then runs nothing.
                self.calls.update(zip(theirs, mine, strict=False))
                out.extend(ours)
                index = end
                continue
            if item.get("type") == "compaction":
                out.append(self.compactions[item["id"]])
            elif item.get("type") in _OUTPUTS:
                if item["call_id"] in self.calls:
                    out.append({**item, "call_id": self.calls[item["call_id"]]})
                    if self.pad and isinstance(item.get("output"), str):
                        out[-1]["output"] = item["output"] + self.pad
            else:
                out.append(item)
            index += 1
        return out

    def replay(self, requests: list[dict[str, Any]]) -> None:
        for number, request in enumerate(requests):
            items = self._ours(request, request["body"]["input"])
            output = self._send(request, items)
            answered = request["upstream_reply"]
            if answered == ["compaction"]:
                self.compactions_asked += 1
                (item,) = output  # exactly one compaction item
                assert item["type"] == "compaction"
                assert item["encrypted_content"].startswith(MINT_PREFIX)
                following = requests[number + 1]["body"]["input"] if number + 1 < len(
                    requests) else []
                for later in following:
                    if later.get("type") == "compaction":
                        self.compactions[later["id"]] = item
            elif number + 1 < len(requests):
                later = requests[number + 1]["body"]["input"]
                start = next((i for i, x in enumerate(later) if _is_answer(x)
                              and (x.get("id") or "") not in self._known(requests[:number + 1])),
                             None)
                if start is not None:
                    key = later[start].get("id") or orjson.dumps(later[start]).decode()
                    self.answers[key] = output

    @staticmethod
    def _known(requests: list[dict[str, Any]]) -> set[str]:
        return {i.get("id") or "" for r in requests for i in r["body"]["input"]}


@pytest.mark.parametrize("names", [("codex_run1", "codex_run2_resume"),
                                   ("codex_run3_compact_local",),
                                   ("codex_run5_compact_remote",)])
def test_recorded_codex_sequences_on_a_must_echo_upstream(deepseek: ChatEmulator,
                                                          tmp_path: Path,
                                                          names: tuple[str, ...]) -> None:
    with serving(deepseek, tmp_path, aliases='"gpt-5.5" = "up/deepseek-v4-pro"') as (origin, _):
        # The recorded remote compaction is of ~2,300 tokens no summary can shrink (the gateway
        # refuses such a compaction, issue 46): its tool outputs are made bulky, as Codex's are.
        remote = any("compact_remote" in name for name in names)
        replayer = Replayer(origin, pad="\n" + "build log line, nothing new\n" * 2000 * remote)
        for name in names:
            replayer.replay(recorded(name))
    received = deepseek.received
    # Every request reaches the upstream, but a compaction of a conversation unchanged since its
    # last one is answered from the store (issue 46 item 1).
    assert len(received) >= replayer.sent - replayer.compactions_asked
    assert all(r.status == 200 for r in received)
    assert all(MINT_PREFIX.encode() not in r.raw for r in received)
    for request in received:  # every earlier tool turn carries its reasoning (must-echo)
        for message in request.body["messages"]:
            if message["role"] == "assistant" and message.get("tool_calls"):
                assert message.get("reasoning_content")


def test_recorded_codex_run_on_a_responses_upstream_is_byte_exact(tmp_path: Path) -> None:
    with ResponsesEmulator() as emu, serving(emu, tmp_path, provider="openai-responses",
                                             model="gpt-5.5") as (origin, _):
        replayer = Replayer(origin.replace("/v1", ""))
        replayer.replay(recorded("codex_run1"))
        received = list(emu.received)
    assert [r.status for r in received] == [200, 200]
    first_answer = next(iter(replayer.answers.values()))
    (reasoning,) = [i for i in first_answer if i["type"] == "reasoning"]
    back = [i for i in received[1].body["input"] if i.get("type") == "reasoning"]
    assert back and orjson.dumps(back[0]["encrypted_content"]) == orjson.dumps(
        reasoning["encrypted_content"])
    assert not reasoning["encrypted_content"].startswith(MINT_PREFIX)


def test_what_an_upstream_cannot_take_is_named_in_the_access_log(deepseek: ChatEmulator,
                                                                 tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    (request, _) = recorded("codex_run1")
    with running_gateway(deepseek, tmp_path, access_log=str(log)) as gw:
        replayer = Replayer(gw.server.origin)
        replayer._send({**request, "body": {**request["body"], "model": "ds/deepseek-v4-pro"}},
                       request["body"]["input"])
    (line,) = [orjson.loads(x) for x in log.read_text().splitlines() if '"/v1/responses"' in x]
    for key in ("client_metadata", "prompt_cache_key", "text", "parallel_tool_calls",
                "tools[web_search]", "tools[tool_search]"):
        assert key in line["dropped"]
    (sent,) = deepseek.received
    assert b"web_search" not in sent.raw and b"prompt_cache_key" not in sent.raw
    assert sent.body["reasoning_effort"] == "medium"  # what it has a place for is mapped
    assert {t["function"]["name"] for t in sent.body["tools"]} >= {"exec_command", "apply_patch"}
