"""The client side of the Responses API: what a gateway reads from Codex and the Agents SDK.

Owns parsing a client's ``POST /v1/responses`` body and headers into canonical terms:

- ``instructions`` → a leading ``system`` message; ``developer`` / ``system`` message items →
  ``system`` messages, ``user`` items → ``user`` messages (``input_text`` parts; other parts such
  as images kept verbatim as ``Opaque``), each item verbatim on the message for a Responses
  upstream (client-made ids such as ``msg_<uuid7>`` included);
- consecutive assistant items (``reasoning``, ``message``, ``function_call``,
  ``custom_tool_call``, ``compaction`` …) → one ``assistant`` turn. A ``reasoning`` item with a
  provider's ``encrypted_content`` is kept verbatim (``decode.reasoning_part``: id, summary,
  ``content: null`` and all); one whose ``encrypted_content`` the gateway minted (prefix
  ``MINT_PREFIX``, which Fernet-style base64 never contains) is readable summary only and the
  value goes to ``ClientRequest.minted`` for the gateway to verify. A ``compaction`` item the
  gateway minted names a stored checkpoint (``ResponsesRequest.checkpoint``);
- ``function_call_output`` / ``custom_tool_call_output`` → ``tool`` turns (consecutive outputs
  are one turn; an output given as ``input_text`` parts is their texts joined by newlines), the
  items verbatim on the turn (``items``) for a Responses upstream;
- ``tools``, top-level and in ``additional_tools`` input items, are ``tools``'s: ``function`` →
  ``ToolSpec``; ``custom`` (free-text input, e.g. ``apply_patch``, Codex's code-mode ``exec``) →
  a function taking one string ``input`` (``custom_tool_call`` ↔ ``{"input": …}`` arguments);
  a ``namespace``'s members under flat names (calls name theirs by ``namespace`` + ``name``);
  built-ins (``web_search``, ``tool_search``, ``file_search`` …) run only on a Responses
  upstream: listed as dropped for every other API. An ``additional_tools`` item itself rides
  on the next message (``before``; the last one's ``after`` when none follows) and goes to a
  Responses upstream verbatim in that place;
- the parameters per target API: a Responses upstream gets every key verbatim; another API gets
  what it has a place for (``reasoning.effort`` → ``reasoning_effort``, ``max_output_tokens`` →
  ``max_tokens``, ``tool_choice`` in Chat terms …) and the rest is listed as dropped;
- the session the client names: ``session-id``, else ``thread-id``, else ``prompt_cache_key``;
- ``{"type": "compaction_trigger"}`` as the last input item (Codex's remote compaction);
- a Codex multi-agent ``agent_message`` item → a ``user`` message of its readable text, the
  item verbatim on it (``agents``: only OpenAI reads its ``encrypted_content``).

Rendering answers is ``reply``'s. Pure functions; no I/O.

Facts: the Responses API reference (platform.openai.com/docs/api-reference/responses), the
``openai`` SDK's ``types/responses`` and the recorded Codex requests (tests/fixtures/clients;
docs/codex.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

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
from thoughtline.codecs.openai_responses import agents
from thoughtline.codecs.openai_responses.agents import AGENT_MESSAGE
from thoughtline.codecs.openai_responses.decode import call_part, message_parts, reasoning_part
from thoughtline.codecs.openai_responses.kinds import TEXT_PARTS, dropped_item, dropped_part
from thoughtline.codecs.openai_responses.tools import (
    ADDITIONAL_TOOLS,
    CUSTOM_CALL,
    CUSTOM_CALL_OUTPUT,
    CUSTOM_INPUT,
    NO_TOOLS,
    ToolNames,
    called_name,
    output_text,
    read_tools,
)
from thoughtline.codecs.openai_responses.wire import (
    API,
    ENCRYPTED,
    FUNCTION_CALL,
    FUNCTION_CALL_OUTPUT,
    MESSAGE,
    NS,
    REASONING,
    SUMMARY_TEXT,
    is_map,
    joined,
    text_of,
)
from thoughtline.errors import ProtocolError
from thoughtline.messages import (
    Message,
    Opaque,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)

CLIENT_API = API
SESSION_HEADERS = ("session-id", "thread-id")
COMPACTION, COMPACTION_TRIGGER = "compaction", "compaction_trigger"

__all__ = ["CLIENT_API", "COMPACTION", "COMPACTION_TRIGGER", "CUSTOM_INPUT", "MINT_PREFIX",
           "SESSION_HEADERS",
           "ResponsesRequest", "is_minted", "items_of", "own_compaction", "parse_request",
           "user_items"]

#: Body keys the face turns into canonical values itself (every other key is a parameter).
_HANDLED = frozenset({"model", "input", "stream"})
#: Keys every upstream gets in canonical form (a Responses one also verbatim, as given).
_CANONICAL = frozenset({"instructions", "tools"})
#: Codex's bookkeeping for the ChatGPT backend: not a parameter of the public Responses API
#: (``ResponseCreateParams``), so no upstream gets it.
_CLIENT_ONLY = frozenset({"client_metadata"})
#: Output-item kinds that belong to an assistant turn.
_ASSISTANT_ITEMS = frozenset({REASONING, FUNCTION_CALL, CUSTOM_CALL, COMPACTION})
_OUTPUT_ITEMS = frozenset({FUNCTION_CALL_OUTPUT, CUSTOM_CALL_OUTPUT})
#: Neutral parameter names other codecs read (``RequestSpec.params``), per target API.
_NEUTRAL_FOR: Mapping[str, frozenset[str]] = {
    "openai-chat": frozenset({"max_tokens", "temperature", "top_p", "reasoning_effort",
                              "tool_choice"}),
    "anthropic": frozenset({"max_tokens", "temperature", "top_p", "reasoning_effort"}),
    "gemini": frozenset({"max_tokens", "temperature", "top_p", "reasoning_effort"}),
    "bedrock": frozenset({"max_tokens", "temperature", "top_p", "reasoning_effort"}),
}
#: Neutral name → the client's key it came from (what is *not* dropped).
_MAPPED_FROM = {"max_tokens": "max_output_tokens", "temperature": "temperature",
                "top_p": "top_p", "reasoning_effort": "reasoning", "tool_choice": "tool_choice"}


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponsesRequest(ClientRequest):
    """A Responses client's request: ``ClientRequest`` plus what only this face has."""

    #: The client's tools by the flat names upstreams see: their calls go back under the
    #: client's namespace and name, a custom tool's as a ``custom_tool_call`` item.
    tool_names: ToolNames = NO_TOOLS
    #: The last input item was ``compaction_trigger``: the client wants one ``compaction`` item.
    compact: bool = False
    #: ``previous_response_id`` when the client named one ("" when not).
    previous_response_id: str = ""
    #: A minted ``compaction`` item's value and the index of the first message after it
    #: ("" / -1 when the client sent none): the gateway expands it to its stored checkpoint.
    checkpoint: str = ""
    checkpoint_at: int = -1


