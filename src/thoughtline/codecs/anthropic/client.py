"""The client side of the Messages API: what a gateway reads from Anthropic clients (Claude Code).

Owns parsing a client's ``POST /v1/messages`` body and headers into canonical terms:

- top-level ``system`` blocks → leading ``system`` messages (``cache_control`` kept natively);
  a ``role: "system"`` message inside ``messages`` stays where it is, its ``output_config`` kept;
- ``thinking`` → ``Reasoning`` (signed when it carries a real signature), ``redacted_thinking`` →
  ``Reasoning(kind="redacted")``; a signature the gateway minted (prefix ``MINT_PREFIX``, which no
  base64 signature contains) is not a provider's: the block is readable text only and the value
  goes to ``ClientRequest.minted`` for the gateway to verify; ``"signature": ""`` is unsigned text;
- ``tool_use`` → ``ToolCall`` (``input`` as JSON text), ``tool_result`` → ``ToolResult`` (text of
  its content list, ``is_error``); a user message's results become one ``tool`` turn followed by a
  ``user`` turn for its other blocks; images, documents and other user blocks are kept verbatim
  as ``Opaque`` parts, the whole user message verbatim on the turn for an Anthropic upstream;
- the parameters, per target API: an Anthropic upstream gets every key verbatim (``tools``,
  ``system``, ``thinking``, ``output_config``, ``context_management``, ``metadata`` …) and the
  ``anthropic-version`` / ``anthropic-beta`` headers; another API gets what it has a place for
  (``output_config.effort`` → ``reasoning_effort``, ``stop_sequences`` → ``stop``, ``tool_choice``
  in Chat terms) and the rest is listed as dropped;
- the session the client names: ``X-Claude-Code-Session-Id``, else ``metadata.user_id``'s
  ``session_id`` (a JSON string);
- ``GET /v1/models`` for an Anthropic client (it sends ``anthropic-version``): one page of
  ``model`` objects, ``limit`` (default 20, 1 to 1000), ``after_id`` / ``before_id``, and
  ``has_more``, ``first_id``, ``last_id``.

Rendering answers is ``reply``'s. Pure functions; no I/O.

Facts: the Messages API reference (platform.claude.com/docs/en/api/messages), the Models API
(platform.claude.com/docs/en/api/models/list; the SDK's ``ModelInfo`` and ``SyncPage``), Claude
Code's gateway protocol (code.claude.com/docs/en/llm-gateway-protocol: it reads
``GET /v1/models?limit=1000``) and the recorded Claude Code requests (tests/fixtures/clients;
docs/claude-code.md; code.claude.com/docs/en/llm-gateway-protocol).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.codecs.anthropic import toolchanges
from thoughtline.codecs.anthropic.reply import (
    MessageStreamWriter,
    count_tokens_json,
    error_frame,
    error_json,
    error_type,
    message_json,
)
from thoughtline.codecs.anthropic.wire import (
    API,
    BETA_HEADER,
    CARRIED,
    COMPACTION,
    CONTENT,
    FALLBACK,
    IN_PLACE,
    NS,
    REDACTED,
    TEXT,
    THINKING,
    TOOL_ADDITION,
    TOOL_REMOVAL,
    TOOL_RESULT,
    TOOL_USE,
    TOOLS_AS_SENT,
    VERSION_HEADER,
    text_of,
)
from thoughtline.codecs.face import (
    MINT_PREFIX,
    ClientRequest,
    ClientRequestError,
    ItemMemo,
    Minted,
    Walked,
    array_at,
    is_minted,
    walk,
)
from thoughtline.messages import (
    Message,
    Opaque,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
)

CLIENT_API = API
SESSION_HEADER = "x-claude-code-session-id"

__all__ = ["CLIENT_API", "MINT_PREFIX", "SESSION_HEADER", "MessageStreamWriter", "asks_models",
           "count_tokens_json", "error_frame", "error_json", "error_type", "is_minted", "items_of",
           "message_json", "models_json", "parse_request"]

#: Body keys the face turns into canonical values itself (every other key is a parameter).
_HANDLED = frozenset({"model", "messages", "stream"})
#: Keys every upstream gets in canonical form (an Anthropic one also verbatim, as given).
_CANONICAL = frozenset({"system", "tools"})
#: Neutral parameter names other codecs read (``RequestSpec.params``), per target API.
_NEUTRAL_FOR: Mapping[str, frozenset[str]] = {
    "openai-chat": frozenset({"max_tokens", "temperature", "top_p", "stop", "reasoning_effort",
                              "tool_choice"}),
    "gemini": frozenset({"max_tokens", "temperature", "top_p", "top_k", "stop",
                         "reasoning_effort"}),
    "bedrock": frozenset({"max_tokens", "temperature", "top_p", "stop", "reasoning_effort"}),
    "openai-responses": frozenset({"max_tokens", "temperature", "top_p", "reasoning_effort"}),
}


# --- the request ----------------------------------------------------------------------------------


def items_of(body: Any) -> list[Any] | None:
    """The body's conversation items: the top-level array its parse converts item by item
    (None: the body has none). The gateway checks their nesting apart (``memo``)."""
    return array_at(body, "messages")


def smallest_request(model: str) -> dict[str, Any]:
    """The smallest request a Messages client sends (a one-line question): what a server parses
    at start to load this face before its first real request."""
    return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def parse_request(body: Any, headers: Mapping[str, str] | None = None,
                  memo: ItemMemo | None = None) -> ClientRequest:
    """Read a parsed JSON body and the request headers (any case); raises
    ``ClientRequestError`` naming what is wrong. ``memo``: continues the messages' conversion
    from an earlier request's (``face.walk``)."""
    if not isinstance(body, Mapping):
        raise ClientRequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ClientRequestError("`model` must be a non-empty string", param="model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ClientRequestError("`messages` must be a non-empty array", param="messages")
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    walked = walk(raw, _convert, memo)
    messages, minted = walked.messages, walked.minted
    system = _system(body.get("system"))
    params = {k: v for k, v in body.items() if k not in _HANDLED}
    params_for, dropped_for = _params_for(
        params, tuple(sorted({*_unmapped(system), *walked.own})))
    passed = {k: lowered[k] for k in (VERSION_HEADER, BETA_HEADER) if lowered.get(k)}
    offset = len(system)
    return ClientRequest(
        model=model, messages=(*system, *messages),
        tools=toolchanges.applied(_tools(body.get("tools")), walked.tool_changes),
        params=params, stream=body.get("stream") is True, api=API, params_for=params_for,
        dropped_for=dropped_for, headers_for={API: passed},
        session_hint=_session(lowered, body.get("metadata")),
        minted=tuple(Minted(message=m.message + offset, value=m.value) for m in minted))


def _session(headers: Mapping[str, str], metadata: Any) -> str:
    named = headers.get(SESSION_HEADER, "").strip()
    if named:
        return named
    user = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user, str) and user.startswith("{"):
        try:
            found = orjson.loads(user)
        except orjson.JSONDecodeError:
            return ""
        if isinstance(found, Mapping):
            return text_of(found.get("session_id")).strip()
    return ""


