"""Position-critical Responses items (issue 28 item 4; openai-python types/responses): ``program``
items with their ``fingerprint``, ``configuration_update`` items and server-side ``compaction``
items are kept verbatim and go back unchanged, in their original position, only to the service and
model that produced them; anywhere else they stay home (a Chat route gets nothing of them).

SYNTHETIC: no public recording of these items exists; the shapes follow the documented field
names (``fingerprint``, ``encrypted_content``)."""

from __future__ import annotations

import orjson

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.openai_responses import decode_response
from thoughtline.messages import Origin, user

MODEL = "gpt-5.6"
ORIGIN = Origin(api="openai-responses", provider="openai-responses", host="api.openai.com",
                model=MODEL)
PROGRAM = {"type": "program", "id": "prg_1", "fingerprint": "fp_opaque_0001",
           "status": "completed"}
UPDATE = {"type": "configuration_update", "id": "cfg_1", "reasoning": {"effort": "low"}}
COMPACTION = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-compacted-ctx"}
SYNTHETIC = {"id": "resp_1", "object": "response", "status": "completed", "model": MODEL,
             "output": [
                 COMPACTION, UPDATE,
                 {"type": "reasoning", "id": "rs_1", "summary": [],
                  "encrypted_content": "gAAAA-reasoning"},
                 PROGRAM,
                 {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}],
             "usage": {"input_tokens": 10, "output_tokens": 2}}


def _input(api: str, provider: str, base: str | None, model: str) -> list[dict]:
    codec = registry.codec(api)
    route = codec.resolve(provider, base, model)
    turn = decode_response(SYNTHETIC, ORIGIN).message
    plan = replay.plan(route)
    encoded = codec.encode_request([user("go"), turn, user("next")], plan,
                                   RequestSpec(model=model), None)
    body = orjson.loads(encoded.raw)
    return body.get("input") or body.get("messages")


def test_they_go_back_verbatim_in_place_to_their_producer() -> None:
    items = _input("openai-responses", "openai-responses", "https://api.openai.com/v1", MODEL)
    kinds = [i.get("type") for i in items[1:-1]]
    assert kinds == ["compaction", "configuration_update", "reasoning", "program", "message"]
    assert items[1] == COMPACTION and items[2] == UPDATE and items[4] == PROGRAM


def test_they_stay_home_everywhere_else() -> None:
    other_model = _input("openai-responses", "openai-responses", "https://api.openai.com/v1",
                         "gpt-5.5")
    assert not {"compaction", "configuration_update", "program"} & {
        i.get("type") for i in other_model}
    chat = _input("openai-chat", "openrouter", None, MODEL)
    assert "fp_opaque_0001" not in orjson.dumps(chat).decode()
    assert "gAAAA-compacted-ctx" not in orjson.dumps(chat).decode()
