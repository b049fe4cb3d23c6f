"""Encode a stateless Responses request: the history as input items, reasoning items verbatim.

Every stored output item goes back where it was, so each reasoning item stays right before the
call or message it led to: the reasoning item exactly as received (``id`` and
``encrypted_content`` byte-identical), the message with its ``id``, ``status`` and ``phase``,
the function call with its ``id``. A reasoning item is left out when the plan forbids it: a turn
that was cut short, an item from outside the route's scope, a fingerprint the provider rejected,
or an item with neither encrypted content nor readable text on a route that does not take
those. A route that reads only some fields of a reasoning item (the profile's
``reasoning_keys``: DeepSeek reads its ``reasoning_text`` content) gets only those; an item whose
``encrypted_content`` the provider could not decrypt (``bare_fingerprint``) goes back without
it, its id, summary and place kept. A readable-only reasoning item (``reasoning_text``, no
``encrypted_content``: relays without encryption) goes back at the head of its turn, as those
relays expect. Nothing of ours reaches the wire. An item OpenAI sealed for the client whose
issuer the gateway never saw (a multi-agent ``agent_message``, a ``compaction`` item the client
kept) goes only to a route that is OpenAI's own API (``openai_sealed``); any other server gets an
``agent_message`` as the user message its recipient can read (``agents``), and a compaction item
not at all. Another API's blocks arrive as their readable text (``codecs.foreign``).

A turn's input items depend on the turn and the plan only, so the API's turn encoder
(``TURNS``, ``codecs.flat``) is flat: the core's wire cache (``thoughtline.wire.cache``) encodes
each turn once, stores it and splices it into later requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from thoughtline.codecs import foreign
from thoughtline.codecs.base import Encoded, RequestSpec, Walk, profile_of
from thoughtline.codecs.common import merge_params
from thoughtline.codecs.flat import NOTHING, Counts, FlatTurns, cached_body, counted
from thoughtline.codecs.openai_responses import agents, compaction
from thoughtline.codecs.openai_responses.decode import TEXT_KEYS
from thoughtline.codecs.openai_responses.profile import ResponsesProfile
from thoughtline.codecs.openai_responses.tools import (
    CUSTOM_CALL,
    CUSTOM_INPUT,
    NO_TOOLS,
    client_name,
    custom_input,
    output_text,
    top_level,
)
from thoughtline.codecs.openai_responses.wire import (
    API,
    ENCRYPTED,
    FUNCTION_CALL,
    FUNCTION_CALL_OUTPUT,
    INCLUDE_ENCRYPTED,
    MESSAGE,
    NS,
    OUTPUT_ONLY_PART_KEYS,
    OUTPUT_TEXT,
    PHASE,
    REASONING,
    REASONING_TEXT,
    is_map,
    text_of,
)
from thoughtline.events import Done
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    fingerprint,
)
from thoughtline.replay import ReplayPlan

#: Neutral parameter names → the ``reasoning`` field they set (and the profile switch they need).
_REASONING_PARAMS = {"reasoning_effort": "effort", "effort": "effort",
                     "reasoning_summary": "summary", "reasoning_context": "context",
                     "reasoning_mode": "mode"}
_RENAMED = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}
#: The body fields encode_request writes itself, and the ones that would bring in a conversation
#: held by the server (``previous_response_id``, ``conversation``): a param naming one is left
#: out. ``store`` and ``include`` are how encrypted reasoning comes back to be replayed.
OWNED = frozenset({"model", "input", "tools", "stream", "store", "include",
                   "previous_response_id", "conversation"})
#: Items OpenAI seals for a client whose issuer a client's copy does not name (``agents``).
_SEALED_KINDS = frozenset({agents.AGENT_MESSAGE, compaction.ITEM})


def origins_of(history: Iterable[Message]) -> dict[str, Origin]:
    """``item_fingerprint`` of each stored replayable item → where it was made. Replayed items
    go out verbatim (also when spliced from stored bytes), so a rejected body maps back exactly."""
    out: dict[str, Origin] = {}
    for message in history:
        for part in message.parts:
            if isinstance(part, Reasoning | Opaque):
                item = part.native.get(NS)
                origin = part.origin or message.origin
                if item is not None and origin is not None:
                    out[item_fingerprint(item)] = origin
                    if item.get(ENCRYPTED) and item.get("id"):  # as sent bare or projected
                        out.setdefault(item_fingerprint(_without_encrypted(item)), origin)
    return out


def issuer_fingerprint(issuer: str) -> str:
    """What ``classify`` records when a provider said an issuer's items were not issued to the
    caller: every item stamped with that issuer stays home from then on."""
    return fingerprint("issuer", issuer)


def stamp_issuer(done: Done, issuer: str) -> Done:
    """``done`` with each encrypted reasoning item's origin carrying ``issuer`` (where the
    origin names no account yet)."""
    if not issuer:
        return done
    message = done.message
    parts: list[Part] = []
    changed = False
    for part in message.parts:
        origin = part.origin or message.origin if isinstance(part, Reasoning) else None
        if (isinstance(part, Reasoning) and part.kind == "encrypted" and origin is not None
                and not origin.account):
            part = replace(part, origin=replace(origin, account=issuer))
            changed = True
        parts.append(part)
    return replace(done, message=replace(message, parts=tuple(parts))) if changed else done


def item_fingerprint(item: Mapping[str, Any]) -> str:
    """The identity of one replayed item, as ``classify`` records it when it is rejected:
    ``fingerprint(<item type>, <encrypted_content, else id>)`` — the opaque value itself where
    there is one (ids are not stable on every relay), the id for items that are only a reference.
    """
    value = item.get(ENCRYPTED)
    if not (isinstance(value, str) and value):
        value = text_of(item.get("id"))
    return fingerprint(text_of(item.get("type")) or REASONING, value)


def bare_fingerprint(item: Mapping[str, Any]) -> str:
    """What ``classify`` records when the provider could not decrypt an item's
    ``encrypted_content`` but the item itself may stay (``thinking_signature_invalid``,
    openclaw/openclaw#92941): the item goes back without that value, its id, summary and place
    kept. Keyed by the value itself, so only that one value is left off."""
    return fingerprint("bare", text_of(item.get(ENCRYPTED)))


def _without_encrypted(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != ENCRYPTED}


def _reasoning_item(item: dict[str, Any], plan: ReplayPlan) -> dict[str, Any]:
    """A stored reasoning item as this route reads it: only the profile's ``reasoning_keys``
    when it names them (key order kept, so the bytes are the stored ones less the dropped
    fields)."""
    keys = profile_of(plan, ResponsesProfile).reasoning_keys
    if keys and item.get("type") == REASONING:
        return {k: v for k, v in item.items() if k in keys}
    return item


def _bared(item: dict[str, Any], plan: ReplayPlan) -> dict[str, Any] | None:
    """``item`` without its encrypted_content when the provider could not decrypt it; None
    when the provider then refused the bare item too (a ``store: false`` upstream that looks
    the id up: "Item with id 'rs_…' not found", openclaw PR #88917)."""
    if (plan.fingerprints and item.get("type") == REASONING and item.get(ENCRYPTED)
            and plan.rejected(bare_fingerprint(item))):
        bare = _without_encrypted(item)
        return None if plan.rejected(item_fingerprint(bare)) else bare
    return item


def id_fingerprint(item_id: str) -> str:
    """The identity of an item id the provider could not find (sent without the item's id)."""
    return fingerprint("id", item_id)


def readable_only(item: Mapping[str, Any]) -> bool:
    """A reasoning item that carries its reasoning as readable ``reasoning_text`` and no
    ``encrypted_content``: what a relay without encryption returns (Kimi on vLLM behind a
    Responses front, NousResearch/hermes-agent#91104). It is the reasoning itself, not a
    reference."""
    if item.get("type") != REASONING or item.get(ENCRYPTED):
        return False
    content = item.get("content")
    return isinstance(content, list) and any(
        is_map(part) and part.get("type") == REASONING_TEXT and text_of(part.get("text"))
        for part in content)


def _sendable(item: Mapping[str, Any], origin: Origin | None, plan: ReplayPlan) -> bool:
    if not plan.may_replay(origin):
        return False
    if item.get("type") == REASONING:
        has_data = isinstance(item.get(ENCRYPTED), str) and bool(item.get(ENCRYPTED))
        if not (has_data or profile_of(plan, ResponsesProfile).plain_reasoning
                or readable_only(item)):
            # With store=false an item without its encrypted content (and no readable text)
            # is only a reference to something the server never kept: "Item with id 'rs_…'
            # not found" (anomalyco/opencode#2480).
            return False
    if plan.fingerprints and origin is not None and origin.account and plan.rejected(
            issuer_fingerprint(origin.account)):
        return False  # the provider said this issuer's items are not this caller's
    return not (plan.fingerprints and plan.rejected(item_fingerprint(item)))


def _with_id(item: dict[str, Any], own: bool, plan: ReplayPlan) -> dict[str, Any]:
    item_id = item.get("id")
    if isinstance(item_id, str) and (not own or (plan.fingerprints
                                                 and plan.rejected(id_fingerprint(item_id)))):
        item = {k: v for k, v in item.items() if k != "id"}
    return item


def _message_item(shell: Mapping[str, Any], texts: list[str], own: bool,
                  plan: ReplayPlan) -> dict[str, Any]:
    phase = profile_of(plan, ResponsesProfile).phase
    pending = iter(texts)
    content = []
    for part in shell.get("content") or ():
        key = TEXT_KEYS.get(part.get("type", "")) if is_map(part) else None
        if key is not None and part.get(key, "") is None:
            part = {k: (next(pending, "") if k == key else v) for k, v in part.items()
                    if k not in OUTPUT_ONLY_PART_KEYS}
        content.append(part)
    item = {k: (content if k == "content" else v) for k, v in shell.items()
            if phase or k != PHASE}
    return _with_id(item, own, plan)


def _plain_message(text: str) -> dict[str, Any]:
    return {"type": MESSAGE, "role": "assistant",
            "content": [{"type": OUTPUT_TEXT, "text": text, "annotations": []}]}


def _call_item(call: ToolCall, own: bool, plan: ReplayPlan) -> dict[str, Any]:
    native = call.native.get(NS, {})
    name = client_name(call.name, native, NO_TOOLS).name
    if native.get("type") == CUSTOM_CALL:  # a client's custom call: its item, key order kept
        now = {"call_id": call.id, "name": name, CUSTOM_INPUT: custom_input(call.arguments)}
        return _with_id({k: now.get(k, v) for k, v in native.items()}, own, plan)
    item: dict[str, Any] = {"type": FUNCTION_CALL}
    for key, value in native.items():
        if key not in ("type", "status"):
            item[key] = value
    item.update(call_id=call.id, name=name, arguments=call.arguments)
    return _with_id(item, own, plan)


def _sendable_opaque(item: Mapping[str, Any], origin: Origin | None, plan: ReplayPlan) -> bool:
    """An item of no canonical meaning, verbatim. One OpenAI sealed whose issuer the gateway
    never saw (a client's own ``compaction`` or ``agent_message``) goes to OpenAI only."""
    if (origin is None and item.get("type") in _SEALED_KINDS
            and not profile_of(plan, ResponsesProfile).openai_sealed):
        return False
    return _sendable(item, origin, plan)


def _assistant_items(message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
    message = foreign.shown(message, API)  # another API's blocks as their readable text
    out: list[dict[str, Any]] = []
    own = plan.may_replay(message.origin)
    cut = message.incomplete
    shell: Mapping[str, Any] | None = None
    texts: list[str] = []

    def flush() -> None:
        nonlocal shell
        if shell is not None:
            out.append(_message_item(shell, texts, own, plan))
        elif any(texts):
            out.append(_plain_message("".join(texts)))
        shell = None
        texts.clear()

    for part in message.parts:
        if isinstance(part, Text):
            native = part.native.get(NS)
            if native is not None and "item" in native:
                flush()
                shell = native["item"]
            elif native is None and shell is not None:
                flush()
            texts.append(part.text)
            continue
        flush()
        if isinstance(part, Reasoning):
            item = part.native.get(NS)
            item = _reasoning_item(item, plan) if item is not None else None
            if (item is not None and part.complete and not cut
                    and _sendable(item, part.origin or message.origin, plan)):
                out.append(item)
        elif isinstance(part, ToolCall):
            if not cut:
                out.append(_call_item(part, own, plan))
        elif isinstance(part, Opaque):
            item = part.native.get(NS)
            if item is None or cut:
                continue
            if _sendable_opaque(item, part.origin or message.origin, plan):
                out.append(item)
            elif agents.readable(item):  # a model's agent_message, to a route not its issuer
                out.append(_plain_message(agents.readable(item)))
    flush()
    # Readable-only reasoning goes back at the head of its turn, where the relays that send it
    # expect it; without it there the model loops on tool calls (NousResearch/hermes-agent
    # PR #91104). Encrypted items keep their exact place.
    readable = [item for item in out if readable_only(item)]
    if readable:
        out = readable + [item for item in out if not readable_only(item)]
    # A reasoning item must be followed by the item it led to: a turn that stopped right after
    # its reasoning (max_output_tokens) would only earn "Item 'rs_…' of type 'reasoning' was
    # provided without its required following item" (errors/openai-responses-400-…).
    while out and out[-1].get("type") == REASONING:
        out.pop()
    # Left off only now, so that a bared item keeps its exact place (it is not moved to the
    # head as a readable-only one would be).
    if not plan.fingerprints:
        return out
    return [bare for bare in (_bared(item, plan) for item in out) if bare is not None]


def _own_compaction(message: Message, plan: ReplayPlan) -> list[dict[str, Any]]:
    """A checkpoint's ``compaction`` item (native compaction) alone, in the checkpoint's place,
    to the provider (id and host) that made it; [] otherwise (the checkpoint's summary text is
    sent instead; developers.openai.com/api/docs/guides/compaction)."""
    if message.role != "user":
        return []
    target = plan.target
    out = []
    for part in message.parts:
        if not compaction.is_item(part):
            continue
        origin = part.origin or message.origin
        here = origin is None or target is None or (
            origin.provider, origin.host) == (target.provider, target.host)
        if here and _sendable(part.native[NS], origin, plan):
            out.append(part.native[NS])
    return out


def encode_message(message: Message, plan: ReplayPlan) -> Sequence[Mapping[str, Any]]:
    """The input items for one canonical turn."""
    if message.role == "assistant":
        return _assistant_items(message, plan)
    own = _own_compaction(message, plan)
    if own:
        return own
    carried = message.native.get(NS)
    if not is_map(carried):
        return _own_message(message, {}, plan)
    # a client's additional_tools items ride on the message next to them: in place, verbatim
    return [*(carried.get("before") or ()), *_own_message(message, carried, plan),
            *(carried.get("after") or ())]


def _own_message(message: Message, carried: Mapping[str, Any],
                 plan: ReplayPlan) -> Sequence[Mapping[str, Any]]:
    item = carried.get("item")
    if agents.is_item(item) and not profile_of(plan, ResponsesProfile).openai_sealed:
        # only OpenAI takes the item: any other server gets what its recipient can read
        return [{"role": "user", "content": message.text}] if message.text else []
    if is_map(item) and item.get("type") not in (None, MESSAGE):
        return [item]  # an input item of the client's own (a compaction_trigger), verbatim
    if message.role == "tool" or any(isinstance(p, ToolResult) for p in message.parts):
        given = carried.get("items") or ()
        results = [r for r in message.parts if isinstance(r, ToolResult)]
        items: list[dict[str, Any]] = [
            _output_item(r, given[i] if i < len(given) else None)
            for i, r in enumerate(results)]
        if message.text:
            items.append({"role": "user", "content": message.text})
        return items
    return [{"role": message.role, "content": message.text}]


def _output_item(result: ToolResult, given: Any) -> dict[str, Any]:
    """A tool result as the client's own output item when it still says the same (a custom
    call's output, parts and all), else as a plain output of the item's kind."""
    if is_map(given) and given.get("call_id") == result.call_id:
        if output_text(given.get("output")) == result.content:
            return dict(given)
        return {"type": given.get("type") or FUNCTION_CALL_OUTPUT, "call_id": result.call_id,
                "output": result.content}
    return {"type": FUNCTION_CALL_OUTPUT, "call_id": result.call_id, "output": result.content}


def counts_of(items: Iterable[Mapping[str, Any]]) -> Counts:
    """What the request log counts on input items: assistant turns, encrypted reasoning items
    and phases (the carriers), readable reasoning and other replayed items (native)."""
    assistant = 0
    carriers: list[str] = []
    native: list[str] = []
    for item in items:
        kind = item.get("type")
        if kind == REASONING:
            if item.get(ENCRYPTED):
                carriers.append(ENCRYPTED)
            else:
                native.append("readable reasoning items")
        elif kind == MESSAGE or item.get("role") == "assistant":
            assistant += 1
            if PHASE in item:
                carriers.append(PHASE)
        elif kind not in (None, FUNCTION_CALL, FUNCTION_CALL_OUTPUT):
            native.append("other items")
    if not (assistant or carriers or native):
        return NOTHING
    return Counts(assistant=assistant, carriers=tuple(carriers), native=tuple(native))


class ResponsesTurns(FlatTurns):
    """The Responses ``TurnEncoder``: a turn is its input items."""

    def __init__(self) -> None:
        # responses-2: stored by the core's wire cache, with named facts
        super().__init__(version="responses-2", items=encode_message, count=counts_of)

    def assemble(self, walk: Walk[None, Counts], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        settings = spec.settings or plan.settings
        body = request_body(list(walk.fragments), plan, model=spec.model, tools=spec.tools,
                            params=spec.params, settings=settings, stream=spec.stream)
        return Encoded(raw=orjson.dumps(body), index=ResponsesIndex(walk=walk,
                                                                    extras=body_extras(body)))


TURNS = ResponsesTurns()


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponsesIndex:
    """What a rejection or the log reads about a request as sent: its walk (each turn's counts;
    the history it was built from, read only on a rejection) and the body's switches."""

    walk: Walk[None, Counts]
    extras: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return summary_of(self.walk.afters, self.extras)

    def origins(self) -> dict[str, Origin]:
        """Where each replayed item was made (decodes a resumed history: a rejection's path)."""
        return origins_of(self.walk.history)


def encode_tools(tools: Sequence[ToolSpec]) -> list[Mapping[str, Any]]:
    """The top-level ``tools``: a Responses client's own definitions verbatim (custom tools and
    namespaces included; none for those its ``additional_tools`` items carry), else functions."""
    return list(top_level(tools))


def _reasoning_fields(plan: ReplayPlan, params: Mapping[str, Any],
                      settings: Mapping[str, Any]) -> dict[str, Any]:
    profile = profile_of(plan, ResponsesProfile)
    fields: dict[str, Any] = {}
    if profile.context and "context" in profile.params:
        fields["context"] = profile.context
    for source in (settings, params):
        for name, value in source.items():
            field = _REASONING_PARAMS.get(name)
            if field is not None and field in profile.params and value is not None:
                fields[field] = value
    explicit = params.get("reasoning")
    if is_map(explicit):
        fields.update(explicit)
    return fields


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                   settings: Mapping[str, Any] | None = None, stream: bool = False,
                   cache: Any = None) -> dict[str, Any]:
    """The request body for ``history`` under ``plan``. Never mutates history; the body shares
    read-only stored items: serialize it, do not edit it. With a ``cache`` (``WireCache()``) it
    is the body the core's wire cache sends, read back."""
    if cache is not None:
        return cached_body(cache, API, history, plan, RequestSpec(
            model=model, tools=tools, params=params or {}, settings=settings or {},
            stream=stream))
    items = [item for message in history for item in encode_message(message, plan)]
    return request_body(items, plan, model=model, tools=tools, params=params, settings=settings,
                        stream=stream)


def request_body(items: list[Any], plan: ReplayPlan, *, model: str,
                 tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
                 settings: Mapping[str, Any] | None = None,
                 stream: bool = False) -> dict[str, Any]:
    """The body around the input ``items`` (dicts, or the turns' bytes as fragments)."""
    params = params or {}
    body: dict[str, Any] = {"model": model, "input": items}
    listed = encode_tools(tools) if tools else []
    if listed:
        body["tools"] = listed
    if stream:
        body["stream"] = True
    profile = profile_of(plan, ResponsesProfile)
    if profile.stateless:
        body["store"] = False
    if profile.include:
        body["include"] = [INCLUDE_ENCRYPTED]
    reasoning = _reasoning_fields(plan, params, settings or {})
    if reasoning:
        body["reasoning"] = reasoning
    extra = {_RENAMED.get(name, name): value for name, value in params.items()
             if name not in _REASONING_PARAMS and name != "reasoning"}
    if extra:
        merge_params(body, extra, OWNED)
    return body


def wire_summary(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the request log records: how many assistant items went back, the reasoning carriers
    on them (encrypted items, phases) and the other replayed items, and the stateless switches."""
    return summary_of([counts_of(body.get("input", ()))], body_extras(body))


def body_extras(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The stateless switches a body carries (for the log)."""
    return tuple(sorted(k for k in ("store", "include", "reasoning") if k in body))


def summary_of(turns: Iterable[Counts], extras: Sequence[str]) -> dict[str, Any]:
    """``wire_summary`` from the turns' counts kept while encoding (no item is read again)."""
    return {**counted(turns, extras), "pads": 0}
