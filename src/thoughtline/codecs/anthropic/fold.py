"""Fold an Anthropic Messages SSE stream into the same canonical turn as the whole response.

The event type comes from the SSE ``event:`` line (``message_start``, ``content_block_start``,
``content_block_delta``, ``content_block_stop``, ``message_delta``, ``message_stop``, ``ping``,
``error``); recordings without the line (vercel/ai ``chunks.txt``) carry the same name in the
payload's ``type``. Each block is rebuilt by its stream ``index`` — ``thinking_delta`` fragments,
the one ``signature_delta`` that arrives just before ``content_block_stop``, ``text_delta``,
``input_json_delta``, ``citations_delta`` — and handed to the same ``block_part`` the whole
decode uses, so a stream and its whole response give equal Messages by construction (the model
that answered comes from ``message_start``'s ``message.model``, each block's origin from
``decode.origins``, as in the whole decode). A block
whose ``content_block_stop`` never came is ``complete=False`` (a thinking block cut before its
signature is never sent as signed). Tool input is parsed once and serialized compactly, the way
the whole decode serializes ``input``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from thoughtline.codecs import shape
from thoughtline.codecs.anthropic.decode import (
    answered_by,
    arguments_text,
    block_part,
    origins,
    reports_of,
    usage_of,
)
from thoughtline.codecs.anthropic.wire import TEXT, THINKING, TOOL_USE, neutral_finish, text_of
from thoughtline.errors import ProtocolError
from thoughtline.events import (
    Done,
    PartDone,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from thoughtline.messages import Message, Opaque, Origin, Part, Reasoning, ToolCall

Delta = ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta | PartDone
#: A delta's type -> the block field its fragment extends, and the event that shows it (None:
#: not shown as text; a tool's input fragment is shown as a ToolCallDelta).
_DELTAS: dict[str, tuple[str, type[ReasoningDelta] | type[TextDelta] | None]] = {
    "text_delta": ("text", TextDelta), "thinking_delta": (THINKING, ReasoningDelta),
    "signature_delta": ("signature", None), "input_json_delta": ("partial_json", None)}


class _Block:
    """One content block being streamed: its start object and the fragments of each field."""

    __slots__ = ("citations", "pieces", "start", "stopped", "tool")

    def __init__(self, start: Mapping[str, Any], tool: int | None) -> None:
        self.start = start
        self.pieces: dict[str, list[str]] = {}
        self.citations: list[Any] = []
        self.stopped = False
        self.tool = tool  # ordinal among client tool calls, for ToolCall events

    def whole(self) -> tuple[dict[str, Any], str | None]:
        """The block as the whole response would carry it, and unparsable tool input text."""
        block = dict(self.start)
        for field, pieces in self.pieces.items():
            if field != "partial_json":
                block[field] = text_of(block.get(field)) + "".join(pieces)
        if self.citations:
            block["citations"] = [*(block.get("citations") or ()), *self.citations]
        raw = "".join(self.pieces.get("partial_json", ()))
        if raw.strip():
            try:
                block["input"] = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return block, raw  # a cut stream: keep the text exactly as received
        return block, None


class StreamFold:
    """``add_event`` each SSE event (returns the deltas to show); ``finish`` gives the turn."""

    def __init__(self, origin: Origin, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.saw_chunk = False
        self.stop_reason: str | None = None
        self.stopped = False
        self.usage: dict[str, Any] = {}
        self.reports: tuple[object, ...] = ()
        self.model: Any = None  # the response's ``model``: the one that answered
        self._blocks: dict[int, _Block] = {}
        self._tools = 0

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None or self.stopped

    def add_event(self, event_type: str, payload: Any) -> list[Delta]:
        if type(payload) is not dict and not isinstance(payload, Mapping):
            raise ProtocolError("stream event is not a JSON object")
        kind = event_type or payload.get("type")
        self.saw_chunk = True
        if kind != "content_block_delta":
            handler = _HANDLERS.get(shape.key(kind, "type"))
            return handler(self, payload) if handler is not None else []
        # Nearly every event is a block delta: handled here, without another call.
        index = payload.get("index")
        try:
            block = self._blocks.get(index) if index is not None else None
        except TypeError:
            raise shape.bad_key(index, "content_block_delta.index") from None
        delta = payload.get("delta")
        if block is None or (type(delta) is not dict and not isinstance(delta, Mapping)):
            raise ProtocolError(f"content_block_delta for no open block: {payload!r:.120}")
        kind = delta.get("type", "")  # (a delta without a type is no known one, like None)
        try:
            found = _DELTAS.get(kind)
        except TypeError:
            raise shape.bad_key(kind, "content_block_delta.delta.type") from None
        if found is None:
            if kind == "citations_delta":
                block.citations.append(delta.get("citation"))
            return []
        field, shown = found
        text = delta.get(field)
        if type(text) is not str or not text:
            return []
        pieces = block.pieces.get(field)
        if pieces is None:
            block.pieces[field] = [text]
        else:
            pieces.append(text)
        if shown is not None:
            return [shown(text)]
        if field == "partial_json" and block.tool is not None:
            return [ToolCallDelta(index=block.tool, text=text)]
        return []

    def _message_start(self, payload: Mapping[str, Any]) -> list[Delta]:
        message = payload.get("message")
        if isinstance(message, Mapping):
            self.model = message.get("model")
            self._merge_usage(message.get("usage"))
            self.reports = reports_of(message) or self.reports
        return []

    def _block_start(self, payload: Mapping[str, Any]) -> list[Delta]:
        block = payload.get("content_block")
        if not isinstance(block, Mapping):
            raise ProtocolError(f"content_block_start without a block: {payload!r:.120}")
        tool = None
        events: list[Delta] = []
        if block.get("type") == TOOL_USE:
            tool, self._tools = self._tools, self._tools + 1
            events.append(ToolCallStarted(index=tool, id=text_of(block.get("id")),
                                          name=text_of(block.get("name"))))
        elif text_of(block.get("text")):
            events.append(TextDelta(block["text"]))
        elif text_of(block.get(THINKING)):
            events.append(ReasoningDelta(block[THINKING]))
        self._blocks[_index(payload)] = _Block(block, tool)
        return events

    def _block_stop(self, payload: Mapping[str, Any]) -> list[Delta]:
        block = self._blocks.get(_index(payload))
        if block is None:
            return []
        block.stopped = True
        if block.start.get("type") in (TEXT, TOOL_USE):
            return []
        # The block is whole now (a thinking block's signature came just before): said in its
        # place, for a face that replays blocks in order before the text after them.
        position = _index(payload)
        starts = [self._blocks[i].start for i in sorted(self._blocks) if i <= position]
        origin = origins(starts, self.origin, answered_by(self.origin, self.model))[-1]
        part = block_part(block.whole()[0], origin)
        return [PartDone(part)] if isinstance(part, Reasoning | Opaque) else []

    def _message_delta(self, payload: Mapping[str, Any]) -> list[Delta]:
        delta = payload.get("delta")
        if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
            self.stop_reason = delta["stop_reason"]
        self._merge_usage(payload.get("usage"))
        return []

    def _message_stop(self, payload: Mapping[str, Any]) -> list[Delta]:
        self.stopped = True
        return []

    def _error(self, payload: Mapping[str, Any]) -> list[Delta]:
        raise ProtocolError(f"provider sent an error in the stream: {payload.get('error')!r:.300}")

    def _merge_usage(self, usage: Any) -> None:
        if isinstance(usage, Mapping):
            self.usage.update((k, v) for k, v in usage.items() if v is not None)

    def message(self, *, complete: bool = True) -> Message:
        """The turn the stream described so far (``complete=False``: the stream was cut)."""
        parts: list[Part] = []
        ordered = [self._blocks[position] for position in sorted(self._blocks)]
        answered = answered_by(self.origin, self.model)
        made = origins([b.start for b in ordered], self.origin, answered)
        for block, origin in zip(ordered, made, strict=True):
            whole, raw = block.whole()
            done = block.stopped and complete
            if raw is not None:
                parts.append(ToolCall(id=text_of(whole.get("id")),
                                      name=text_of(whole.get("name")), arguments=raw))
                continue
            part = block_part(whole, origin, complete=done)
            if part is not None:
                parts.append(part)
        return Message(role="assistant", parts=tuple(parts), origin=answered,
                       incomplete=not complete)

    def finish(self, *, complete: bool = True) -> Done:
        """The folded turn; ``complete=False`` marks it (and every open block) incomplete."""
        return Done(message=self.message(complete=complete), usage=usage_of(self.usage),
                    finish_reason=self.stop_reason, finish=neutral_finish(self.stop_reason),
                    reports=self.reports)


def _index(payload: Mapping[str, Any]) -> int:
    index = payload.get("index")
    if not isinstance(index, int):
        raise ProtocolError(f"stream event without a block index: {payload!r:.120}")
    return index


_HANDLERS = {
    "message_start": StreamFold._message_start,
    "content_block_start": StreamFold._block_start,
    "content_block_stop": StreamFold._block_stop,
    "message_delta": StreamFold._message_delta,
    "message_stop": StreamFold._message_stop,
    "error": StreamFold._error,
}


def fold(events: Iterable[tuple[str, Any]], origin: Origin) -> Done:
    """Fold a whole recorded stream of ``(event type, payload)`` pairs (tests, the gateway)."""
    state = StreamFold(origin)
    for event_type, payload in events:
        state.add_event(event_type, payload)
    return state.finish()


__all__ = ["StreamFold", "arguments_text", "fold"]
