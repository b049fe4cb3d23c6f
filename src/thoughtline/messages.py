"""The canonical, provider-neutral conversation model.

This module owns the shape of a conversation: messages made of an ordered list of parts, and the
lossless JSON form they are stored and exported in. It knows no wire format: provider field
names live in ``thoughtline.codecs``. Values that a provider returns with no neutral slot are kept
verbatim under ``native``, namespaced by the format that owns them (``"openrouter"``, ``"google"``,
``"copilot"`` …), and are only ever lifted back onto the wire by that format's codec.

All values are frozen: a stored history is never mutated, every request works on a view of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, TypeAlias, assert_never

import orjson

from thoughtline.depth import MAX_DEPTH, deeper_than, too_deep
from thoughtline.errors import ProtocolError

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ReasoningKind: TypeAlias = Literal["text", "summary", "signed", "redacted", "encrypted"]
Api: TypeAlias = Literal["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"]

#: Why a provider stopped, in neutral words (each codec maps its own stop reasons onto these).
FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "refusal",
                                  "pause", "other"]

#: Verbatim provider values, keyed by the namespace of the format that owns them.
Native: TypeAlias = Mapping[str, Any]


class FrozenDict(dict[str, Any]):
    """A JSON object that cannot be changed after it was made.

    A ``dict`` subclass so orjson serializes it as-is (key order and bytes kept) and it compares
    equal to the plain dict it was made from. Verbatim provider values are frozen on the way into
    a ``Message``: a request body that shares them cannot edit stored history.
    """

    __slots__ = ()

    def _readonly(self, *_: Any, **__: Any) -> Any:
        raise TypeError("verbatim provider values are read-only; copy before editing")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly
    __ior__ = _readonly

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: Any) -> FrozenDict:
        return self

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A JSON array that cannot be changed after it was made (see ``FrozenDict``)."""

    __slots__ = ()

    def _readonly(self, *_: Any, **__: Any) -> Any:
        raise TypeError("verbatim provider values are read-only; copy before editing")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _readonly
    append = extend = insert = pop = remove = clear = sort = reverse = _readonly

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: Any) -> FrozenList:
        return self

    def __reduce__(self) -> Any:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every dict and list inside made read-only (already frozen parts are kept)."""
    kind = type(value)
    if kind in _FLAT or kind is FrozenDict or kind is FrozenList:
        return value
    if kind is dict:  # what a JSON parser makes: spared the abstract Mapping check (issue 27)
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


#: Types that hold nothing to freeze (a JSON parser's scalars), told apart by exact type.
_FLAT = frozenset({str, int, float, bool, type(None), bytes})
_EMPTY: Native = FrozenDict()


def _frozen_native(obj: Any) -> None:
    # Frozen dataclasses: bypass __setattr__ once, at construction.
    native = obj.native
    if type(native) is not FrozenDict:
        object.__setattr__(obj, "native", freeze(native) if native else _EMPTY)


@dataclass(frozen=True, kw_only=True, slots=True)
class Origin:
    """Where an assistant turn (or one reasoning part) came from."""

    api: str
    provider: str
    host: str = ""
    model: str = ""
    #: Where the provider binds opaque values beyond the model: an account/organisation/project
    #: identity and a region, when the route knows them ("" otherwise). Never a key.
    account: str = ""
    region: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Text:
    """Visible text. Chat Completions ``content``; Anthropic/Gemini/Bedrock text blocks.

    ``native`` holds verbatim per-part values of the format that returned the text (a Gemini
    ``thoughtSignature`` on a text part, Anthropic ``citations``), namespaced like everywhere else.
    """

    text: str
    native: Native = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_native(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class Reasoning:
    """One unit of the model's thinking.

    ``text`` is readable thinking (Chat Completions ``reasoning_content``/``reasoning``, Anthropic
    ``thinking``, Gemini thought parts, Bedrock ``reasoningText.text``). ``summary`` is a provider
    summary of hidden thinking. ``signature`` proves ``text`` untouched (Anthropic/Bedrock
    ``signature``); ``data`` is an opaque payload (Anthropic ``redacted_thinking.data``, encrypted
    items). A part whose stream was cut before its signature arrived is ``complete=False`` and is
    never replayed as signed.
    """

    kind: ReasoningKind
    text: str | None = None
    summary: str | None = None
    signature: str | None = None
    data: str | None = None
    complete: bool = True
    origin: Origin | None = None
    native: Native = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_native(self)

    @property
    def is_opaque(self) -> bool:
        """True when the part carries a value that only works replayed byte for byte."""
        return bool(self.signature or self.data)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """A tool call; ``arguments`` is the exact JSON text received, never re-serialized."""

    id: str
    name: str
    arguments: str
    native: Native = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_native(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The result of one tool call, sent back by the caller."""

    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Opaque:
    """A block with no canonical meaning that must be replayed verbatim, in its place.

    Anthropic ``server_tool_use`` / ``web_search_tool_result`` blocks, Responses output items the
    model needs back but thoughtline does not interpret. ``native`` holds exactly one namespace
    (the format that owns the block) with the block as received; only that format's codec ever
    sends it, and only to a route whose scope accepts ``origin``.
    """

    native: Native
    origin: Origin | None = None

    def __post_init__(self) -> None:
        _frozen_native(self)

    @property
    def namespace(self) -> str:
        return next(iter(self.native), "")


