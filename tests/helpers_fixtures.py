"""Loading the recorded wire fixtures under ``tests/fixtures`` (sources in ``fixtures/SOURCES.md``).

Owns the three on-disk shapes of a Chat Completions exchange: a whole response (``.json``), real
SSE text (``.sse.txt``: ``data:`` lines, ``:`` comments, blank-line separators, ``[DONE]``) and
vercel/ai ``.chunks.txt`` (one SSE ``data:`` JSON payload per line, no framing). Knows nothing about
thoughtline's codecs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).parent / "fixtures"

#: The fixture folders that hold OpenAI-compatible Chat Completions traffic.
CHAT_DIRS = ("openai-compat", "openrouter", "gemini-openai-compat")


def fixture(rel: str) -> Path:
    path = FIXTURES / rel
    if not path.is_file():
        raise FileNotFoundError(f"missing test fixture {rel} (see tests/fixtures/SOURCES.md)")
    return path


def load_json(rel: str) -> Any:
    return orjson.loads(fixture(rel).read_bytes())


def sse_events(text: str) -> Iterator[str]:
    """The ``data`` of each SSE event (WHATWG rules: comments skipped, data lines joined)."""
    data: list[str] = []
    for raw in text.splitlines():
        if raw == "":
            if data:
                yield "\n".join(data)
                data = []
            continue
        if raw.startswith(":"):
            continue  # a comment, e.g. ": OPENROUTER PROCESSING"
        name, _, value = raw.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def sse_payloads(text: str) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE body, up to (not including) ``[DONE]``."""
    out: list[dict[str, Any]] = []
    for data in sse_events(text):
        if data.strip() == "[DONE]":
            break
        out.append(orjson.loads(data))
    return out


def chunk_lines(text: str) -> list[dict[str, Any]]:
    """vercel/ai ``.chunks.txt``: one JSON payload per non-empty line."""
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def stream_chunks(rel: str) -> list[dict[str, Any]]:
    text = fixture(rel).read_text("utf-8")
    if rel.endswith(".sse.txt"):
        return sse_payloads(text)
    if rel.endswith(".chunks.txt"):
        return chunk_lines(text)
    raise ValueError(f"{rel} is not a stream fixture")


def _rel(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


def chat_response_fixtures() -> list[str]:
    """Every whole (non-streamed) Chat Completions response in the chat fixture folders."""
    out = []
    for folder in CHAT_DIRS:
        for path in sorted((FIXTURES / folder).glob("*.json")):
            if ".request." in path.name:
                continue
            out.append(_rel(path))
    return out


def chat_stream_fixtures() -> list[str]:
    """Every streamed Chat Completions response (``.sse.txt`` and ``.chunks.txt``)."""
    out = []
    for folder in CHAT_DIRS:
        for pattern in ("*.sse.txt", "*.chunks.txt"):
            out.extend(_rel(p) for p in sorted((FIXTURES / folder).glob(pattern)))
    return sorted(out)


def replay_request_for(response_rel: str) -> str | None:
    """The recorded next request (``iN+1.request.json``) that replayed this response, if any."""
    name = Path(response_rel).name
    for marker in (".response.json", ".response.sse.txt"):
        if marker in name:
            stem, _, _ = name.partition(marker)
            base, _, turn = stem.rpartition(".i")
            if not turn.isdigit():
                return None
            candidate = Path(response_rel).parent / f"{base}.i{int(turn) + 1}.request.json"
            return candidate.as_posix() if (FIXTURES / candidate).is_file() else None
    return None


def assistant_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m.get("role") == "assistant"]