def _system(raw: Any) -> list[Message]:
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [Message(role="system", parts=(Text(text=raw),))]
    if not isinstance(raw, list):
        raise ClientRequestError("`system` must be a string or an array of text blocks",
                                 param="system")
    parts = tuple(_text_block(block, f"system[{i}]") for i, block in enumerate(raw))
    return [Message(role="system", parts=parts)] if parts else []


def _text_block(block: Any, where: str) -> Text:
    if not isinstance(block, Mapping) or block.get("type") != TEXT:
        raise ClientRequestError(f"{where} must be a text block", param=where)
    extras = {k: v for k, v in block.items() if k not in ("type", TEXT)}
    return Text(text=text_of(block.get(TEXT)), native={NS: extras} if extras else {})


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": TEXT, TEXT: content}]
    if not isinstance(content, list):
        raise ClientRequestError(f"{where}.content must be a string or an array of blocks",
                                 param=f"{where}.content")
    for index, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise ClientRequestError(f"{where}.content[{index}] must be a block with a type",
                                     param=f"{where}.content[{index}]")
    return content


def _convert(raw: Sequence[Any], start: int, walked: Walked) -> None:
    """``raw[start:]`` onto ``walked`` (``face.Convert``): each item on its own."""
    out, minted = walked.messages, walked.minted
    for index in range(start, len(raw)):
        item = raw[index]
        where = f"messages[{index}]"
        if not isinstance(item, Mapping):
            raise ClientRequestError(f"{where} must be an object", param=where)
        role = item.get("role")
        blocks = _blocks(item.get("content"), where)
        start_at = len(out)
        walked.tool_changes.extend(toolchanges.changes((item,)))
        if role == "assistant":
            message, value = _assistant(blocks, where)
            if value:
                minted.append(Minted(message=len(out), value=value))
            out.append(message)
        elif role == "user":
            out.extend(_user(blocks, item))
        elif role == "system":  # turn-scoped: kept in place, never moved (docs/claude-code.md)
            extras = {k: v for k, v in item.items() if k != "role"}
            parts = tuple(_text_block(b, f"{where}.content[{i}]") for i, b in enumerate(blocks))
            out.append(Message(role="system", parts=parts,
                               native={NS: {IN_PLACE: True, **extras}}))
        else:
            raise ClientRequestError(f"{where}.role {role!r} is not one of user, assistant, "
                                     "system", param=f"{where}.role")
        for kind in _unmapped(out[start_at:]):
            if kind not in walked.own:
                walked.own.append(kind)