Part: TypeAlias = Text | Reasoning | ToolCall | ToolResult | Opaque


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """A tool the model may call: a name, a description and a JSON Schema for its arguments.

    ``native`` holds a client's own definition of the tool, verbatim, namespaced by the format
    that owns it (an Anthropic client's tool with ``cache_control`` / ``defer_loading``): only
    that format's codec sends it, in place of the one it would build.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}})
    native: Native = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_native(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token counts reported by the provider for one response."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    #: Every input token of the request, cached or not, where ``input_tokens`` leaves the cache
    #: out (Anthropic: ``input_tokens`` + ``cache_read_input_tokens`` +
    #: ``cache_creation_input_tokens``; Bedrock: ``inputTokens`` + ``cacheReadInputTokens`` +
    #: ``cacheWriteInputTokens``). 0: ``input_tokens`` already counts the whole prompt
    #: (Chat Completions ``prompt_tokens``, Responses ``input_tokens``, Gemini
    #: ``promptTokenCount`` include their cached tokens).
    prompt_tokens: int = 0

    @property
    def prompt_size(self) -> int:
        """The whole prompt as the provider counted it (what calibration compares against)."""
        return self.prompt_tokens or self.input_tokens


@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """One turn. Assistant turns carry their ``origin``; ``native`` holds message-level values."""

    role: Role
    parts: tuple[Part, ...] = ()
    origin: Origin | None = None
    incomplete: bool = False
    native: Native = field(default_factory=dict)
    #: Set on load when a stored payload of this turn failed verification and was left out: the
    #: turn is not what the model saw, and replay policies may treat it as such.
    damaged: bool = False
    #: ``tool_calls``, made once: the gateway asks it of every resent turn on every request.
    _calls: tuple[ToolCall, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        _frozen_native(self)
        object.__setattr__(self, "_calls", tuple(p for p in self.parts if isinstance(p, ToolCall)))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple(p for p in self.parts if isinstance(p, Reasoning))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self._calls

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    def reasoning_text(self) -> str:
        """The readable thinking of this turn, for display and for text-only carriers.

        Plain parts (no native record) are the flat carrier text; when a turn only has structured
        items (summaries, signed text), their readable text is used instead.
        """
        plain = [p.text for p in self.parts if isinstance(p, Reasoning) and p.text and not p.native]
        if plain:
            return "".join(plain)
        return "".join(
            (p.text or p.summary or "") for p in self.parts if isinstance(p, Reasoning)
        )


def user(text: str) -> Message:
    return Message(role="user", parts=(Text(text=text),))


def system(text: str) -> Message:
    return Message(role="system", parts=(Text(text=text),))


def tool_results(results: Iterable[ToolResult]) -> Message:
    return Message(role="tool", parts=tuple(results))


def as_message(turn: str | Message | Sequence[ToolResult]) -> Message:
    """A turn as given to ``send``: user text, a message, or tool results."""
    if isinstance(turn, str):
        return user(turn)
    if isinstance(turn, Message):
        return turn
    return tool_results(turn)


# --- lossless JSON form -------------------------------------------------------------------------
#
# The stored/exported form of a message. Every field is written explicitly with a short type tag;
# ``native`` values are written as the parsed JSON they were received as (orjson keeps key order and
# string bytes), so opaque strings come back byte-identical.


def _origin_to_json(origin: Origin | None) -> dict[str, str] | None:
    if origin is None:
        return None
    out = {"api": origin.api, "provider": origin.provider, "host": origin.host,
           "model": origin.model}
    if origin.account:
        out["account"] = origin.account
    if origin.region:
        out["region"] = origin.region
    return out


def _origin_from_json(raw: Mapping[str, Any] | None) -> Origin | None:
    if raw is None:
        return None
    return _origin(raw["api"], raw["provider"], raw.get("host", ""), raw.get("model", ""),
                   raw.get("account", ""), raw.get("region", ""))


@lru_cache(maxsize=256)
def _origin(api: str, provider: str, host: str, model: str, account: str = "",
            region: str = "") -> Origin:
    # A history has a handful of distinct origins over thousands of parts: share the values.
    return Origin(api=api, provider=provider, host=host, model=model, account=account,
                  region=region)


def part_to_json(part: Part) -> dict[str, Any]:
    match part:
        case Text(text=text):
            if part.native:
                return {"t": "text", "text": text, "native": part.native}
            return {"t": "text", "text": text}
        case Reasoning():
            out: dict[str, Any] = {"t": "reasoning", "kind": part.kind}
            for name in ("text", "summary", "signature", "data"):
                value = getattr(part, name)
                if value is not None:
                    out[name] = value
            if not part.complete:
                out["complete"] = False
            if part.origin is not None:
                out["origin"] = _origin_to_json(part.origin)
            if part.native:
                out["native"] = part.native
            return out
        case ToolCall():
            out = {"t": "tool_call", "id": part.id, "name": part.name,
                   "arguments": part.arguments}
            if part.native:
                out["native"] = part.native
            return out
        case ToolResult():
            out = {"t": "tool_result", "call_id": part.call_id, "content": part.content}
            if part.is_error:
                out["is_error"] = True
            return out
        case Opaque():
            out = {"t": "opaque", "native": part.native}
            if part.origin is not None:
                out["origin"] = _origin_to_json(part.origin)
            return out
        case _:
            assert_never(part)


def part_from_json(raw: Mapping[str, Any]) -> Part:
    tag = raw["t"]
    if tag == "text":
        return Text(text=raw["text"], native=raw.get("native", _EMPTY))
    if tag == "reasoning":
        return Reasoning(
            kind=raw["kind"], text=raw.get("text"), summary=raw.get("summary"),
            signature=raw.get("signature"), data=raw.get("data"),
            complete=raw.get("complete", True), origin=_origin_from_json(raw.get("origin")),
            native=raw.get("native", _EMPTY),
        )
    if tag == "tool_call":
        return ToolCall(id=raw["id"], name=raw["name"], arguments=raw["arguments"],
                        native=raw.get("native", _EMPTY))
    if tag == "tool_result":
        return ToolResult(call_id=raw["call_id"], content=raw["content"],
                          is_error=raw.get("is_error", False))
    if tag == "opaque":
        return Opaque(native=raw["native"], origin=_origin_from_json(raw.get("origin")))
    raise ValueError(f"unknown part type {tag!r}")


def message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role,
                           "parts": [part_to_json(p) for p in message.parts]}
    if message.origin is not None:
        out["origin"] = _origin_to_json(message.origin)
    if message.incomplete:
        out["incomplete"] = True
    if message.native:
        out["native"] = message.native
    if message.damaged:
        out["damaged"] = True
    return out


def message_from_json(raw: Mapping[str, Any]) -> Message:
    return Message(
        role=raw["role"], parts=tuple(part_from_json(p) for p in raw["parts"]),
        origin=_origin_from_json(raw.get("origin")), incomplete=raw.get("incomplete", False),
        native=raw.get("native", _EMPTY), damaged=raw.get("damaged", False),
    )


def dumps(message: Message) -> bytes:
    """The canonical bytes of a message (stable: same message, same bytes)."""
    return orjson.dumps(message_to_json(message))


#: The levels ``dumps`` puts around a part's native value (the message, its parts, the part).
_ENVELOPE_LEVELS = 3


def loads(data: bytes | str) -> Message:
    """The message ``dumps`` wrote; ``ProtocolError`` for bytes that are not one (not JSON, or
    nested past ``depth.MAX_DEPTH``)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"not a stored message: {exc}") from exc
    if deeper_than(value, MAX_DEPTH + _ENVELOPE_LEVELS, raw=data):
        raise ProtocolError(too_deep("a value of a stored message"))
    return message_from_json(value)


def digest(data: bytes) -> str:
    """The content digest used for stored payloads and message ids."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fingerprint(kind: str, value: str) -> str:
    """The identity of one opaque value a provider rejected: sha256 over its type and bytes.

    ``kind`` names what the value is in the owning format (a block type, ``"thoughtSignature"``,
    an item type); the store keeps fingerprints with the session so the value is never sent again.
    """
    return "fp:" + hashlib.sha256(kind.encode() + b"\0" + value.encode()).hexdigest()
