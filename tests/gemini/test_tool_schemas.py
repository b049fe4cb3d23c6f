"""Tool schemas on the Gemini wire: JSON Schema goes as ``parametersJsonSchema``, verbatim.

``functionDeclarations[].parameters`` is Gemini's OpenAPI-subset ``Schema``: a JSON Schema keyword
it has no field for (``additionalProperties``, ``$schema``, ``propertyNames``, Codex's non-standard
``encrypted``) fails the whole request with a 400. The emulator plays that rule (so these tests can
fail), and a Session whose tool carries such keywords completes a tool loop because the codec sends
the schema, byte for byte, in ``parametersJsonSchema`` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from thoughtline import Session, ToolResult, ToolSpec, TurnOptions, config, open_store
from thoughtline.testing.gemini_emulator import GeminiEmulator

MODEL = "gemini-3-pro-preview"
KEY = {"x-goog-api-key": "test-key"}
# Shaped like Codex's function tools (tests/fixtures/clients/codex_lite_run1.requests.jsonl):
# closed objects, and a non-standard ``encrypted`` flag on a nested property.
SCHEMA = {"type": "object",
          "properties": {"city": {"type": "string", "description": "The city"},
                         "note": {"type": "object",
                                  "properties": {"text": {"type": "string", "encrypted": True}},
                                  "additionalProperties": False}},
          "required": ["city"], "additionalProperties": False}
PROMPT = "weather in Rome?"


@pytest.fixture(scope="module")
def emu() -> Iterator[GeminiEmulator]:
    with GeminiEmulator() as emulator:
        yield emulator


def post(url: str, declaration: dict[str, Any], headers: dict[str, str] = KEY) -> httpx.Response:
    body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "tools": [{"functionDeclarations": [
                {"name": "weather", "description": "w", **declaration},
                {"name": "clock", "description": "c", "parameters": {"type": "object"}}]}]}
    return httpx.post(url, content=orjson.dumps(body), headers=headers, timeout=10)


def ai_studio(emu: GeminiEmulator) -> str:
    return f"{emu.base_url}/models/{MODEL}:generateContent"


def test_parameters_with_json_schema_keywords_fail_the_whole_request(emu: GeminiEmulator) -> None:
    response = post(ai_studio(emu), {"parameters": SCHEMA})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    where = "tools[0].function_declarations[0].parameters"
    lines = [f"Invalid JSON payload received. Unknown name \"{key}\" at '{path}': "
             "Cannot find field." for key, path in
             [("encrypted", f"{where}.properties[1].value.properties[0].value"),
              ("additionalProperties", f"{where}.properties[1].value"),
              ("additionalProperties", where)]]
    # Every offending key is reported, one line each, on a path in proto names with map
    # entries by position.
    assert sorted(error["message"].split("\n")) == sorted(lines)
    (violations,) = error["details"]
    assert violations["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert sorted(v["description"] for v in violations["fieldViolations"]) == sorted(lines)


@pytest.mark.parametrize("key", ["additionalProperties", "$schema", "propertyNames", "strict",
                                 "encrypted"])
@pytest.mark.parametrize("depth", ["top", "property", "items", "anyOf"])
def test_each_unknown_keyword_is_refused_at_any_depth(emu: GeminiEmulator, key: str,
                                                     depth: str) -> None:
    leaf = {"type": "string", key: False}
    schema, at = {
        "top": ({"type": "object", key: False}, ""),
        "property": ({"type": "object", "properties": {"a": leaf}}, ".properties[0].value"),
        "items": ({"type": "object", "properties": {"a": {"type": "array", "items": leaf}}},
                  ".properties[0].value.items"),
        "anyOf": ({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, leaf]}}},
                  ".properties[0].value.any_of[1]"),
    }[depth]
    response = post(ai_studio(emu), {"parameters": schema})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        f"Invalid JSON payload received. Unknown name \"{key}\" at "
        f"'tools[0].function_declarations[0].parameters{at}': Cannot find field.")


def test_the_schema_subset_is_accepted_in_parameters(emu: GeminiEmulator) -> None:
    schema = {"type": "object", "title": "t", "description": "d", "nullable": False,
              "properties": {"n": {"type": "integer", "format": "int32", "minimum": 0,
                                   "maximum": 9, "default": 1, "example": 2},
                             "s": {"type": "string", "enum": ["a", "b"], "minLength": 1,
                                   "maxLength": 2, "pattern": "^[ab]$"},
                             "l": {"type": "array", "minItems": 0, "maxItems": 3,
                                   "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}},
              "required": ["n"], "minProperties": 1, "maxProperties": 3,
              "propertyOrdering": ["n", "s", "l"], "property_ordering": ["n", "s", "l"]}
    assert post(ai_studio(emu), {"parameters": schema}).status_code == 200


def test_parameters_json_schema_takes_any_json_schema(emu: GeminiEmulator) -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **SCHEMA,
              "propertyNames": {"pattern": "^[a-z]+$"}, "$defs": {"x": {"const": 1}}}
    response = post(ai_studio(emu), {"parametersJsonSchema": schema})
    assert response.status_code == 200, response.text
    (call,) = [p["functionCall"] for p in
               response.json()["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert call["name"] == "weather" and isinstance(call["args"]["city"], str)


def test_both_parameters_fields_on_one_declaration_is_refused(emu: GeminiEmulator) -> None:
    response = post(ai_studio(emu), {"parameters": {"type": "object"},
                                     "parametersJsonSchema": {"type": "object"}})
    assert response.status_code == 400
    assert "mutually exclusive" in response.json()["error"]["message"]


def test_vertex_schema_has_additional_properties_but_not_the_rest(emu: GeminiEmulator) -> None:
    url = f"{emu.vertex_base_url()}/{MODEL}:generateContent"
    bearer = {"authorization": "Bearer t"}
    closed = {"type": "object", "properties": {"city": {"type": "string"}},
              "additionalProperties": False}
    assert post(url, {"parameters": closed}, bearer).status_code == 200
    refused = post(url, {"parameters": SCHEMA}, bearer)
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == (
        "Invalid JSON payload received. Unknown name \"encrypted\" at "
        "'tools[0].function_declarations[0].parameters.properties[1].value.properties[0].value'"
        ": Cannot find field.")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_session_sends_the_schema_verbatim_and_completes_a_tool_loop(
        tmp_path: Path, emu: GeminiEmulator, stream: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key")
    provider = config.provider("gemini", base_url=emu.base_url, model=MODEL)
    tool = ToolSpec(name="weather", description="Current weather for a city", parameters=SCHEMA)
    session = Session.create(open_store(None, tmp_path), provider, tools=(tool,))
    start = len(emu.received)

    async def run() -> str:
        done = await session.send(PROMPT, TurnOptions(stream=stream))
        assert done.message.tool_calls
        while done.message.tool_calls:
            done = await session.send([ToolResult(call_id=c.id, content="20 C")
                                       for c in done.message.tool_calls],
                                      TurnOptions(stream=stream))
        await session.aclose()
        return done.message.text

    assert asyncio.run(run())
    sent = emu.received[start:]
    assert len(sent) >= 2 and all(r.status == 200 for r in sent)
    schema_bytes = orjson.dumps(SCHEMA)
    for record in sent:
        (declaration,) = record.body["tools"][0]["functionDeclarations"]
        assert "parameters" not in declaration
        assert orjson.dumps(declaration["parametersJsonSchema"]) == schema_bytes
        assert b'"parametersJsonSchema":' + schema_bytes in record.raw
