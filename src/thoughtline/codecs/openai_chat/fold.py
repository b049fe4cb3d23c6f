"""Fold a stream of ``chat.completion.chunk`` objects into the whole message they describe.

The fold rebuilds the whole ``message`` object (``wire_message``) and hands it to the same decoder
as a non-streamed response, so a stream and its whole response give the same canonical Message by
construction. Fragments are kept in lists and joined once, so a long tool argument or reasoning
streamed in thousands of pieces folds in linear time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.openai_chat.decode import (
    is_text_chunk,
    json_text,
    message_from_wire,
    neutral_finish,
    thinking_text,
    usage_of,
)
from thoughtline.codecs.openai_chat.wire import RC, RD, RD_CONCAT, R
from thoughtline.errors import ProtocolError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import Origin

Delta = ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta

# Flat readable reasoning, ranked: the text shown when several come in one delta.
_FLAT_RANK = {RC: 0, R: 1, "reasoning_text": 2, "thinking": 3}  # thinking: Merge Gateway
# Copilot rotates the blob: the latest wins; Merge Gateway's signature comes whole.
_LATEST = ("reasoning_opaque", "thought_signature", "thinking_signature")


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


class _Call:
    """One streamed tool call: fragments joined at the end."""

    __slots__ = ("arguments", "google", "id", "name", "replaced", "signature")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.replaced: str | None = None  # arguments sent as an object instead of text
        self.signature: str | None = None
        self.google: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "arguments": (
            self.replaced if self.replaced is not None else "".join(self.arguments))}
        if self.signature:
            function["thought_signature"] = self.signature
        out: dict[str, Any] = {"id": self.id, "type": "function", "function": function}
        if self.google is not None:
            out["extra_content"] = {"google": self.google}
        return out


class _Detail:
    """One ``reasoning_details`` item, merged per (index, type); string fields concatenated."""

    __slots__ = ("fields", "pieces")

    def __init__(self, item: Mapping[str, Any]) -> None:
        self.fields = dict(item)
        self.pieces: dict[str, list[str]] = {}

    def merge(self, item: Mapping[str, Any]) -> None:
        fields, pieces = self.fields, self.pieces
        for name, value in item.items():
            if type(value) is str and name in RD_CONCAT:
                fragments = pieces.get(name)
                if fragments is None:
                    pieces[name] = [value]
                else:
                    fragments.append(value)
            elif value is not None and fields.get(name) is None:
                fields[name] = value

    def wire(self) -> dict[str, Any]:
        if not self.pieces:
            return self.fields
        out = dict(self.fields)
        for name, pieces in self.pieces.items():
            first = out.get(name)
            out[name] = (first if type(first) is str else "") + "".join(pieces)
        return out


class StreamFold:
    """``add`` each chunk (returns the deltas to show); ``finish`` returns the folded turn."""

    def __init__(self, origin: Origin, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.response_id = ""
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.saw_chunk = False
        self._text: dict[str, list[str]] = {"content": [], RC: [], R: [], "reasoning_text": [],
                                            "thinking": []}
        self._details: dict[tuple[Any, ...], _Detail] = {}
        self._last_key: tuple[Any, ...] | None = None
        self._last_detail: _Detail | None = None
        self._calls: dict[int, _Call] = {}
        self._latest: dict[str, Any] = {}
        self._chunks: list[dict[str, Any]] = []  # content-chunk lists (Mistral thinking)
        # The thinking text piece being extended and its fragments, joined once when read
        # (``+=`` on the piece would copy the whole text on every fragment: quadratic).
        self._tail_of: dict[str, Any] | None = None
        self._tail: list[str] = []

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def add_event(self, event_type: str, payload: Any) -> list[Delta]:
        """One SSE event (Chat Completions streams name no event types: only ``data:``)."""
        return self.add(payload)

    def add(self, chunk: Mapping[str, Any]) -> list[Delta]:
        if type(chunk) is not dict and not isinstance(chunk, Mapping):
            raise ProtocolError("stream chunk is not a JSON object")
        error = chunk.get("error")
        if error is not None and _is_map(error):
            raise ProtocolError(f"provider sent an error in the stream: {error!r:.300}")
        self.saw_chunk = True
        if not self.response_id:
            rid = chunk.get("id")
            self.response_id = rid if type(rid) is str else ""
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        events: list[Delta] = []
        choices = chunk.get("choices") or ()
        if type(choices) is not list and type(choices) is not tuple:
            raise ProtocolError(f"`choices` must be an array, not {shape.described(choices)}")
        for choice in choices:
            if (type(choice) is not dict and not _is_map(choice)) or choice.get("index", 0):
                continue
            finish = choice.get("finish_reason")
            if finish:
                self.finish_reason = finish
            delta = choice.get("delta") or choice.get("message")
            if delta and (type(delta) is dict or _is_map(delta)):
                self._delta(delta, events)
        return events

    def _delta(self, delta: Mapping[str, Any], events: list[Delta]) -> None:
        shown_rank, shown = 4, ""  # the flat reasoning shown for this delta (RC before R ...)
        text = ""
        details: list[str] | None = None
        others: list[Delta] | None = None
        for key, value in delta.items():
            if value is None or key == "role":
                continue
            rank = _FLAT_RANK.get(key)
            if rank is not None:
                if type(value) is str and value:
                    self._text[key].append(value)
                    if rank < shown_rank:
                        shown_rank, shown = rank, value
            elif key == "content":
                if type(value) is str:
                    if value:
                        self._text["content"].append(value)
                        text = value
                elif type(value) is list:
                    others = (others or []) + self._merge_chunks(value)
            elif key == RD:
                if type(value) is not list:
                    raise ProtocolError(f"`delta.{RD}` must be an array, not "
                                        f"{shape.described(value)}")
                for item in value:
                    piece = self._merge_detail(item)
                    if piece:
                        details = (details or []) + [piece]
            elif key == "tool_calls":
                if type(value) is not list:
                    raise ProtocolError("`delta.tool_calls` must be an array, not "
                                        f"{shape.described(value)}")
                for raw in value:
                    others = self._merge_call(raw, others or [])
            elif key in _LATEST:
                if type(value) is str and value:
                    self._latest[key] = value
            elif key == "extra_content" and _is_map(value) and _is_map(value.get("google")):
                self._latest.setdefault("google", {}).update(value["google"])
        if shown:
            events.append(ReasoningDelta(shown))
        elif details:
            events.extend(ReasoningDelta(piece) for piece in details)
        if text:
            events.append(TextDelta(text))
        if others:
            events.extend(others if not shown else
                          [e for e in others if type(e) is not ReasoningDelta])

    def _merge_chunks(self, chunks: list[Any]) -> list[Delta]:
        # Mistral Magistral streams its thinking as content-chunk lists, one fragment per delta,
        # and its answer as strings: rebuild the whole content list, in arrival order.
        events: list[Delta] = []
        for chunk in chunks:
            if not _is_map(chunk):
                continue
            if chunk.get("type") == "text":
                text = chunk.get("text")
                if type(text) is str and text:
                    self._text["content"].append(text)
                    events.append(TextDelta(text))
                continue
            if self._text["content"]:  # the text so far keeps its place before this chunk
                self._chunks.append({"type": "text", "text": "".join(self._text["content"])})
                self._text["content"].clear()
            if chunk.get("type") == "thinking":
                self._merge_thinking(chunk)
                text = thinking_text(chunk.get("thinking"))
                if text:
                    events.append(ReasoningDelta(text))
            else:
                self._chunks.append(dict(chunk))
        return events

    def _merge_thinking(self, chunk: Mapping[str, Any]) -> None:
        inner = chunk.get("thinking")
        last = self._chunks[-1] if self._chunks else {}
        if not (isinstance(inner, list) and last.get("type") == "thinking"
                and isinstance(last.get("thinking"), list)):
            copied = dict(chunk)
            if isinstance(inner, list):
                copied["thinking"] = [dict(c) if _is_map(c) else c for c in inner]
            self._chunks.append(copied)
            return
        for piece in inner:  # the next fragment of the same thinking chunk
            previous = last["thinking"][-1] if last["thinking"] else None
            if is_text_chunk(piece) and is_text_chunk(previous):
                if self._tail_of is not previous:
                    self._flush_tail()
                    self._tail_of, self._tail = previous, [previous["text"]]
                self._tail.append(piece["text"])
            else:
                self._flush_tail()
                last["thinking"].append(dict(piece) if _is_map(piece) else piece)

    def _flush_tail(self) -> None:
        """Write the pending thinking fragments into their piece (kept open for more)."""
        if self._tail_of is not None and len(self._tail) > 1:
            joined = "".join(self._tail)
            self._tail_of["text"] = joined
            self._tail = [joined]

    def _merge_detail(self, item: Any) -> str:
        if type(item) is not dict and not _is_map(item):
            raise ProtocolError(f"reasoning_details delta is not an object: {item!r:.80}")
        index = item.get("index")
        key = (index, item.get("type")) if index is not None else (len(self._details), id(item))
        try:
            hash(key)
        except TypeError:
            raise ProtocolError(f"`{RD}[].index` and `.type` must be strings or integers: "
                                f"{item!r:.120}") from None
        # Streams send one item's fragments back to back (``_last_detail`` is set with
        # ``_last_key``: None only before the first item, when no key can equal it).
        last = self._last_detail
        if last is not None and key == self._last_key:
            last.merge(item)
        else:
            into = self._details.get(key)
            if into is None:
                into = self._details[key] = _Detail(item)
            else:
                into.merge(item)
            self._last_key, self._last_detail = key, into
        text = item.get("text") or item.get("summary")
        return text if type(text) is str else ""

    def _merge_call(self, raw: Any, events: list[Delta]) -> list[Delta]:
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise ProtocolError(f"tool_calls delta is not an object: {raw!r:.80}")
        index = raw.get("index", len(self._calls))
        if type(index) is not int:
            raise ProtocolError(f"`tool_calls[].index` must be an integer, not "
                                f"{shape.described(index)}")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _Call()
        function = raw.get("function")
        if type(function) is not dict and not isinstance(function, Mapping):
            function = {}
        started = False
        if not call.id:
            rid = raw.get("id")
            call.id = rid if type(rid) is str else ""
        if not call.name:
            name = function.get("name")
            if type(name) is str and name:
                call.name, started = name, True
        if started:
            events.append(ToolCallStarted(index=index, id=call.id, name=call.name))
        arguments = function.get("arguments")
        if type(arguments) is str:
            call.arguments.append(arguments)
            if arguments:
                events.append(ToolCallDelta(index=index, text=arguments))
        elif _is_map(arguments):
            call.replaced = json_text(arguments)
        signature = function.get("thought_signature")
        if type(signature) is str and signature:
            call.signature = signature
        if "extra_content" in raw:
            extra = raw["extra_content"]
            if _is_map(extra) and _is_map(extra.get("google")):
                call.google = {**(call.google or {}), **extra["google"]}
        return events

    def wire_message(self) -> dict[str, Any]:
        """The whole ``message`` object this stream described so far."""
        self._flush_tail()
        wire: dict[str, Any] = {"role": "assistant"}
        for key, parts in self._text.items():
            if parts:
                wire[key] = "".join(parts)
        if self._chunks:
            tail = "".join(self._text["content"])
            wire["content"] = [*self._chunks, *([{"type": "text", "text": tail}] if tail else [])]
        if self._details:
            wire[RD] = [detail.wire() for detail in self._details.values()]
        if self._calls:
            wire["tool_calls"] = [self._calls[i].wire() for i in sorted(self._calls)]
        for key in _LATEST:
            if key in self._latest:
                wire[key] = self._latest[key]
        if "google" in self._latest:
            wire["extra_content"] = {"google": self._latest["google"]}
        return wire

    def finish(self, *, complete: bool = True) -> Done:
        """The folded turn; ``complete=False`` marks it (and its reasoning) incomplete."""
        message = message_from_wire(self.wire_message(), self.origin,
                                    response_id=self.response_id, incomplete=not complete,
                                    seed=self.seed)
        return Done(message=message, usage=usage_of(self.usage), finish_reason=self.finish_reason,
                    finish=neutral_finish(self.finish_reason))


def fold(chunks: Iterable[Mapping[str, Any]], origin: Origin) -> Done:
    """Fold a whole recorded stream (convenience for tests and the gateway)."""
    state = StreamFold(origin)
    for chunk in chunks:
        state.add(chunk)
    return state.finish()
