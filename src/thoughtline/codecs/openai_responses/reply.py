"""The Responses API answer a gateway gives Codex and Agents-SDK clients: whole, streamed, error.

Owns rendering a canonical turn as a ``response`` object and as the exact SSE sequence
(``response.created``, ``response.in_progress``, ``response.output_item.added`` / ``.done``,
``response.reasoning_summary_part.added`` / ``…text.delta`` / ``…text.done`` / ``…part.done``,
``response.content_part.added`` / ``response.output_text.delta`` / ``.done`` /
``response.content_part.done``, ``response.function_call_arguments.delta`` / ``.done``
(``response.custom_tool_call_input.*`` for custom tools), ``response.completed`` with usage),
the error object, ``error`` / ``response.failed`` events, and the ``compaction`` answer.

Reasoning the client must send back: items a Responses upstream made go out as they came
(``id``, ``summary``, ``encrypted_content``, ``phase`` on messages — byte for byte); any other
reasoning becomes one ``reasoning`` item per turn whose ``encrypted_content`` is the value the
gateway minted for the turn and whose ``summary`` is the readable reasoning (a turn whose
reasoning is all opaque — Gemini signatures, Anthropic signatures — gets an empty summary), so
the client echoes a reference the gateway swaps the stored turn back in for. Pure; the minted
value is given, never computed here.

Facts: the ``openai`` SDK's ``types/responses`` (event and object shapes) and its stream
accumulator (``lib/streaming/responses``), which needs ``content_part.added`` before text deltas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from thoughtline.codecs.openai_responses.client import COMPACTION, CUSTOM_CALL, CUSTOM_INPUT
from thoughtline.codecs.openai_responses.tools import (
    NAMESPACE,
    NO_TOOLS,
    ToolNames,
    client_name,
    custom_input,
)
from thoughtline.codecs.openai_responses.wire import (
    API,
    ENCRYPTED,
    FUNCTION_CALL,
    MESSAGE,
    NS,
    OUTPUT_ONLY_PART_KEYS,
    OUTPUT_TEXT,
    REASONING,
    SUMMARY_TEXT,
    is_map,
    text_of,
)
from thoughtline.events import Done, Event, ReasoningDelta, TextDelta
from thoughtline.messages import Message, Opaque, Reasoning, Text, ToolCall, Usage

#: HTTP status → Responses error ``type`` (the OpenAI error object's words).
_ERRORS: Mapping[int, str] = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error",
    429: "rate_limit_error", 500: "server_error", 502: "server_error", 503: "server_error",
    504: "server_error",
}


def reasoning_id(minted: str) -> str:
    """The ``id`` of the reasoning item that carries ``minted`` (derived, so it is stable)."""
    return "rs_" + hashlib.sha256(minted.encode()).hexdigest()[:40]


def message_id(response_id: str, number: int) -> str:
    """The ``id`` of the answer's ``number``-th message item the gateway made."""
    return f"msg_{response_id.removeprefix('resp_')}_{number}"


def own_item(part: Reasoning | Opaque, message: Message) -> Mapping[str, Any] | None:
    """The item a Responses upstream made for ``part``, when it goes to the client verbatim."""
    item = part.native.get(NS)
    origin = part.origin or message.origin
    if item is None or origin is None or origin.api != API:
        return None
    if isinstance(part, Reasoning) and not (part.complete and part.data):
        return None
    return item


def _hidden(message: Message) -> bool:
    """True when the turn holds something the client cannot be shown (kept in the store)."""
    for part in message.parts:
        if isinstance(part, Reasoning) and own_item(part, message) is None:
            return True
        if isinstance(part, Opaque) and part.namespace != NS:
            return True
        if isinstance(part, ToolCall | Text) and any(k != NS for k in part.native):
            return True
    return False


def _minted_item(minted: str, summary: str) -> dict[str, Any]:
    parts = [{"type": SUMMARY_TEXT, "text": summary}] if summary else []
    return {"type": REASONING, "id": reasoning_id(minted), "summary": parts,
            ENCRYPTED: minted}


