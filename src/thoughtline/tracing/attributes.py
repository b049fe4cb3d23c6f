"""Span attributes: the OpenTelemetry GenAI semantic conventions and thoughtline's own.

Owns the attribute names and how each is read from what thoughtline already records: an upstream
attempt's request-log record (``turn``: the carriers it sent, the verdicts it was built with, the
fingerprints repaired, the usage the codec decoded) and a gateway request's access-log line
(rehydration by key kind, minted values, what was dropped). It computes no codec fact and reads no
wire field; it imports no OpenTelemetry (values are plain ``str``/``int``/``bool`` and sequences).

GenAI names follow open-telemetry/semantic-conventions-genai (``gen_ai.provider.name``,
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.reasoning.output_tokens``,
``gen_ai.input.messages``/``gen_ai.output.messages`` with ``{"type": "reasoning"}`` parts when
content capture is on). thoughtline's own are under ``thoughtline.``. Never a key, a token or
a header: neither log holds one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import orjson

if TYPE_CHECKING:
    from thoughtline.messages import Message

Value: TypeAlias = str | int | float | bool | Sequence[str] | Sequence[int]
Attributes: TypeAlias = dict[str, Value]
#: A span's ``SpanKind``: a gateway request, an upstream request, a turn of the library.
Kind: TypeAlias = Literal["server", "client", "internal"]

OPERATION = "chat"
RESEND_COUNT = "http.request.resend_count"
NS = "thoughtline"

#: thoughtline provider ids → the conventions' well-known ``gen_ai.provider.name`` values; any
#: other provider id is its own name (the conventions allow custom values).
PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai", "openai-responses": "openai",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock", "bedrock-anthropic": "aws.bedrock",
    "gemini": "gcp.gemini", "gemini-openai": "gcp.gemini", "gemini-interactions": "gcp.gemini",
    "gemini-interactions-stateless": "gcp.gemini",
    "vertex-gemini": "gcp.vertex_ai", "vertex-anthropic": "gcp.vertex_ai",
    "vertex-gemini-interactions": "gcp.vertex_ai",
    "vertex-gemini-interactions-stateless": "gcp.vertex_ai",
    "foundry": "azure.ai.inference",
    "deepseek": "deepseek", "deepseek-responses": "deepseek", "deepseek-anthropic": "deepseek",
    "groq": "groq", "mistral": "mistral_ai", "xai": "x_ai", "xai-responses": "x_ai",
}

#: A request-log record's ``usage`` fields → GenAI usage attributes (``input`` is the whole
#: prompt, cached tokens included, as the conventions count it).
USAGE = {"input": "gen_ai.usage.input_tokens", "output": "gen_ai.usage.output_tokens",
         "reasoning": "gen_ai.usage.reasoning.output_tokens",
         "cache_read": "gen_ai.usage.cache_read.input_tokens"}

#: Access-log fields copied as they are (counts, names, flags).
_REQUEST_FIELDS = {"face": "face", "upstream": "upstream", "model": "model", "stream": "stream",
                   "session": "session.id", "tenant": "tenant", "rehydrated": "rehydrated",
                   "unmatched": "rehydration.unmatched", "minted_rejected": "minted.rejected",
                   "minted_issued": "minted.issued", "compaction": "compaction",
                   "outcome": "outcome", "error": "error", "bytes_in": "bytes_in",
                   "lessons_unsaved": "lessons_unsaved"}
#: Request-log fields read above by name; every other one is the codec's summary of what the
#: request carried (carriers, blocks, pads, body extras …), flattened as it is.
_ATTEMPT_OWN = frozenset({
    "time", "session", "route", "api", "provider", "host", "model", "status", "outcome",
    "attempt", "stream", "duration_ms", "retries", "verdicts", "repairs", "purpose", "usage",
    "response_model", "finish", "prompt_tokens", "reports", "compaction_left_out"})
#: The access log's rehydration key kinds → how a resent turn was found.
_BY = {"call": "id", "context": "content", "content": "content", "mint": "minted"}


def provider_name(provider: str) -> str:
    return PROVIDER_NAMES.get(provider, provider)


def request_start(method: str, path: str) -> Attributes:
    return {"http.request.method": method, "url.path": path, "http.route": path}


def request_end(line: Mapping[str, Any]) -> Attributes:
    """A gateway request's attributes, from its access-log ``line``."""
    out: Attributes = {}
    if isinstance(line.get("status"), int):
        out["http.response.status_code"] = line["status"]
    for field, name in _REQUEST_FIELDS.items():
        value = line.get(field)
        if isinstance(value, str | int | bool) and value != "":
            out[f"{NS}.{name}"] = value
    by: dict[str, int] = {}
    for kind, count in (line.get("rehydrated_by") or {}).items():
        key = _BY.get(kind, "content")
        by[key] = by.get(key, 0) + int(count)
    for key, count in by.items():
        out[f"{NS}.rehydrated.{key}"] = count
    dropped = [str(name) for name in line.get("dropped") or ()]
    if dropped:  # the client's parameters the upstream's API has no place for
        out[f"{NS}.dropped"] = dropped
        out[f"{NS}.dropped.reason"] = "no place in the upstream API"
    wordings = [str(w) for w in line.get("wordings") or ()]
    if wordings:
        out[f"{NS}.verdicts.wordings"] = wordings
    return out


