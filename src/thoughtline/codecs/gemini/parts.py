"""The one builder that turns Gemini wire parts into canonical parts, for decode and fold alike.

A whole response and its stream differ only in how the parts are cut: a stream sends a text as
many parts (one per chunk) and its signature on a trailing part of its own, often with empty text
(ai.google.dev/gemini-api/docs/thought-signatures; pydantic/pydantic-ai#3481; recorded in
``fantasy-gemini3-pro-thinking-function-call-stream.i1.response.sse.txt``), where the whole
response has one text part carrying the signature. The rule, applied to both:

- consecutive text parts of the same kind (thought or answer) join into one run;
- a signature stays on its run, verbatim, wherever in the run it came (Gemini 3 signs the last
  chunk, Gemini 2.5 the first: ``pydantic-ai-gemini25-pro-thinking-stream.i0.response.sse.txt``);
  a second signature starts a new run, so two signatures are never merged;
- an empty text part without a signature carries nothing and is dropped; one with a signature
  signs the open run, or (after function calls) stands as an empty signed text of its own;
- a ``functionCall`` is one tool call, its signature on it (parallel calls: only the first is
  signed, ai.google.dev/gemini-api/docs/thought-signatures); any other part is kept verbatim as an
  ``Opaque``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.gemini.wire import FC, FC_SNAKE, NS, SIG, SYNTHETIC_ID, THOUGHT
from thoughtline.errors import ProtocolError
from thoughtline.messages import FrozenDict, Opaque, Origin, Part, Reasoning, Text, ToolCall

_NO_NATIVE = FrozenDict()


class _Run:
    """Text (or thought) fragments joined once, with the signature that closed the run."""

    __slots__ = ("fragments", "signature", "thought")

    def __init__(self, thought: bool) -> None:
        self.thought = thought
        self.fragments: list[str] = []
        self.signature: str | None = None


def json_text(value: Any) -> str:
    """Function-call ``args`` (an object on this wire) as compact JSON text, key order kept."""
    return shape.json_text(value, "functionCall.args")


def synthetic_id(scope: str, position: int) -> str:
    digest = hashlib.sha256(f"{scope}:{position}".encode()).hexdigest()[:20]
    return SYNTHETIC_ID + digest


def signature_of(part: Mapping[str, Any]) -> str | None:
    value = part.get(SIG)
    return value if isinstance(value, str) and value else None


class PartsBuilder:
    """Feed wire parts in order (``add``); ``parts()`` gives the canonical parts."""

    __slots__ = ("_items", "_open", "calls", "origin", "scope")

    def __init__(self, origin: Origin, *, scope: str = "") -> None:
        self.origin = origin
        self.scope = scope  # seed + response id: makes synthetic call ids unique
        self._items: list[_Run | ToolCall | Opaque] = []
        self._open: _Run | None = None
        self.calls = 0

    def add(self, part: Any) -> None:
        if not isinstance(part, Mapping):
            raise ProtocolError(f"content part is not an object: {part!r:.80}")
        call = part.get(FC)
        if call is None:
            call = part.get(FC_SNAKE)
        if call is not None:
            self.add_call(call, signature_of(part))
            return
        text = part.get("text")
        if isinstance(text, str):
            self.add_text(text, thought=part.get(THOUGHT) is True, signature=signature_of(part))
            return
        self._open = None
        self._items.append(Opaque(native={NS: dict(part)}, origin=self.origin))

    def add_text(self, text: str, *, thought: bool, signature: str | None) -> None:
        if not text and signature is None:
            return
        run = self._open
        if run is None or run.thought != thought or (
                signature is not None and run.signature is not None):
            run = _Run(thought)
            self._items.append(run)
        if text:
            run.fragments.append(text)
        if signature is not None:
            run.signature = signature
        self._open = run

    def add_call(self, call: Any, signature: str | None) -> None:
        if type(call) is not dict and not isinstance(call, Mapping):
            raise ProtocolError(f"functionCall is not an object: {call!r:.80}")
        self._open = None
        args = call.get("args")
        arguments = json_text(args) if args is not None else "{}"
        call_id = call.get("id")
        if type(call_id) is not str or not call_id:
            call_id = synthetic_id(self.scope, self.calls)
        name = call.get("name")
        native = {NS: {SIG: signature}} if signature is not None else _NO_NATIVE
        self._items.append(ToolCall(id=call_id, name=name if type(name) is str else "",
                                    arguments=arguments, native=native))
        self.calls += 1

    def last_call(self) -> ToolCall:
        """The tool call added last (the fold shows its arguments)."""
        item = self._items[-1]
        assert isinstance(item, ToolCall)
        return item

    def parts(self, *, complete: bool = True) -> list[Part]:
        out: list[Part] = []
        for item in self._items:
            if not isinstance(item, _Run):
                out.append(item)
                continue
            text = "".join(item.fragments)
            native = {NS: {SIG: item.signature}} if item.signature is not None else {}
            if item.thought:
                out.append(Reasoning(kind="summary", summary=text, origin=self.origin,
                                     complete=complete, native=native))
            else:
                out.append(Text(text=text, native=native))
        return out