def _call_item(call: ToolCall, names: ToolNames, index: int,
               response_id: str) -> dict[str, Any]:
    native = dict(call.native.get(NS, {}))
    wire = client_name(call.name, native, names)
    if native.get("type") == CUSTOM_CALL or (not native and names.is_custom(call.name)):
        custom = {"type": CUSTOM_CALL, "id": native.get("id") or f"ctc_{response_id}_{index}",
                  "status": "completed", "call_id": call.id, "name": wire.name}
        if wire.namespace:
            custom[NAMESPACE] = wire.namespace
        custom[CUSTOM_INPUT] = custom_input(call.arguments)
        return custom
    item: dict[str, Any] = {"type": FUNCTION_CALL,
                            "id": native.get("id") or f"fc_{response_id}_{index}",
                            "status": native.get("status") or "completed"}
    for key, value in native.items():
        if key not in item:
            item[key] = value
    item.update(call_id=call.id, name=wire.name)
    if wire.namespace:
        item[NAMESPACE] = wire.namespace
    item["arguments"] = call.arguments
    return item


def _message_item(shell: Mapping[str, Any] | None, texts: list[str],
                  item_id: str) -> dict[str, Any]:
    if shell is None:
        return {"type": MESSAGE, "id": item_id, "status": "completed", "role": "assistant",
                "content": [{"type": OUTPUT_TEXT, "text": "".join(texts), "annotations": []}]}
    pending = iter(texts)
    content = []
    for part in shell.get("content") or ():
        if is_map(part) and part.get("type") == OUTPUT_TEXT and part.get("text", "") is None:
            part = {k: (next(pending, "") if k == "text" else v) for k, v in part.items()
                    if k not in OUTPUT_ONLY_PART_KEYS}
        elif is_map(part) and part.get("type") == "refusal" and part.get("refusal", "") is None:
            part = {k: (next(pending, "") if k == "refusal" else v) for k, v in part.items()}
        content.append(part)
    return {k: (content if k == "content" else v) for k, v in shell.items()}


def output_json(message: Message, *, response_id: str, minted: str = "",
                names: ToolNames = NO_TOOLS) -> list[dict[str, Any]]:
    """The turn's output items as the client will send them back."""
    out: list[dict[str, Any]] = []
    shell: Mapping[str, Any] | None = None
    texts: list[str] = []
    readable = [p.text or p.summary or "" for p in message.parts
                if isinstance(p, Reasoning) and own_item(p, message) is None]
    placed = False

    messages = 0

    def flush() -> None:
        nonlocal shell, messages
        if shell is not None or any(texts):
            out.append(_message_item(shell, texts, message_id(response_id, messages)))
            messages += 1
        shell = None
        texts.clear()

    for part in message.parts:
        if isinstance(part, Text):
            native = part.native.get(NS)
            if native is not None and "item" in native:
                flush()
                shell = native["item"]
            texts.append(part.text)
            continue
        flush()
        if isinstance(part, Reasoning | Opaque):
            item = own_item(part, message)
            if item is not None:
                out.append(dict(item))
            elif isinstance(part, Reasoning) and minted and not placed:
                out.append(_minted_item(minted, "\n\n".join(t for t in readable if t)))
                placed = True
        elif isinstance(part, ToolCall):
            out.append(_call_item(part, names, len(out), response_id))
    flush()
    if minted and not placed and _hidden(message):
        out.insert(0, _minted_item(minted, ""))
    return out