def _assistant(blocks: list[Any], where: str) -> tuple[Message, str]:
    parts: list[Part] = []
    minted = ""
    for position, block in enumerate(blocks):
        kind = block["type"]
        if kind == THINKING:
            signature = text_of(block.get("signature"))
            text = text_of(block.get(THINKING))
            if is_minted(signature):
                minted = minted or signature
                signature = ""
            parts.append(Reasoning(kind="signed", text=text, signature=signature)
                         if signature else Reasoning(kind="text", text=text))
        elif kind == REDACTED:
            parts.append(Reasoning(kind="redacted", data=text_of(block.get("data")) or None))
        elif kind == TEXT:
            parts.append(_text_block(block, f"{where}.content[{position}]"))
        elif kind == TOOL_USE:
            parts.append(ToolCall(id=text_of(block.get("id")), name=text_of(block.get("name")),
                                  arguments=orjson.dumps(block.get("input") or {}).decode()))
        else:  # server tool blocks, compaction …: replayed verbatim to an Anthropic upstream
            parts.append(Opaque(native={NS: block}))
    return Message(role="assistant", parts=tuple(parts)), minted


def _user(blocks: list[Any], item: Mapping[str, Any]) -> list[Message]:
    results: list[Part] = []
    rest: list[Part] = []
    for block in blocks:
        kind = block["type"]
        if kind == TOOL_RESULT:
            results.append(ToolResult(call_id=text_of(block.get("tool_use_id")),
                                      content=_result_text(block.get("content")),
                                      is_error=block.get("is_error") is True))
        elif kind == TEXT:
            rest.append(_text_block(block, "user text"))
        else:  # image, document, search_result …: no canonical meaning, kept in place
            rest.append(Opaque(native={NS: block}))
    # The message as the client sent it, for an Anthropic upstream (byte for byte); the
    # canonical parts are what every other API is given.
    native = {NS: {CONTENT: item.get("content")}}
    out = []
    if results:
        out.append(Message(role="tool", parts=tuple(results), native=native))
    if rest:
        out.append(Message(role="user", parts=tuple(rest),
                           native={NS: {CARRIED: True}} if results else native))
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get(TEXT)) for c in content
                         if isinstance(c, Mapping) and c.get("type") == TEXT)
    return ""


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ClientRequestError("`tools` must be an array", param="tools")
    out = []
    for index, tool in enumerate(raw):
        if not isinstance(tool, Mapping) or not text_of(tool.get("name")):
            raise ClientRequestError(f"tools[{index}] must be a tool with a name",
                                     param=f"tools[{index}]")
        spec = toolchanges.spec_of(tool)
        if spec is not None:  # (None: a server tool, web_search …: only Anthropic runs it)
            out.append(spec)
    return tuple(out)


# --- parameters per target API --------------------------------------------------------------------


def _neutral(params: Mapping[str, Any]) -> dict[str, Any]:
    """The client's parameters in the neutral names other codecs read."""
    out: dict[str, Any] = {}
    for name in ("max_tokens", "temperature", "top_p", "top_k"):
        if params.get(name) is not None:
            out[name] = params[name]
    if isinstance(params.get("stop_sequences"), list) and params["stop_sequences"]:
        out["stop"] = params["stop_sequences"]
    config = params.get("output_config")
    effort = config.get("effort") if isinstance(config, Mapping) else None
    if isinstance(effort, str) and effort:
        out["reasoning_effort"] = effort
    choice = _chat_tool_choice(params.get("tool_choice"))
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _chat_tool_choice(choice: Any) -> Any:
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    if kind in ("auto", "none"):
        return kind
    if kind == "any":
        return "required"
    if kind == "tool" and text_of(choice.get("name")):
        return {"type": "function", "function": {"name": choice["name"]}}
    return None


_MAPPED_FROM = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p",
                "top_k": "top_k", "stop": "stop_sequences", "reasoning_effort": "output_config",
                "tool_choice": "tool_choice"}


def _unmapped(messages: list[Message]) -> tuple[str, ...]:
    """What of the messages only an Anthropic upstream takes: verbatim block kinds (images,
    documents …) and cache breakpoints, named for the request log."""
    kinds = {_LATE.get(kind, f"{kind} blocks") for m in messages for p in m.parts
             if isinstance(p, Opaque) and (kind := p.native[NS].get("type"))}
    marks = [p.native.get(NS, {}) for m in messages for p in m.parts if isinstance(p, Text)]
    for message in messages:
        sent = message.native.get(NS, {}).get(CONTENT)
        marks.extend(b for b in (sent if isinstance(sent, list) else ()) if isinstance(b, Mapping))
    if any("cache_control" in mark for mark in marks):
        kinds.add("cache_control")
    return tuple(sorted(kinds))


