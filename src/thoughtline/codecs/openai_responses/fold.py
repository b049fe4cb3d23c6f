"""Fold a Responses event stream into the same turn as the whole response.

The fold rebuilds the response's ``output`` list and hands it to ``decode.message_of``, so a stream
and its whole response give the same canonical Message by construction. An item's final form is
the one ``response.output_item.done`` carries: "use the completed reasoning item … from
``response.output_item.done`` … the ``encrypted_content`` in ``response.output_item.added`` may be
incomplete" (developers.openai.com/api/docs/guides/reasoning). OpenAI even re-issues a reasoning
item's encrypted content in ``response.completed`` (pydantic-ai-openai-responses-gpt55-phase-stream,
vercel openai-reasoning-encrypted-content) and OpenRouter renames its id there
(pydantic-ai-openrouter-responses-raw-cot-stream): the ``done`` item wins, the final response
only fills items the stream never finished. An item cut before its ``done`` is rebuilt from its
deltas and marked incomplete (its reasoning is never replayed). Fragments are kept in lists and
joined once: linear in the stream's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from thoughtline.codecs import shape
from thoughtline.codecs.openai_responses.decode import TEXT_KEYS, failed, message_of
from thoughtline.codecs.openai_responses.wire import (
    EV_ARGS_DELTA,
    EV_ARGS_DONE,
    EV_CREATED,
    EV_ERROR,
    EV_ITEM_ADDED,
    EV_ITEM_DONE,
    EV_PART_ADDED,
    EV_REASONING_DELTA,
    EV_REFUSAL_DELTA,
    EV_SUMMARY_DELTA,
    EV_TEXT_DELTA,
    FINAL_EVENTS,
    FUNCTION_CALL,
    MESSAGE,
    OUTPUT_TEXT,
    REASONING,
    REASONING_TEXT,
    SUMMARY_TEXT,
    is_map,
    text_of,
)
from thoughtline.errors import ProtocolError
from thoughtline.events import Done, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from thoughtline.messages import Origin

Delta = ReasoningDelta | TextDelta | ToolCallStarted | ToolCallDelta


class _Item:
    """One output item while it streams: the ``added`` form, its fragments, its ``done`` form."""

    __slots__ = ("added", "args", "call_index", "done", "parts", "reasoning", "summary")

    def __init__(self, added: Mapping[str, Any]) -> None:
        self.added = added
        self.done: Mapping[str, Any] | None = None
        self.call_index = -1
        self.parts: dict[int, tuple[Mapping[str, Any], list[str]]] = {}  # message content
        self.summary: dict[int, list[str]] = {}
        self.reasoning: dict[int, list[str]] = {}
        self.args: list[str] = []

    def rebuilt(self) -> dict[str, Any]:
        """The item as far as it streamed (no ``done`` arrived)."""
        item = dict(self.added)
        kind = item.get("type")
        if kind == MESSAGE and self.parts:
            content = []
            for index in sorted(self.parts):
                shape, pieces = self.parts[index]
                key = TEXT_KEYS.get(shape.get("type", ""), "text")
                content.append({**shape, key: "".join(pieces)})
            item["content"] = content
        elif kind == FUNCTION_CALL and self.args:
            item["arguments"] = "".join(self.args)
        elif kind == REASONING:
            if self.summary:
                item["summary"] = [{"type": SUMMARY_TEXT, "text": "".join(self.summary[i])}
                                   for i in sorted(self.summary)]
            if self.reasoning:
                item["content"] = [{"type": REASONING_TEXT, "text": "".join(self.reasoning[i])}
                                   for i in sorted(self.reasoning)]
        return item


class StreamFold:
    """``add_event`` each (event type, payload); ``finish`` returns the folded turn."""

    def __init__(self, origin: Origin, *, seed: str = "") -> None:
        self.origin = origin
        self.seed = seed
        self.saw_chunk = False
        self.response: Mapping[str, Any] = {}
        self._final = False
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, int] = {}
        self._calls = 0
        self._deltas = {EV_TEXT_DELTA: self._text, EV_REFUSAL_DELTA: self._text,
                        EV_ARGS_DELTA: self._args, EV_SUMMARY_DELTA: self._summary,
                        EV_REASONING_DELTA: self._reasoning}

    @property
    def finished(self) -> bool:
        return self._final

    def add_event(self, event_type: str, payload: Any) -> list[Delta]:
        """One event; its type is the SSE ``event:`` name, else the payload's ``type``."""
        if type(payload) is not dict and not is_map(payload):
            raise ProtocolError("stream event is not a JSON object")
        kind = event_type or payload.get("type", "")
        self.saw_chunk = True
        try:
            fast = self._deltas.get(kind)  # the bulk of a stream: one delta per event
        except TypeError:
            raise shape.bad_key(kind, "type") from None
        if fast is not None:
            try:
                # (-1: no ``output_index``; never a key, like any position that is not one)
                item = self._items.get(payload.get("output_index", -1)) or self._item(payload)
                return fast(payload, item) if item is not None else []
            except TypeError:
                raise ProtocolError(f"{kind} event: `output_index`, `content_index` and "
                                    "`summary_index` must be integers: "
                                    f"{payload!r:.120}") from None
        if kind == EV_ERROR:
            raise ProtocolError(f"provider sent an error in the stream: {payload!r:.300}")
        if kind in FINAL_EVENTS or kind == EV_CREATED:
            response = payload.get("response")
            if is_map(response):
                self.response = response
                failed(response)
            self._final = self._final or kind in FINAL_EVENTS
            return []
        if kind == EV_ITEM_ADDED:
            return self._added(payload)
        item = self._item(payload)
        if item is None:
            return []
        if kind == EV_ITEM_DONE:
            done = payload.get("item")
            if is_map(done):
                item.done = done
        elif kind == EV_PART_ADDED:
            part = payload.get("part")
            index = shape.key(payload.get("content_index", 0), "content_index")
            if is_map(part) and item.added.get("type") == MESSAGE and index not in item.parts:
                item.parts[index] = (part, [])
        elif kind == EV_ARGS_DONE:
            final = payload.get("arguments")
            if isinstance(final, str):
                item.args = [final]
        return []

    def _added(self, payload: Mapping[str, Any]) -> list[Delta]:
        raw = payload.get("item")
        if not is_map(raw):
            raise ProtocolError(f"output_item.added without an item: {payload!r:.120}")
        index = shape.position(payload.get("output_index"), "output_index", len(self._items))
        item = self._items[index] = _Item(raw)
        item_id = text_of(raw.get("id"))
        if item_id:
            self._by_id[item_id] = index
        if raw.get("type") != FUNCTION_CALL:
            return []
        item.call_index, self._calls = self._calls, self._calls + 1
        return [ToolCallStarted(index=item.call_index, id=text_of(raw.get("call_id")),
                                name=text_of(raw.get("name")))]

    def _item(self, payload: Mapping[str, Any]) -> _Item | None:
        index = payload.get("output_index")
        if isinstance(index, int) and index in self._items:
            return self._items[index]
        found = self._by_id.get(text_of(payload.get("item_id")))
        if found is None and payload.get("type") == EV_ITEM_DONE and is_map(payload.get("item")):
            # a done item whose added event never came: it is complete on its own
            index = shape.position(index, "output_index", len(self._items))
            self._items[index] = _Item(payload["item"])
            return self._items[index]
        return self._items.get(found) if found is not None else None

    def _text(self, payload: Mapping[str, Any], item: _Item) -> list[Delta]:
        index = payload.get("content_index", 0)
        slot = item.parts.get(index)
        if slot is None:
            refusal = payload.get("type") == EV_REFUSAL_DELTA
            slot = item.parts[index] = ({"type": "refusal" if refusal else OUTPUT_TEXT}, [])
        delta = payload.get("delta")
        if type(delta) is not str or not delta:
            return []
        slot[1].append(delta)
        return [TextDelta(delta)]

    def _args(self, payload: Mapping[str, Any], item: _Item) -> list[Delta]:
        delta = payload.get("delta")
        if type(delta) is not str or not delta:
            return []
        item.args.append(delta)
        return [ToolCallDelta(index=item.call_index, text=delta)]

    def _summary(self, payload: Mapping[str, Any], item: _Item) -> list[Delta]:
        return self._thought(item.summary, payload.get("summary_index", 0), payload)

    def _reasoning(self, payload: Mapping[str, Any], item: _Item) -> list[Delta]:
        return self._thought(item.reasoning, payload.get("content_index", 0), payload)

    @staticmethod
    def _thought(into: dict[int, list[str]], index: Any,
                 payload: Mapping[str, Any]) -> list[Delta]:
        delta = payload.get("delta")
        if type(delta) is not str or not delta:
            return []
        pieces = into.get(index)
        if pieces is None:
            pieces = into[index] = []
        pieces.append(delta)
        return [ReasoningDelta(delta)]

    def output(self) -> tuple[list[dict[str, Any]], tuple[bool, ...]]:
        """The output list so far and, per item, whether it is complete."""
        final = self.response.get("output") if self._final else None
        final = final if isinstance(final, list) else []
        out: list[Any] = []
        complete: list[bool] = []
        for index in sorted(set(self._items) | set(range(len(final)))):
            item = self._items.get(index)
            if item is not None and item.done is not None:
                out.append(item.done)
                complete.append(True)
            elif index < len(final) and is_map(final[index]):
                out.append(final[index])
                complete.append(True)
            elif item is not None:
                out.append(item.rebuilt())
                complete.append(False)
        return out, tuple(complete)

    def finish(self, *, complete: bool = True) -> Done:
        """The folded turn; ``complete=False`` (or no final event) marks it incomplete."""
        output, done = self.output()
        incomplete = not complete or not self._final
        response = {**self.response, "output": output}
        # a turn cut short replays none of its items: what they led to may be missing
        flags = tuple(False for _ in done) if incomplete else done
        return message_of(response, self.origin, seed=self.seed, complete=flags,
                          incomplete=incomplete)


def fold(events: Iterable[tuple[str, Any]], origin: Origin) -> Done:
    """Fold a whole recorded stream (convenience for tests and the gateway)."""
    state = StreamFold(origin)
    for event_type, payload in events:
        state.add_event(event_type, payload)
    return state.finish()