def usage_json(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens,
                                     "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens}


def _status(done: Done) -> tuple[str, dict[str, Any] | None]:
    if done.message.incomplete or done.finish in ("length", "content_filter"):
        reason = "content_filter" if done.finish == "content_filter" else "max_output_tokens"
        return "incomplete", {"reason": reason}
    return "completed", None


def response_json(*, response_id: str, model: str, created: int, status: str = "completed",
                  output: Iterable[Mapping[str, Any]] = (), usage: Usage | None = None,
                  incomplete: Mapping[str, Any] | None = None,
                  error: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``response`` object (the whole answer, or the one a stream event carries)."""
    return {"id": response_id, "object": "response", "created_at": created, "status": status,
            "error": dict(error) if error else None, "incomplete_details": incomplete,
            "instructions": None, "metadata": {}, "model": model, "output": list(output),
            "parallel_tool_calls": True, "previous_response_id": None, "store": False,
            "tool_choice": "auto", "tools": [],
            "usage": usage_json(usage) if usage is not None else None}


def whole_json(done: Done, *, response_id: str, model: str, created: int, minted: str = "",
               names: ToolNames = NO_TOOLS) -> dict[str, Any]:
    """The whole ``response`` object for a finished turn."""
    status, incomplete = _status(done)
    return response_json(response_id=response_id, model=model, created=created, status=status,
                         output=output_json(done.message, response_id=response_id,
                                            minted=minted, names=names),
                         usage=done.usage, incomplete=incomplete)


def compaction_item(minted: str) -> dict[str, Any]:
    """The one ``compaction`` item naming a stored checkpoint by its minted value."""
    return {"type": COMPACTION, "id": "cmp_" + reasoning_id(minted)[3:], ENCRYPTED: minted}


def compaction_json(*, response_id: str, model: str, created: int, minted: str,
                    usage: Usage | None = None) -> dict[str, Any]:
    """The answer to a ``compaction_trigger``: a response with exactly one ``compaction``
    item."""
    return response_json(response_id=response_id, model=model, created=created,
                         output=[compaction_item(minted)], usage=usage or Usage())


def compacted_json(*, response_id: str, created: int, minted: str,
                   user_items: Iterable[Mapping[str, Any]] = (),
                   usage: Usage | None = None) -> dict[str, Any]:
    """The answer of ``POST /v1/responses/compact``: the client's user messages, then exactly
    one ``compaction`` item (``object: response.compaction``)."""
    return {"id": response_id, "object": "response.compaction", "created_at": created,
            "output": [*user_items, compaction_item(minted)],
            "usage": usage_json(usage or Usage())}


def error_type(status: int) -> str:
    found = _ERRORS.get(status)
    if found is not None:
        return found
    return "invalid_request_error" if 400 <= status < 500 else "server_error"


def error_json(message: str, *, status: int = 400, kind: str | None = None,
               code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """The OpenAI error object."""
    return {"error": {"message": message, "type": kind or error_type(status), "param": param,
                      "code": code}}


def _event(payload: Mapping[str, Any]) -> bytes:
    return b"event: " + payload["type"].encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def error_frame(message: str, *, status: int = 500, code: str | None = None,
                sequence: int = 0) -> bytes:
    """An ``error`` event inside an already started stream."""
    return _event({"type": "error", "code": code or error_type(status), "message": message,
                   "param": None, "sequence_number": sequence})


class ResponseStreamWriter:
    """Renders one streamed answer as Responses SSE events (bytes).

    Readable reasoning streams live as the summary of the turn's one minted ``reasoning`` item,
    text as ``message`` items; each is closed when the other kind starts. Everything else —
    tool calls, a minted item for hidden reasoning — goes out whole at the end (a call's
    arguments as one delta): some upstreams stream arguments in another spelling than the
    stored turn's, and the client must send back exactly what is stored. An item keeps its
    ``id`` from ``output_item.added`` to ``.done`` (the SDK and Codex insist), so when the
    upstream is a Responses API (``live=False``), whose items' real ids are only known once
    they are whole, every item goes out at the end, each with its full event sequence.
    """

    def __init__(self, *, response_id: str, model: str, created: int, minted: str = "",
                 names: ToolNames = NO_TOOLS, live: bool = True) -> None:
        self._response_id = response_id
        self._model = model
        self._created = created
        self._minted = minted
        self._names = names
        self._live_ok = live
        self._sequence = 0
        self._index = 0  # the next output_index
        self._open: str | None = None
        self._open_id = ""
        self._text: list[str] = []
        self._messages = 0  # message items begun
        self._thought = False  # the minted reasoning item went out live
        self._live: dict[str, tuple[int, str, str]] = {}  # id → (index, kind, text) streamed

    def _emit(self, payload: dict[str, Any]) -> bytes:
        payload["sequence_number"] = self._sequence
        self._sequence += 1
        return _event(payload)

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return response_json(response_id=self._response_id, model=self._model,
                             created=self._created, status=status, **extra)

    def start(self) -> bytes:
        """``response.created`` and ``response.in_progress``."""
        return (self._emit({"type": "response.created",
                            "response": self._response("in_progress")})
                + self._emit({"type": "response.in_progress",
                              "response": self._response("in_progress")}))

    def _added(self, item: Mapping[str, Any]) -> bytes:
        return self._emit({"type": "response.output_item.added", "output_index": self._index,
                           "item": item})

    def _begin(self, kind: str) -> bytes:
        self._open = kind
        if kind == REASONING:
            self._open_id = reasoning_id(self._minted)
            self._thought = True
            return self._added({"type": REASONING, "id": self._open_id, "summary": []}) \
                + self._part_added(REASONING)
        self._open_id = message_id(self._response_id, self._messages)
        self._messages += 1
        return self._added({"type": MESSAGE, "id": self._open_id, "status": "in_progress",
                            "role": "assistant", "content": []}) + self._part_added(MESSAGE)

    def _part_added(self, kind: str) -> bytes:
        if kind == REASONING:
            return self._emit({"type": "response.reasoning_summary_part.added",
                               "item_id": self._open_id, "output_index": self._index,
                               "summary_index": 0, "part": {"type": SUMMARY_TEXT, "text": ""}})
        return self._emit({"type": "response.content_part.added", "item_id": self._open_id,
                           "output_index": self._index, "content_index": 0,
                           "part": {"type": OUTPUT_TEXT, "text": "", "annotations": []}})

    def _delta(self, text: str) -> bytes:
        if self._open == REASONING:
            return self._emit({"type": "response.reasoning_summary_text.delta",
                               "item_id": self._open_id, "output_index": self._index,
                               "summary_index": 0, "delta": text})
        return self._emit({"type": "response.output_text.delta", "item_id": self._open_id,
                           "output_index": self._index, "content_index": 0, "delta": text,
                           "logprobs": []})

    def _close(self) -> bytes:
        """Ends the open item's text (its ``output_item.done`` waits for the final item)."""
        if self._open is None:
            return b""
        text = "".join(self._text)
        index, item_id = self._index, self._open_id
        if self._open == REASONING:
            part: dict[str, Any] = {"type": SUMMARY_TEXT, "text": text}
            out = (self._emit({"type": "response.reasoning_summary_text.done",
                               "item_id": item_id, "output_index": index, "summary_index": 0,
                               "text": text})
                   + self._emit({"type": "response.reasoning_summary_part.done",
                                 "item_id": item_id, "output_index": index,
                                 "summary_index": 0, "part": part}))
        else:
            part = {"type": OUTPUT_TEXT, "text": text, "annotations": []}
            out = (self._emit({"type": "response.output_text.done", "item_id": item_id,
                               "output_index": index, "content_index": 0, "text": text,
                               "logprobs": []})
                   + self._emit({"type": "response.content_part.done", "item_id": item_id,
                                 "output_index": index, "content_index": 0, "part": part}))
        self._live[item_id] = (index, self._open, text)
        self._open, self._text = None, []
        self._index += 1
        return out

    def event(self, event: Event) -> bytes | None:
        """The frames for one event (None for events a client is not shown)."""
        if not self._live_ok or not isinstance(event, ReasoningDelta | TextDelta):
            return None
        if not event.text:
            return None
        kind = REASONING if isinstance(event, ReasoningDelta) else MESSAGE
        if kind == REASONING and (not self._minted or (self._thought and self._open != kind)):
            return None  # the turn has one reasoning item: what follows shows in its summary
        out = b"" if self._open == kind else self._close() + self._begin(kind)
        self._text.append(event.text)
        return out + self._delta(event.text)

    def _whole(self, item: Mapping[str, Any]) -> bytes:
        """An item sent at once, with its whole event sequence."""
        kind = item.get("type")
        item_id = item.get("id")
        index = self._index
        where = {"item_id": item_id, "output_index": index}
        if kind == FUNCTION_CALL:
            out = self._added({**item, "status": "in_progress", "arguments": ""})
            out += self._emit({"type": "response.function_call_arguments.delta", **where,
                               "delta": item["arguments"]})
            out += self._emit({"type": "response.function_call_arguments.done", **where,
                               "name": item["name"], "arguments": item["arguments"]})
        elif kind == CUSTOM_CALL:
            out = self._added({**item, CUSTOM_INPUT: ""})
            out += self._emit({"type": "response.custom_tool_call_input.delta", **where,
                               "delta": item[CUSTOM_INPUT]})
            out += self._emit({"type": "response.custom_tool_call_input.done", **where,
                               CUSTOM_INPUT: item[CUSTOM_INPUT]})
        elif kind == REASONING:
            out = self._added({**item, "summary": []})
            for number, part in enumerate(item.get("summary") or ()):
                text = part.get("text", "") if is_map(part) else ""
                shown = {"type": SUMMARY_TEXT, "text": text}
                at = {**where, "summary_index": number}
                out += self._emit({"type": "response.reasoning_summary_part.added", **at,
                                   "part": {"type": SUMMARY_TEXT, "text": ""}})
                out += self._emit({"type": "response.reasoning_summary_text.delta", **at,
                                   "delta": text})
                out += self._emit({"type": "response.reasoning_summary_text.done", **at,
                                   "text": text})
                out += self._emit({"type": "response.reasoning_summary_part.done", **at,
                                   "part": shown})
        elif kind == MESSAGE:
            out = self._added({**item, "status": "in_progress", "content": []})
            for number, part in enumerate(item.get("content") or ()):
                at = {**where, "content_index": number}
                text_key = "refusal" if is_map(part) and part.get("type") == "refusal" else "text"
                text = part.get(text_key) or "" if is_map(part) else ""
                empty = {**part, text_key: ""} if is_map(part) else part
                out += self._emit({"type": "response.content_part.added", **at, "part": empty})
                if text_key == "text":
                    out += self._emit({"type": "response.output_text.delta", **at,
                                       "delta": text, "logprobs": []})
                    out += self._emit({"type": "response.output_text.done", **at,
                                       "text": text, "logprobs": []})
                out += self._emit({"type": "response.content_part.done", **at, "part": part})
        else:
            out = self._added(item)
        self._index += 1
        return out + self._emit({"type": "response.output_item.done", "output_index": index,
                                 "item": item})

    def finish(self, done: Done) -> bytes:
        """The closing events: items not streamed, each live item's ``output_item.done`` with
        its final form, and ``response.completed`` (or ``response.incomplete``)."""
        out = [self._close()]
        final = output_json(done.message, response_id=self._response_id, minted=self._minted,
                            names=self._names)
        for item in final:
            live = self._live.pop(text_of(item.get("id")), None)
            if live is not None and live[1] == item.get("type"):
                out.append(self._emit({"type": "response.output_item.done",
                                       "output_index": live[0], "item": item}))
            else:
                out.append(self._whole(item))
        for item_id, (index, kind, text) in self._live.items():  # shown, but not kept
            item = _minted_item(self._minted, text) if kind == REASONING else _message_item(
                None, [text], item_id)
            out.append(self._emit({"type": "response.output_item.done", "output_index": index,
                                   "item": item}))
        self._live.clear()
        status, incomplete = _status(done)
        name = "response.completed" if status == "completed" else "response.incomplete"
        out.append(self._emit({"type": name, "response": self._response(
            status, output=final, usage=done.usage, incomplete=incomplete)}))
        return b"".join(out)

    def compaction(self, usage: Usage | None = None) -> bytes:
        """The closing events of a compaction: its one ``compaction`` item (the minted value
        names the stored checkpoint) and ``response.completed``."""
        item = compaction_item(self._minted)
        out = self._whole(item)
        return out + self._emit({"type": "response.completed", "response": self._response(
            "completed", output=[item], usage=usage or Usage())})

    def fail(self, message: str, *, code: str = "server_error") -> bytes:
        """``error`` (with the gateway's own ``code``) then ``response.failed``, whose
        ``error.code`` is one of the API's words (``rate_limit_exceeded`` or ``server_error``):
        the upstream failed after the stream began."""
        failed = "rate_limit_exceeded" if code.startswith("rate_limit") else "server_error"
        return (self._close()
                + self._emit({"type": "error", "code": code, "message": message, "param": None})
                + self._emit({"type": "response.failed", "response": self._response(
                    "failed", error={"code": failed, "message": message})}))