#: Why the late-2026 blocks (anthropic-sdk-python beta types) go nowhere but to an Anthropic
#: upstream.
_LATE = {
    FALLBACK: "fallback blocks: a server-side fallback's marker, read only by the Anthropic "
              "route that made it",
    COMPACTION: "compaction blocks: read only by the Anthropic route that made them (other "
                "APIs get their summary as text)",
    TOOL_ADDITION: "tool_addition blocks: the tools they add are in tools",
    TOOL_REMOVAL: "tool_removal blocks: the tools they remove are left out of tools",
}


def _own(params: Mapping[str, Any], neutral: Mapping[str, Any]) -> dict[str, Any]:
    """What an Anthropic upstream's codec takes as parameters: every key as given, except the
    ones it writes from canonical values (``system``, ``tools``) and the effort, which it reads
    as ``reasoning_effort`` and writes into ``output_config`` itself. The client's ``tools`` go
    along as sent (``TOOLS_AS_SENT``): the canonical tools are those in effect after its
    ``tool_addition`` / ``tool_removal`` blocks (``toolchanges``), for every other API."""
    out = {k: v for k, v in params.items() if k not in _CANONICAL}
    # The client's own tool list, which its tool_addition/tool_removal blocks refer to (beta types).
    out[TOOLS_AS_SENT] = params["tools"] if isinstance(params.get("tools"), list) else []
    if "reasoning_effort" in neutral:
        out["reasoning_effort"] = neutral["reasoning_effort"]
        rest = {k: v for k, v in params["output_config"].items() if k != "effort"}
        if rest:
            out["output_config"] = rest
        else:
            del out["output_config"]
    return out


def _params_for(params: Mapping[str, Any], unmapped: tuple[str, ...] = (),
                ) -> tuple[dict[str, Mapping[str, Any]], dict[str, tuple[str, ...]]]:
    neutral = _neutral(params)
    params_for: dict[str, Mapping[str, Any]] = {API: _own(params, neutral)}
    dropped_for: dict[str, tuple[str, ...]] = {API: ()}
    for api, reads in _NEUTRAL_FOR.items():
        kept = {k: v for k, v in neutral.items() if k in reads}
        params_for[api] = kept
        used = {_MAPPED_FROM[k] for k in kept}
        dropped_for[api] = (*sorted(k for k in params if k not in used
                                    and k not in _CANONICAL), *unmapped)
    return params_for, dropped_for


# --- the model list -------------------------------------------------------------------------------

#: ``limit``'s default and largest value (the Models API: 20, from 1 to 1000).
_PAGE, _PAGE_MAX = 20, 1000
#: ``created_at`` of a model whose release date the gateway does not know: the epoch, as the
#: Models API allows ("may be set to an epoch value"), in RFC 3339.
_UNKNOWN_DATE = "1970-01-01T00:00:00Z"


def asks_models(headers: Mapping[str, str]) -> bool:
    """Whether a ``GET /v1/models`` comes from an Anthropic client: it names the API version
    (Claude Code and the ``anthropic`` SDK always do; OpenAI clients never)."""
    return any(k.lower() == VERSION_HEADER and v for k, v in headers.items())


def models_json(models: Sequence[tuple[str, str]], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the Models API list of ``models`` ((id, owner) pairs, in the gateway's order)
    as ``query`` asks for it; raises ``ClientRequestError`` for a bad ``limit`` or cursor."""
    ids = [model for model, _ in models]
    limit = _limit(query.get("limit"))
    after, before = query.get("after_id"), query.get("before_id")
    if after and before:
        raise ClientRequestError("send at most one of `after_id` and `before_id`",
                                 param="before_id")
    if before:
        end = _position(ids, before, "before_id")
        start = max(0, end - limit)
        page, more = ids[start:end], start > 0
    else:
        start = _position(ids, after, "after_id") + 1 if after else 0
        page, more = ids[start:start + limit], start + limit < len(ids)
    return {"data": [{"type": "model", "id": m, "display_name": m, "created_at": _UNKNOWN_DATE,
                      "lifecycle": "active"} for m in page],
            "has_more": more, "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None}


def _limit(raw: str | None) -> int:
    if raw is None:
        return _PAGE
    if not raw.isdigit() or not 1 <= int(raw) <= _PAGE_MAX:
        raise ClientRequestError(f"`limit` must be an integer from 1 to {_PAGE_MAX}, not "
                                 f"{raw!r}", param="limit")
    return int(raw)


def _position(ids: list[str], model: str, param: str) -> int:
    try:
        return ids.index(model)
    except ValueError:
        raise ClientRequestError(f"`{param}` {model!r} names no model of this gateway",
                                 param=param) from None
