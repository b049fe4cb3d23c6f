"""The gateway benchmark compares like with like: its direct floor request is the request the
gateway itself sends upstream for the same client request (same messages, same reasoning)."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import orjson
import pytest
from gateway_support import UPSTREAM_KEY, running_gateway

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import gateway_faces, gateway_rows  # noqa: E402

from thoughtline.testing import ChatEmulator  # noqa: E402


def test_the_direct_floor_sends_what_the_gateway_sends(deepseek: ChatEmulator,
                                                       tmp_path: Path) -> None:
    headers = {"content-type": "application/json", "authorization": f"Bearer {UPSTREAM_KEY}"}
    with running_gateway(deepseek, tmp_path) as gw, httpx.Client(headers=headers,
                                                                 timeout=60) as client:
        stripped, full = gateway_rows.build_history(client, gw.base_url)
        assert len(stripped) == len(full) == 4 * gateway_rows.QUESTIONS
        body = gateway_rows._body(stripped, stream=False, model="ds/deepseek-v4-pro")
        client.post(gw.base_url + "/chat/completions", content=body).raise_for_status()
        floor = orjson.loads(gateway_rows._body(full, stream=False, model="deepseek-v4-pro"))
    sent = deepseek.received[-1].body
    assert {r.status for r in deepseek.received} == {200}
    assert len(sent["messages"]) == len(floor["messages"])
    # Every assistant turn carries its own reasoning — also the ten final answers whose
    # visible text is identical ("The weather tool reports: Sunny, 21 °C").
    assert sent["messages"] == floor["messages"]


@pytest.mark.parametrize("face", gateway_faces.FACES, ids=lambda f: f.name)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_each_face_floor_is_what_the_gateway_sends(deepseek: ChatEmulator, tmp_path: Path,
                                                   face: gateway_faces.Face,
                                                   stream: bool) -> None:
    headers = {"content-type": "application/json", "authorization": f"Bearer {UPSTREAM_KEY}"}
    with running_gateway(deepseek, tmp_path) as gw, httpx.Client(headers=headers,
                                                                 timeout=60) as client:
        conv = gateway_faces.build(client, gw.base_url, face, 3)
        assert conv.turns() == 12
        body = gateway_faces.next_request(face, conv, stream=stream)
        if stream:
            with client.stream("POST", gw.base_url + face.path, content=body) as response:
                response.raise_for_status()
                assert b"".join(response.iter_bytes())
        else:
            client.post(gw.base_url + face.path, content=body).raise_for_status()
        floor = orjson.loads(gateway_faces.floor_request(conv, stream=stream))
    sent = deepseek.received[-1].body
    assert {r.status for r in deepseek.received} == {200}
    # The reasoning the face's client never held is back on every assistant turn upstream.
    assert all(m.get("reasoning_content") for m in sent["messages"] if m["role"] == "assistant")
    assert sent["messages"] == floor["messages"]
    assert sent.get("stream", False) is stream
