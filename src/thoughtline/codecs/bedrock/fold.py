"""Fold a ConverseStream into the whole message it describes.

Events arrive from the transport as ``(event type, payload)``, the type taken from the
``:event-type`` frame header. Fragments are joined per ``contentBlockIndex`` (reasoning ``text``
and ``signature`` arrive in separate frames; GPT-5.6 sends its whole ``redactedContent`` in one
delta with no ``contentBlockStart``: fixtures SOURCES.md, observation 6), the content array is
rebuilt and handed to the same decoder as a whole response, so stream and whole agree by
construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from thoughtline.codecs import shape
from thoughtline.codecs.bedrock.decode import neutral_finish, parts_from_content, usage_of
from thoughtline.codecs.bedrock.wire import (
    BLOCK_DELTA,
    BLOCK_START,
    EXCEPTION_PREFIX,
    MESSAGE_STOP,
    METADATA,
    REASONING,
    REASONING_TEXT,
    REDACTED,
    SIGNATURE,
    TEXT,
    TOOL_USE,
    text_of,
)
from thoughtline.errors import ProtocolError, ProviderError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import Message, Origin

Delta = ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta

# ConverseStream exceptions and the HTTP status the same error has on Converse
# (API_runtime_ConverseStream.html#API_runtime_ConverseStream_Errors).
_EXCEPTION_STATUS = {"validationException": 400, "accessDeniedException": 403,
                     "resourceNotFoundException": 404, "throttlingException": 429,
                     "modelTimeoutException": 408, "internalServerException": 500,
                     "serviceUnavailableException": 503, "modelNotReadyException": 429}


class _Block:
    """One content block: its kind and fragments, joined once at the end."""

    __slots__ = ("kind", "name", "pieces", "redacted", "signature", "tool", "use_id")

    def __init__(self) -> None:
        self.kind = ""  # "text" | "reasoning" | "tool"
        self.pieces: list[str] = []
        self.signature: list[str] = []
        self.redacted: list[str] = []
        self.tool = -1
        self.use_id = self.name = ""

    def wire(self) -> dict[str, Any] | None:
        joined = "".join(self.pieces)
        if self.kind == "tool":
            return {TOOL_USE: {"toolUseId": self.use_id, "name": self.name, "input": joined}}
        if self.kind == "reasoning":
            if self.redacted:
                return {REASONING: {REDACTED: "".join(self.redacted)}}
            item = {TEXT: joined}
            if self.signature:
                item[SIGNATURE] = "".join(self.signature)
            return {REASONING: {REASONING_TEXT: item}}
        return {TEXT: joined} if self.kind == "text" else None


def _exception(kind: str, payload: Any) -> Exception:
    message = payload.get("message") if isinstance(payload, Mapping) else None
    text = message if isinstance(message, str) else repr(payload)[:300]
    status = _EXCEPTION_STATUS.get(kind)
    if kind == "modelStreamErrorException" and isinstance(payload, Mapping):
        status = payload.get("originalStatusCode")
        status = status if type(status) is int and 400 <= status <= 599 else 424
    if status is None:
        return ProtocolError(f"Bedrock stream exception {kind}: {text}")
    try:
        body = orjson.dumps(payload).decode()
    except orjson.JSONEncodeError:
        body = repr(payload)[:300]
    return ProviderError(text, status=status, body=body)


class StreamFold:
    """``add_event`` each ConverseStream event (returns the deltas to show); ``finish`` folds."""

    def __init__(self, origin: Origin, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.saw_chunk = False
        self.stop_reason: str | None = None
        self.usage: Any = None
        self._blocks: dict[int, _Block] = {}
        self._tools = 0

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    def _block(self, payload: Mapping[str, Any]) -> _Block:
        index = payload.get("contentBlockIndex")
        try:
            block = self._blocks.get(index)  # type: ignore[arg-type]
        except TypeError:
            raise shape.bad_key(index, "contentBlockIndex") from None
        if block is None:
            if type(index) is not int:
                raise ProtocolError("ConverseStream event without contentBlockIndex: "
                                    f"{payload!r:.120}")
            block = self._blocks[index] = _Block()
        return block

    def add_event(self, event_type: str, payload: Any) -> list[Delta]:
        if type(payload) is not dict and not isinstance(payload, Mapping):
            if event_type.startswith(EXCEPTION_PREFIX):
                raise _exception(event_type[len(EXCEPTION_PREFIX):], payload)
            raise ProtocolError(f"ConverseStream {event_type} payload is not an object")
        self.saw_chunk = True
        if event_type == BLOCK_DELTA:
            return self._delta(self._block(payload), payload.get("delta"))
        if event_type.startswith(EXCEPTION_PREFIX):
            raise _exception(event_type[len(EXCEPTION_PREFIX):], payload)
        if event_type == BLOCK_START:
            return self._start(self._block(payload), payload.get("start"))
        if event_type == MESSAGE_STOP:
            stop = payload.get("stopReason")
            self.stop_reason = stop if isinstance(stop, str) else "end_turn"
        elif event_type == METADATA:
            self.usage = payload.get("usage")
        return []  # messageStart, contentBlockStop: nothing to show

    def _start(self, block: _Block, start: Any) -> list[Delta]:
        use = start.get(TOOL_USE) if isinstance(start, Mapping) else None
        if not isinstance(use, Mapping):
            return []
        block.kind, block.use_id, block.name = "tool", text_of(use.get("toolUseId")), \
            text_of(use.get("name"))
        block.tool, self._tools = self._tools, self._tools + 1
        return [ToolCallStarted(block.tool, block.use_id, block.name)]

    def _delta(self, block: _Block, delta: Any) -> list[Delta]:
        if type(delta) is not dict and not isinstance(delta, Mapping):
            return []
        text = delta.get(TEXT)
        if text is not None:
            block.kind = block.kind or "text"
            if type(text) is not str:
                text = ""  # a wrong type carries nothing
            block.pieces.append(text)
            return [TextDelta(text)] if text else []
        reasoning = delta.get(REASONING)
        if reasoning is not None and (type(reasoning) is dict or isinstance(reasoning, Mapping)):
            block.kind = "reasoning"
            text = reasoning.get(TEXT)
            if text:
                block.pieces.append(text if type(text) is str else "")
            if text is None or len(reasoning) > 1:  # most deltas are a text fragment alone
                signature = reasoning.get(SIGNATURE)
                if signature is not None:
                    block.signature.append(text_of(signature))
                redacted = reasoning.get(REDACTED)
                if redacted is not None:
                    block.redacted.append(text_of(redacted))
            return [ReasoningDelta(text)] if text and type(text) is str else []
        use = delta.get(TOOL_USE)
        if type(use) is dict or isinstance(use, Mapping):
            if block.kind != "tool":  # input before any start: a call with no id
                self._start(block, {TOOL_USE: {}})
            fragment = text_of(use.get("input"))
            block.pieces.append(fragment)
            return [ToolCallDelta(block.tool, fragment)] if fragment else []
        return []

    def content(self) -> list[dict[str, Any]]:
        """The whole ``content`` array the stream described."""
        wire = (self._blocks[i].wire() for i in sorted(self._blocks))
        return [block for block in wire if block is not None]

    def finish(self, *, complete: bool = True) -> Done:
        done = complete and self.finished
        parts = tuple(parts_from_content(self.content(), self.origin, seed=self.seed))
        message = Message(role="assistant", parts=parts, origin=self.origin,
                          incomplete=not done)
        return Done(message=message, usage=usage_of(self.usage), finish_reason=self.stop_reason,
                    finish=neutral_finish(self.stop_reason))
