"""The recorded replies the fuzz tests mutate: every whole response and every stream in
``tests/fixtures`` (sources in ``fixtures/SOURCES.md``), per API, as the transport hands them to a
codec (a parsed body; ``(event type, payload)`` pairs). Reads the recordings only; knows no codec.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from helpers_fixtures import CHAT_DIRS, FIXTURES

APIS = ("openai-chat", "anthropic", "gemini", "bedrock", "openai-responses")

#: The folders holding each API's recordings.
_FOLDERS = {"openai-chat": CHAT_DIRS, "anthropic": ("anthropic",), "gemini": ("gemini",),
            "bedrock": ("bedrock",), "openai-responses": ("openai-responses",)}


@dataclass(frozen=True, slots=True)
class Recording:
    name: str
    whole: Any = None  # a parsed whole response
    events: tuple[tuple[str, Any], ...] = ()  # a stream, as (event type, payload) pairs


def _sse(text: str) -> Iterator[tuple[str, Any]]:
    event, data = "", []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data and "\n".join(data).strip() != "[DONE]":
                yield event, orjson.loads("\n".join(data))
            event, data = "", []
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)


def _lines(text: str, api: str) -> list[tuple[str, Any]]:
    rows = [orjson.loads(line) for line in text.splitlines() if line.strip()]
    if api == "bedrock":  # one {"<event type>": payload} object per line
        return [next(iter(row.items())) for row in rows]
    return [("", row) for row in rows]


def _json_array(text: str) -> list[tuple[str, Any]]:
    return [("", element) for element in orjson.loads(text)]


def _streams(path: Path, api: str) -> list[tuple[tuple[str, Any], ...]]:
    text = path.read_text("utf-8")
    name = path.name
    if name.endswith(".sse.txt"):
        events = list(_sse(text))
    elif name.endswith((".chunks.txt", ".decoded.jsonl")):
        events = _lines(text, api)
    else:
        events = _json_array(text)
    if api != "openai-responses":
        return [tuple(events)]
    out: list[list[tuple[str, Any]]] = []  # vercel chunk files hold several responses
    for event in events:
        if not out or (isinstance(event[1], dict)
                       and event[1].get("type") == "response.created"):
            out.append([])
        out[-1].append(event)
    return [tuple(stream) for stream in out]


def _is_whole(name: str) -> bool:
    return name.endswith(".json") and ".request." not in name


def _is_stream(name: str) -> bool:
    return name.endswith((".sse.txt", ".chunks.txt", ".decoded.jsonl",
                          ".json-array-stream.txt"))


@cache
def recordings(api: str) -> tuple[Recording, ...]:
    """Every recording of ``api``, sorted by name (whole responses and streams)."""
    out: list[Recording] = []
    for folder in _FOLDERS[api]:
        for path in sorted((FIXTURES / folder).iterdir()):
            if not path.is_file():
                continue
            rel = f"{folder}/{path.name}"
            if _is_whole(path.name):
                out.append(Recording(rel, whole=orjson.loads(path.read_bytes())))
            elif _is_stream(path.name):
                out.extend(Recording(f"{rel}#{i}", events=stream)
                           for i, stream in enumerate(_streams(path, api)))
    return tuple(out)


def wholes(api: str) -> list[Recording]:
    return [r for r in recordings(api) if r.whole is not None]


def streams(api: str) -> list[Recording]:
    return [r for r in recordings(api) if r.events]
