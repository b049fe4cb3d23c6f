"""The recorded replies the fuzz tests mutate: every whole response and every stream in
``tests/fixtures`` (sources in ``fixtures/SOURCES.md``), per API, as the transport hands them to a
codec (a parsed body; ``(event type, payload)`` pairs). Reads the recordings only; knows no codec.

Also the one mutator every fuzz test shares: ``mutate`` changes one thing in a JSON-like value
(a value replaced by one of ``ODD``/``ODD_JSON``, deleted, duplicated or wrapped). The odd values
include deep nests and JSON text nested as deep (arguments strings hold JSON the body's own
nesting bound does not see).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

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


# --- the shared mutator ---------------------------------------------------------------------------

def deep(levels: int, inner: Any = 1) -> Any:
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def deep_text(levels: int) -> str:
    """JSON nesting ``levels`` deep, as text: what a tool call's arguments string may hold."""
    return "[" * levels + "1" + "]" * levels


def _odd(max_int: int, max_depth: int) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-max_int, max_int),
        st.sampled_from([2 ** 63, 2 ** 64, -(2 ** 63) - 1, 1e300, -0.5, 0.5]),
        st.floats(allow_nan=max_int < 2 ** 64, allow_infinity=max_int < 2 ** 64),
        st.text(max_size=8), st.just(""), st.just([]), st.just({}),
        st.lists(st.integers(-5, 5), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
        st.integers(2, max_depth).map(deep), st.integers(100, 300).map(deep_text))


#: Replacement values for replies: anything Python may hold, beyond what JSON parsing gives.
ODD = _odd(2 ** 80, 300)
#: For client bodies (they go over HTTP as JSON): what orjson can write.
ODD_JSON = _odd(2 ** 63 - 1, 250)

OPS = ("replace", "replace", "replace", "delete", "duplicate", "wrap")
STREAM_OPS = ("payload", "payload", "payload", "payload", "drop", "repeat", "retype", "cut")


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*at, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*at, index))


def mutate(value: Any, pick: int | tuple[Any, ...], op: str, new: Any) -> Any:
    """``value`` (copied) with one change at the picked path."""
    out = copy.deepcopy(value)
    if isinstance(pick, tuple):
        path = pick
    else:
        paths = list(_paths(out))
        path = paths[pick % len(paths)]
    if not path:
        return new if op == "replace" else [out] if op == "wrap" else out
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif op == "wrap":
        parent[last] = {"value": parent[last]} if isinstance(new, dict) else [parent[last]]
    else:
        parent[last] = copy.deepcopy(new)
    return out


INDEX = st.integers(0, 10 ** 6)