def attempt_start(provider: str, model: str, host: str) -> Attributes:
    out: Attributes = {"gen_ai.operation.name": OPERATION,
                       "gen_ai.provider.name": provider_name(provider),
                       "gen_ai.request.model": model, f"{NS}.provider": provider}
    if host:
        out["server.address"] = host
    return out


def turn_start(provider: str, model: str, session: str, purpose: str) -> Attributes:
    """A turn's attributes (its attempts carry the GenAI operation and usage: a turn span has
    no ``gen_ai.operation.name``, so nothing counts its tokens twice)."""
    out: Attributes = {"gen_ai.provider.name": provider_name(provider),
                       "gen_ai.request.model": model, f"{NS}.provider": provider}
    if session:
        out[f"{NS}.session.id"] = session
    if purpose:
        out[f"{NS}.purpose"] = purpose
    return out


def turn_end(outcome: str) -> Attributes:
    return {f"{NS}.outcome": outcome}


def attempt_end(record: Mapping[str, Any]) -> Attributes:
    """An upstream attempt's attributes, from its request-log ``record``."""
    out: Attributes = {}
    if isinstance(record.get("status"), int):
        out["http.response.status_code"] = record["status"]
    if record.get("response_model"):
        out["gen_ai.response.model"] = str(record["response_model"])
    if record.get("finish"):
        out["gen_ai.response.finish_reasons"] = [str(record["finish"])]
    for field, name in USAGE.items():
        value = (record.get("usage") or {}).get(field)
        if isinstance(value, int) and (value or field in ("input", "output")):
            out[name] = value
    for field in ("route", "api", "outcome", "attempt", "retries", "purpose"):
        value = record.get(field)
        if isinstance(value, str | int) and value != "":
            out[f"{NS}.{field}"] = value
    if record.get("session"):
        out[f"{NS}.session.id"] = str(record["session"])
    for field, value in record.items():
        if field not in _ATTEMPT_OWN:  # the codec's summary of what the request carried
            out.update(_flattened(f"{NS}.{field}", value))
    verdicts = [v for v in record.get("verdicts") or () if isinstance(v, Mapping)]
    out[f"{NS}.verdicts.learned"] = len(verdicts)
    dropped = sorted({str(d) for v in verdicts for d in v.get("drop") or ()})
    if dropped:  # carriers a learned verdict leaves out of this request
        out[f"{NS}.dropped"] = dropped
        out[f"{NS}.dropped.reason"] = "; ".join(
            str(v["reason"]) for v in verdicts if v.get("reason"))
    repairs = [str(f) for f in record.get("repairs") or ()]
    out[f"{NS}.fingerprints.added"] = len(repairs)
    left_out = record.get("compaction_left_out")
    if isinstance(left_out, Mapping):
        out[f"{NS}.compaction_left_out"] = int(left_out.get("count", 0))
    return out


def _flattened(name: str, value: Any) -> Attributes:
    """A summary field as attributes: a count or flag as it is; counts by name as the sorted
    names (``name``) and each count (``name.<key>``); a list of names as it is."""
    if isinstance(value, bool | int):
        return {name: value}
    if isinstance(value, Mapping) and all(isinstance(v, int) for v in value.values()):
        counts = {str(k): int(v) for k, v in value.items() if v}
        return {name: sorted(counts), **{f"{name}.{k}": v for k, v in counts.items()}}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {name: list(value)} if value else {}
    return {}


def content(sent: Sequence[Message], answer: Message | None) -> Attributes:
    """``gen_ai.input.messages`` and ``gen_ai.output.messages`` (JSON, the conventions' part
    shapes): only ever called when the user opted in to content capture."""
    out: Attributes = {"gen_ai.input.messages": _json([_message(m) for m in sent])}
    if answer is not None:
        out["gen_ai.output.messages"] = _json([_message(answer)])
    return out


def _message(message: Message) -> dict[str, Any]:
    from thoughtline.messages import Opaque, Reasoning, Text, ToolCall, ToolResult

    parts: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case Text():
                parts.append({"type": "text", "content": part.text})
            case Reasoning():
                parts.append({"type": "reasoning",
                              "content": part.text or part.summary or ""})
            case ToolCall():
                parts.append({"type": "tool_call", "id": part.id, "name": part.name,
                              "arguments": part.arguments})
            case ToolResult():
                parts.append({"type": "tool_call_response", "id": part.call_id,
                              "response": part.content})
            case Opaque():
                pass  # provider-opaque values are not content a person reads
    return {"role": message.role, "parts": parts}


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
