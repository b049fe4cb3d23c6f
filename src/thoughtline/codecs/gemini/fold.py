"""Fold a ``streamGenerateContent`` stream into the same Message its whole response decodes to.

Every chunk is a whole ``GenerateContentResponse`` holding the next parts; the transport yields
them from SSE (``alt=sse``) or from a streamed JSON array (no ``alt``; recorded in
``llm-gemini-*.json-array-stream.txt``) with the same payloads, so one fold serves both framings.
Parts go through the same ``PartsBuilder`` as a whole response, so stream and whole agree by
construction.

Vertex can stream one function call over several parts (recorded in
``vercel-google-vertex-stream-no-args-tool-call.chunks.txt``): a part with the ``name`` and
``willContinue``, parts with ``partialArgs`` (``jsonPath`` + a typed value, strings continued while
``willContinue``), and an empty ``functionCall`` that ends it. The fold assembles the ``args``
object and hands the finished call to the builder; its arguments are shown in one delta then. A
``jsonPath`` is held to the nesting bound (``shape.MAX_DEPTH``) and may name an array item only up
to one past the last (no gaps): a hostile path would otherwise build a value too deep to write or an
array of a billion nulls.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.gemini.decode import (
    candidate_parts,
    check_error,
    first_candidate,
    neutral_finish,
    usage_of,
)
from thoughtline.codecs.gemini.parts import PartsBuilder, signature_of
from thoughtline.codecs.gemini.wire import FC, FC_SNAKE, SIG, THOUGHT, text_of
from thoughtline.errors import ProtocolError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import Message, Origin

Delta = ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta
_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue", "structValue",
               "listValue")


class _OpenCall:
    """A Vertex function call still streaming its arguments."""

    __slots__ = ("args", "id", "name", "signature")

    def __init__(self, call: Mapping[str, Any], signature: str | None) -> None:
        self.name = text_of(call.get("name"))
        self.id = call.get("id")
        self.args: dict[str, Any] = {}
        self.signature = signature

    def apply(self, items: Any) -> None:
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, Mapping):
                continue
            key = next((k for k in _VALUE_KEYS if k in item), None)
            if key is None:
                continue
            value = None if key == "nullValue" else item[key]
            _assign(self.args, text_of(item.get("jsonPath")), value,
                    append=key == "stringValue")

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "args": self.args}
        if isinstance(self.id, str) and self.id:
            out["id"] = self.id
        return out


def _assign(root: dict[str, Any], path: str, value: Any, *, append: bool) -> None:
    steps: list[str | int] = [m.group(1) if m.group(1) is not None else int(m.group(2))
                              for m in _STEP.finditer(path.removeprefix("$"))]
    if not steps:
        return
    if len(steps) >= shape.MAX_DEPTH or shape.deeper_than(value, shape.MAX_DEPTH - len(steps)):
        raise ProtocolError(shape.too_deep("functionCall.partialArgs"))
    node: Any = root
    for step, following in itertools.pairwise(steps):
        fresh: Any = [] if isinstance(following, int) else {}
        if isinstance(step, int) and isinstance(node, list):
            _extend(node, step)
            if node[step] is None:
                node[step] = fresh
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict):
            node = node.setdefault(step, fresh)
        else:
            return
    last = steps[-1]
    if isinstance(last, int) and isinstance(node, list):
        _extend(node, last)
        node[last] = (node[last] + value if append and isinstance(node[last], str) else value)
    elif isinstance(last, str) and isinstance(node, dict):
        previous = node.get(last)
        node[last] = previous + value if append and isinstance(previous, str) else value


def _extend(node: list[Any], index: int) -> None:
    if index > len(node):
        raise ProtocolError(f"functionCall.partialArgs names item {index} of an array of "
                            f"{len(node)}")
    if index == len(node):
        node.append(None)


class StreamFold:
    """``add_event`` each chunk (returns the deltas to show); ``finish`` returns the turn."""

    def __init__(self, origin: Origin, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.saw_chunk = False
        self.finish_reason: str | None = None
        self.usage: Any = None
        self._builder: PartsBuilder | None = None
        self._call: _OpenCall | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def add_event(self, event_type: str, payload: Any) -> list[Delta]:
        """One stream element (SSE ``data:`` payload or JSON-array element; no event names)."""
        return self.add(payload)

    def add(self, chunk: Any) -> list[Delta]:
        # Exact-type checks first: parsed JSON is plain dicts and lists, and the abstract
        # ``Mapping`` check costs more than the rest of a text chunk's fold.
        if type(chunk) is not dict and not isinstance(chunk, Mapping):
            raise ProtocolError("stream chunk is not a JSON object")
        if "error" in chunk:
            check_error(chunk)
        self.saw_chunk = True
        builder = self._builder
        if builder is None:
            rid = text_of(chunk.get("responseId"))
            builder = self._builder = PartsBuilder(
                self.origin, scope=f"{self.seed}:{rid}" if self.seed else rid)
        usage = chunk.get("usageMetadata")
        if usage:
            self.usage = usage
        candidates = chunk.get("candidates")
        candidate = (candidates[0] if type(candidates) is list and candidates
                     and type(candidates[0]) is dict else first_candidate(chunk))
        events: list[Delta] = []
        if candidate is None:
            return events
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is not list:
            parts = candidate_parts(candidate)
        for part in parts:
            self._part(builder, part, events)
        reason = candidate.get("finishReason")
        if type(reason) is str and reason:
            self.finish_reason = reason
        return events

    def _part(self, builder: PartsBuilder, part: Any, events: list[Delta]) -> None:
        if type(part) is not dict and not isinstance(part, Mapping):
            raise ProtocolError(f"content part is not an object: {part!r:.80}")
        if self._call is not None and FC not in part:
            self._close(builder, events)  # a streamed call ends where another part begins
        text = part.get("text")
        if type(text) is str and "functionCall" not in part:
            thought = part.get(THOUGHT) is True
            signature = part.get(SIG)
            builder.add_text(text, thought=thought,
                             signature=signature if type(signature) is str and signature
                             else None)
            if text:
                events.append(ReasoningDelta(text) if thought else TextDelta(text))
            return
        call = part.get(FC)
        if call is None:
            call = part.get(FC_SNAKE)
        if call is not None:
            self._call_part(builder, call, signature_of(part), events)
            return
        builder.add(part)

    def _call_part(self, builder: PartsBuilder, call: Any, signature: str | None,
                   events: list[Delta]) -> None:
        if not isinstance(call, Mapping):
            raise ProtocolError(f"functionCall is not an object: {call!r:.80}")
        open_call = self._call
        if open_call is not None and not call.get("name"):
            if signature is not None:
                open_call.signature = signature
            if "partialArgs" in call:
                open_call.apply(call["partialArgs"])
            if not call.get("willContinue"):
                self._close(builder, events)
            return
        if open_call is not None:
            self._close(builder, events)
        index = builder.calls
        if call.get("willContinue") is True:
            self._call = _OpenCall(call, signature)
            self._call.apply(call.get("partialArgs"))
            events.append(ToolCallStarted(index=index, id=text_of(call.get("id")),
                                          name=self._call.name))
            return
        builder.add_call(call, signature)
        self._emit_call(builder, index, events, started=True)

    def _close(self, builder: PartsBuilder, events: list[Delta]) -> None:
        call, self._call = self._call, None
        if call is None:
            return
        index = builder.calls
        builder.add_call(call.wire(), call.signature)
        self._emit_call(builder, index, events, started=False)

    def _emit_call(self, builder: PartsBuilder, index: int, events: list[Delta], *,
                   started: bool) -> None:
        made = builder.last_call()
        if started:
            events.append(ToolCallStarted(index=index, id=made.id, name=made.name))
        events.append(ToolCallDelta(index=index, text=made.arguments))

    def finish(self, *, complete: bool = True) -> Done:
        """The folded turn; ``complete=False`` marks it (and its thoughts) incomplete."""
        builder = self._builder or PartsBuilder(self.origin)
        if self._call is not None:
            self._close(builder, [])
        message = Message(role="assistant", parts=tuple(builder.parts(complete=complete)),
                          origin=self.origin, incomplete=not complete)
        return Done(message=message, usage=usage_of(self.usage), finish_reason=self.finish_reason,
                    finish=neutral_finish(self.finish_reason, calls=bool(builder.calls)))


def fold(chunks: Iterable[Any], origin: Origin, *, seed: str = "") -> Done:
    """Fold a whole recorded stream (convenience for tests and benchmarks)."""
    state = StreamFold(origin, seed=seed)
    for chunk in chunks:
        state.add(chunk)
    return state.finish()