# --- the request ----------------------------------------------------------------------------------


def items_of(body: Any) -> list[Any] | None:
    """The body's conversation items: the top-level array its parse converts item by item
    (None: the body has none). The gateway checks their nesting apart (``memo``)."""
    return array_at(body, "input")


def smallest_request(model: str) -> dict[str, Any]:
    """The smallest request a Responses client sends (a one-line input): what a server parses
    at start to load this face before its first real request."""
    return {"model": model, "input": "hi"}


def parse_request(body: Any, headers: Mapping[str, str] | None = None,
                  memo: ItemMemo | None = None) -> ResponsesRequest:
    """Read a parsed JSON body and the request headers (any case); raises
    ``ClientRequestError`` naming what is wrong. ``memo``: continues the input items'
    conversion from an earlier request's (``face.walk``)."""
    if not isinstance(body, Mapping):
        raise ClientRequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ClientRequestError("`model` must be a non-empty string", param="model")
    raw = body.get("input")
    if isinstance(raw, str):
        raw = [{"type": MESSAGE, "role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        raise ClientRequestError("`input` must be a string or a non-empty array of items",
                                 param="input")
    compact = is_map(raw[-1]) and raw[-1].get("type") == COMPACTION_TRIGGER
    if compact:
        raw = raw[:-1]
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ClientRequestError("`instructions` must be a string", param="instructions")
    lead = [Message(role="system", parts=(Text(text=instructions),))] if instructions else []
    walked = walk(raw, _convert, memo)  # a copy when remembered: ``end`` may change it
    ended = _Walk(walked)
    ended.end()
    tools = read_tools(body.get("tools"), walked.tool_changes)
    params = {k: v for k, v in body.items() if k not in _HANDLED}
    unread = tuple(dict.fromkeys((*tools.builtins, *walked.own)))
    params_for, dropped_for = _params_for(params, unread)
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise ClientRequestError("`previous_response_id` must be a string",
                                 param="previous_response_id")
    offset = len(lead)
    return ResponsesRequest(
        model=model, messages=(*lead, *walked.messages), tools=tools.specs, params=params,
        stream=body.get("stream") is True, api=API, params_for=params_for,
        dropped_for=dropped_for, session_hint=_session(lowered, body.get("prompt_cache_key")),
        minted=tuple(Minted(message=m.message + offset, value=m.value) for m in walked.minted),
        tool_names=tools.names, compact=compact, previous_response_id=previous or "",
        checkpoint=ended.checkpoint,
        checkpoint_at=ended.checkpoint_at + offset if ended.checkpoint else -1)


def _session(headers: Mapping[str, str], cache_key: Any) -> str:
    for name in SESSION_HEADERS:
        named = text_of(headers.get(name)).strip()
        if named:
            return named
    return text_of(cache_key).strip()


def _convert(raw: Sequence[Any], start: int, walked: Walked) -> None:
    """``raw[start:]`` onto ``walked`` (``face.Convert``): consecutive assistant items join one
    turn and consecutive outputs one tool turn, so the turn still open stays in ``held``."""
    walking = _Walk(walked)
    for index in range(start, len(raw)):
        walking.item(raw[index], f"input[{index}]")
    walking.hold(walked)


@dataclass(frozen=True, slots=True)
class _Held:
    """What ``_Walk`` holds between items (``Walked.held``): the open turn's parts, and the
    ``additional_tools`` items no message has carried yet."""

    assistant: tuple[Part, ...] = ()
    minted: str = ""
    results: tuple[Part, ...] = ()
    outputs: tuple[Mapping[str, Any], ...] = ()
    pending: tuple[Mapping[str, Any], ...] = ()
    checkpoint: str = ""
    checkpoint_at: int = -1


class _Walk:
    """Input items → canonical messages, grouping assistant items into turns, on ``walked``'s
    lists (``Minted.message`` and ``checkpoint_at`` count from its first message)."""

    def __init__(self, walked: Walked) -> None:
        held = walked.held if isinstance(walked.held, _Held) else _Held()
        self.messages = walked.messages
        self.minted = walked.minted
        self.checkpoint = held.checkpoint
        self.checkpoint_at = held.checkpoint_at
        #: Each ``additional_tools`` item's tool list, with its place (for errors).
        self.tool_lists: list[tuple[Any, str]] = walked.tool_changes
        self._assistant: list[Part] = list(held.assistant)
        self._minted = held.minted
        self._results: list[Part] = list(held.results)
        self._outputs: list[Mapping[str, Any]] = list(held.outputs)
        #: additional_tools items awaiting a message
        self._pending: list[Mapping[str, Any]] = list(held.pending)
        #: What only a Responses upstream reads (``kinds.OWN``), as the request log names it.
        self.dropped: list[str] = walked.own

    def hold(self, walked: Walked) -> None:
        """What is not a message yet, into ``walked.held`` (each dropped name kept once)."""
        walked.held = _Held(assistant=tuple(self._assistant), minted=self._minted,
                            results=tuple(self._results), outputs=tuple(self._outputs),
                            pending=tuple(self._pending), checkpoint=self.checkpoint,
                            checkpoint_at=self.checkpoint_at)
        self.dropped[:] = dict.fromkeys(self.dropped)

    def flush(self) -> None:
        if self._assistant:
            if self._minted:
                self.minted.append(Minted(message=len(self.messages), value=self._minted))
            self.messages.append(Message(role="assistant", parts=tuple(self._assistant)))
        if self._results:
            self._add(Message(role="tool", parts=tuple(self._results),
                              native={NS: {"items": self._outputs}}))
        self._assistant, self._results, self._outputs, self._minted = [], [], [], ""

    def end(self) -> None:
        """The last items: additional_tools items no message followed ride on the last
        non-assistant message, after it."""
        self.flush()
        if not self._pending:
            return
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if message.role != "assistant":
                carried = dict(message.native.get(NS) or {})
                carried["after"] = self._pending
                self.messages[index] = replace(message, native={**message.native, NS: carried})
                break
        self._pending = []

    def _add(self, message: Message) -> None:
        """A non-assistant message, carrying the additional_tools items that came before it."""
        if self._pending:
            carried = dict(message.native.get(NS) or {})
            carried["before"] = self._pending
            message = replace(message, native={**message.native, NS: carried})
            self._pending = []
        self.messages.append(message)

    def item(self, item: Any, where: str) -> None:
        if not is_map(item):
            raise ClientRequestError(f"{where} must be an object", param=where)
        kind = item.get("type")
        role = item.get("role")
        if kind is None and role is not None:
            kind = MESSAGE  # EasyInputMessage: {"role", "content"} without a type
        if not isinstance(kind, str):
            raise ClientRequestError(f"{where}.type must be a string", param=f"{where}.type")
        if kind == ADDITIONAL_TOOLS:
            self.tool_lists.append((item.get("tools"), where))
            self._pending.append(item)
            return
        if kind in _OUTPUT_ITEMS:
            if self._assistant:
                self.flush()
            self._results.append(ToolResult(call_id=text_of(item.get("call_id")),
                                            content=output_text(item.get("output"))))
            self._outputs.append(item)
            return
        if kind == MESSAGE and role != "assistant":
            self.flush()
            self._add(_message(item, role, where, self.dropped))
            return
        if kind == AGENT_MESSAGE:  # what its recipient is told: a user message (``agents``)
            self.flush()
            self._add(agents.as_message(item))
            if agents.sealed(item):
                self.dropped.append(agents.DROPPED)
            return
        if self._results:
            self.flush()
        if kind == COMPACTION:
            self._compaction(item, where)
        elif kind == MESSAGE:
            self._assistant.extend(message_parts(_assistant_message(item, where)))
        elif kind == REASONING:
            self._assistant.append(self._reasoning(item))
        elif kind == FUNCTION_CALL:
            try:
                self._assistant.append(call_part(item, fallback_id=text_of(item.get("id"))))
            except ProtocolError:  # arguments that are not JSON text and cannot be written
                raise ClientRequestError(f"{where}.arguments must be a string of JSON",
                                         param=f"{where}.arguments") from None
        elif kind == CUSTOM_CALL:
            self._assistant.append(_custom_call(item))
        else:  # kinds.OWN (web_search_call, program …): verbatim, in place
            self.dropped.append(dropped_item(kind))
            self._assistant.append(Opaque(native={NS: item}))

    def _reasoning(self, item: Mapping[str, Any]) -> Reasoning:
        value = item.get(ENCRYPTED)
        if is_minted(value):
            self._minted = self._minted or value
            summary = joined(item.get("summary"), SUMMARY_TEXT)
            return Reasoning(kind="summary", summary=summary or "")
        return reasoning_part(item, None)

    def _compaction(self, item: Mapping[str, Any], where: str) -> None:
        value = item.get(ENCRYPTED)
        if not is_minted(value):  # a provider's own compaction: only a Responses upstream reads it
            self.dropped.append(dropped_item(COMPACTION))
            self._assistant.append(Opaque(native={NS: item}))
            return
        if self.checkpoint:
            raise ClientRequestError(f"{where}: only one compaction item may be sent",
                                     param=where)
        self.flush()
        self.checkpoint = value
        self.checkpoint_at = len(self.messages)


def _parts(content: Any, where: str, dropped: list[str]) -> list[Part]:
    if isinstance(content, str):
        return [Text(text=content)]
    if not isinstance(content, list):
        raise ClientRequestError(f"{where}.content must be a string or an array of parts",
                                 param=f"{where}.content")
    out: list[Part] = []
    for index, part in enumerate(content):
        if not is_map(part) or not isinstance(part.get("type"), str):
            raise ClientRequestError(f"{where}.content[{index}] must be a part with a type",
                                     param=f"{where}.content[{index}]")
        if part["type"] in TEXT_PARTS:
            out.append(Text(text=text_of(part.get("text"))))
        else:  # kinds.OWN (input_image, input_file …): no canonical meaning, kept in place
            dropped.append(dropped_part(part["type"]))
            out.append(Opaque(native={NS: dict(part)}))
    return out


def _message(item: Mapping[str, Any], role: Any, where: str, dropped: list[str]) -> Message:
    if role not in ("user", "developer", "system"):
        raise ClientRequestError(f"{where}.role {role!r} is not one of user, developer, system, "
                                 "assistant", param=f"{where}.role")
    parts = _parts(item.get("content"), where, dropped)
    return Message(role="user" if role == "user" else "system", parts=tuple(parts),
                   native={NS: {"item": item}})


def _assistant_message(item: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    content = item.get("content")
    if isinstance(content, str):  # an easy message: the shell decode expects
        return {**item, "content": [{"type": "output_text", "text": content,
                                     "annotations": []}]}
    if not isinstance(content, list):
        raise ClientRequestError(f"{where}.content must be a string or an array of parts",
                                 param=f"{where}.content")
    return item


def _custom_call(item: Mapping[str, Any]) -> ToolCall:
    call_id = text_of(item.get("call_id")) or text_of(item.get("id"))
    arguments = orjson.dumps({CUSTOM_INPUT: text_of(item.get(CUSTOM_INPUT))}).decode()
    # the whole item, key order included: a Responses upstream gets it back as it was
    return ToolCall(id=call_id, name=called_name(item), arguments=arguments,
                    native={NS: dict(item)})


def own_compaction(request: ResponsesRequest, api: str) -> ResponsesRequest | None:
    """The request as a Responses upstream compacts it itself (its ``compaction_trigger``
    back in place as the last input item), or None when ``api`` is another API: the gateway
    compacts then."""
    if api != API or not request.compact:
        return None
    trigger = Message(role="user", native={NS: {"item": {"type": COMPACTION_TRIGGER}}})
    return replace(request, messages=(*request.messages, trigger), compact=False)


def user_items(request: ClientRequest) -> list[Mapping[str, Any]]:
    """The client's user message items as it sent them (a compaction answer repeats them)."""
    return [m.native[NS]["item"] for m in request.messages
            if m.role == "user" and is_map(m.native.get(NS)) and "item" in m.native[NS]]


# --- parameters per target API --------------------------------------------------------------------


def _neutral(params: Mapping[str, Any]) -> dict[str, Any]:
    """The client's parameters in the neutral names other codecs read."""
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        if params.get(name) is not None:
            out[name] = params[name]
    if params.get("max_output_tokens") is not None:
        out["max_tokens"] = params["max_output_tokens"]
    reasoning = params.get("reasoning")
    effort = reasoning.get("effort") if is_map(reasoning) else None
    if isinstance(effort, str) and effort:
        out["reasoning_effort"] = effort
    choice = _chat_tool_choice(params.get("tool_choice"))
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _chat_tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if is_map(choice) and choice.get("type") in ("function", "custom") and text_of(
            choice.get("name")):
        return {"type": "function", "function": {"name": choice["name"]}}
    return None


def _params_for(params: Mapping[str, Any], unread: tuple[str, ...],
                ) -> tuple[dict[str, Mapping[str, Any]], dict[str, tuple[str, ...]]]:
    neutral = _neutral(params)
    params_for: dict[str, Mapping[str, Any]] = {
        API: {k: v for k, v in params.items() if k not in _CLIENT_ONLY}}
    dropped_for: dict[str, tuple[str, ...]] = {API: tuple(sorted(_CLIENT_ONLY & set(params)))}
    for api, reads in _NEUTRAL_FOR.items():
        kept = {k: v for k, v in neutral.items() if k in reads}
        params_for[api] = kept
        used = {_MAPPED_FROM[k] for k in kept}
        dropped_for[api] = (*sorted(k for k in params if k not in used
                                    and k not in _CANONICAL), *unread)
    return params_for, dropped_for
