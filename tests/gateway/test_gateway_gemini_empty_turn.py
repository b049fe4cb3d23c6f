"""Codex's ``configuration_update`` through the gateway to a Gemini upstream: no empty turn.

Codex 0.171.0 (gpt-6.2-sol) puts a ``configuration_update`` item after the user's prompt; only
OpenAI's Responses API reads it. A Gemini upstream got ``{"role":"model","parts":[{"text":""}]}``
in its place: a part without data, which Gemini refuses ("required oneof field 'data' must have
one initialized field": router-for-me/CLIProxyAPI#3485, kittors/CliRelay#264), and a conversation
ending on the model. The Chat face of the same bug: tests/gateway/test_gateway_sealed_items.py.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
from gateway_support import running_gateway

from thoughtline.testing.gemini_emulator import GeminiEmulator

TOKEN = "tok-gemini-empty-turn"
MODEL = "gemini-3-pro-preview"


def test_a_configuration_update_leaves_no_empty_turn_at_a_gemini_upstream(
        tmp_path: Path) -> None:
    body = {"model": f"up/{MODEL}", "input": [
        {"type": "message", "role": "user", "content": "Say hello in one word."},
        {"type": "configuration_update", "reasoning": {"effort": "low"}}]}
    with GeminiEmulator() as emu, running_gateway(emu, tmp_path, tokens=(TOKEN,), name="up",
                                                  provider="gemini", model=MODEL) as gw:
        reply = httpx.post(gw.server.origin + "/v1/responses", content=orjson.dumps(body),
                           headers={"authorization": f"Bearer {TOKEN}",
                                    "content-type": "application/json"}, timeout=60)
        (request,) = emu.received
    assert request.status == 200, request.raw
    assert reply.status_code == 200, reply.text
    assert request.body["contents"] == [
        {"role": "user", "parts": [{"text": "Say hello in one word."}]}]
    assert b"configuration_update" not in request.raw
