"""Compaction through the gateway for clients that ask for it (Codex's remote compaction).

A client that wants its conversation compacted (``ResponsesRequest.compact``: the last input item
was ``compaction_trigger``, or ``POST /v1/responses/compact``) gets back exactly one reference,
whatever the upstream: here, thoughtline's compaction (``compaction.compact_history``: the
upstream's own model summarizes the head, the retained turns keep their reasoning) turns the
rehydrated conversation into a checkpoint plus retained turns, stored as one **bundle** message
under the answer's minted reference. When the client later sends that reference back (its
``compaction`` item), ``expand`` puts the checkpoint and the retained turns — the stored
``Message`` values, reasoning and opaque values byte for byte — in its place for the upstream.

A compaction here shrinks the conversation or says why it cannot (``CannotCompact``): the
retained tail is bounded by tokens (``compaction.core.tail_budget``: a share of the upstream
model's window and half of what the conversation costs now), its bulky tool outputs shortened
when the current exchange alone is over that — so a short conversation made of one huge tool
output is compacted too (nothing summarized, the output shortened) — and a result not smaller
than the conversation is refused rather than answered with a compaction that changes nothing
(a client that compacts when its size crosses a limit would otherwise compact after every
answer). A conversation unchanged since its last compaction (the client sends the compaction
item back and nothing after it) gets the same bundle again, with no upstream request.

A bundle is an ordinary user message (the checkpoint's text) whose ``native`` record is
``{"thoughtline": {"checkpoint": {...}, "retained": [<lossless message JSON>, ...],
"summarized": bool, "digest": "<sha256 of what it expands to>"}}``; its expansion's first
message carries ``{"thoughtline": {"compacted": {"digest", "summarized"}}}``, which is how an
unchanged conversation is recognized. No codec reads that namespace. Knows no wire names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from thoughtline.compaction import CompactionRules, compact_history, rules_for
from thoughtline.compaction.core import NAMESPACE, checkpoint
from thoughtline.errors import UsageError
from thoughtline.estimate import Estimator, context_window
from thoughtline.events import Done
from thoughtline.gateway import mint
from thoughtline.messages import Message, message_from_json, message_to_json
from thoughtline.store.base import Store
from thoughtline.turn import TurnInput, TurnOptions

MARK = "compacted"  # the key of an expansion's first message that names its bundle


class CannotCompact(UsageError):
    """The conversation cannot be made smaller than it is; the message says why."""


class _Quiet:
    """The sink of a summarizing request: it teaches nothing to store."""

    def learned(self, lesson: Any) -> None:
        pass

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        pass

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        pass


async def compact(turn: TurnInput, engine: Any, *, keep: int | None = None,
                  trace: object | None = None,
                  on_upstream: Callable[[float], None] | None = None) -> tuple[Message, int]:
    """The bundle for ``turn``'s whole conversation, and the tokens the summarizer was asked
    to read (0 when nothing was summarized). ``keep``: messages kept verbatim at least; None
    (the default): a token-bounded tail. ``CannotCompact`` when the result would not be
    smaller than the conversation. ``trace``: the span its requests are traced under."""
    history = [*turn.history, *turn.pending]
    lead = 0
    while lead < len(history) and history[lead].role == "system":
        lead += 1
    again = _unchanged(history[lead:])
    if again is not None:  # nothing new since the bundle it expands: that bundle again
        return again, 0
    estimator = Estimator.for_config(turn.codec, turn.route, turn.config, ledger=turn.ledger)

    async def summarize(prompt: Sequence[Message]) -> tuple[str, str | None]:
        asked = replace(turn, config=replace(turn.config, tools=()), history=(),
                        pending=tuple(prompt), cache=None, purpose="compaction")
        done: Done | None = None
        options = TurnOptions(keep_partial=False, trace=trace, on_upstream=on_upstream)
        async for event in engine.run(asked, _Quiet(), options):
            if isinstance(event, Done):
                done = event
        return (done.message.text, done.finish) if done is not None else ("", None)

    rules: CompactionRules = rules_for(turn.codec, turn.route)
    outcome = await compact_history(history, estimator=estimator, summarize=summarize,
                                    keep=keep, window=context_window(turn.provider.model),
                                    rules=rules)
    if not outcome.compacted:
        raise CannotCompact(f"the conversation cannot be compacted below the ~"
                            f"{outcome.tokens_before} tokens it costs now ({outcome.reason}); "
                            "start a new conversation, or leave out the largest message")
    if not outcome.summarized:  # the tail salvaged, nothing summarized
        return _bundle(None, outcome.messages[lead:]), 0
    return _bundle(outcome.messages[lead], outcome.messages[lead + 1:]), outcome.tokens_before


def _bundle(summary: Message | None, retained: Sequence[Message]) -> Message:
    base = summary or checkpoint("(no earlier conversation was summarized)", summarized=0)
    record = dict(base.native.get(NAMESPACE, {}))
    record["retained"] = [message_to_json(m) for m in retained]
    record["summarized"] = summary is not None
    record["digest"] = _digest([*([summary] if summary is not None else []), *retained])
    return replace(base, native={**base.native, NAMESPACE: record})


def _digest(messages: Sequence[Message]) -> str:
    raw = orjson.dumps([message_to_json(m) for m in messages], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()


def _unchanged(conversation: Sequence[Message]) -> Message | None:
    """The bundle ``conversation`` is the expansion of, when it is exactly that (marked first
    message, same digest); else None."""
    if not conversation:
        return None
    first = conversation[0]
    own = first.native.get(NAMESPACE)
    mark = own.get(MARK) if isinstance(own, Mapping) else None
    if not isinstance(mark, Mapping) or not isinstance(own, Mapping):
        return None
    clean = [_with_record(first, {k: v for k, v in own.items() if k != MARK}),
             *conversation[1:]]
    if _digest(clean) != mark.get("digest"):
        return None
    if mark.get("summarized"):
        return _bundle(clean[0], clean[1:])
    return _bundle(None, clean)


def _with_record(message: Message, record: Mapping[str, Any]) -> Message:
    """``message`` with ``record`` as its thoughtline record (none when empty)."""
    native = {k: v for k, v in message.native.items() if k != NAMESPACE}
    return replace(message, native={**native, NAMESPACE: record} if record else native)


def expansion(bundle: Message) -> list[Message]:
    """The messages a stored bundle stands for: its checkpoint (when it summarized anything)
    and the retained turns, as stored."""
    record = bundle.native.get(NAMESPACE)
    if not isinstance(record, Mapping) or not isinstance(record.get("retained"), list):
        raise ValueError("the stored compaction is not a bundle")
    retained = [message_from_json(raw) for raw in record["retained"]]
    own = {k: v for k, v in record.items() if k not in ("retained", "summarized", "digest")}
    out = [*([_with_record(bundle, own)] if record.get("summarized") else []), *retained]
    if out and isinstance(record.get("digest"), str):  # a bundle stored before digests: none
        first = out[0].native.get(NAMESPACE)
        mark = {"digest": record["digest"], "summarized": bool(record.get("summarized"))}
        out[0] = _with_record(out[0], {**(first if isinstance(first, Mapping) else {}),
                                       MARK: mark})
    return out


def expand(messages: Sequence[Message], at: int, stored: Sequence[Message],
           minted: Sequence[Any]) -> tuple[tuple[Message, ...], tuple[Any, ...]]:
    """The client's messages with the compaction reference at ``at`` replaced by ``stored``:
    the system messages before it stay, the rest before it is in ``stored`` already (the
    client keeps its own user messages beside the reference). ``minted`` entries (with a
    ``message`` index) are moved with their messages."""
    kept = [m for m in messages[:at] if m.role == "system"]
    shift = len(kept) + len(stored) - at
    moved = tuple(replace(m, message=m.message + shift) for m in minted if m.message >= at)
    return (*kept, *stored, *messages[at:]), moved


def continued(request: Any, earlier: Sequence[Message]) -> dict[str, Any]:
    """The fields of ``request`` (a ``ClientRequest``) continuing ``earlier``, a stored
    conversation its ``previous_response_id`` named: the request's own leading system messages
    (its ``instructions``, which do not carry over), the stored turns without theirs, then the
    request's other messages; the minted values it carried move with their messages."""
    messages = request.messages
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    skip = 0
    while skip < len(earlier) and earlier[skip].role == "system":
        skip += 1
    stored = list(earlier[skip:])
    shift = len(stored)
    moved = tuple(replace(m, message=m.message + shift) for m in request.minted
                  if m.message >= lead)
    return {"messages": (*messages[:lead], *stored, *messages[lead:]), "minted": moved,
            "previous_response_id": ""}


def history_until(store: Store, tenant: str, ref: str) -> list[Any] | None:
    """The stored conversation up to the answer stored under ``ref`` (None: no such answer)."""
    (found,) = store.rehydrate(tenant, [mint.index_key(ref)])
    if found is None:
        return None
    loaded = store.load_history(found.session_id).messages
    ids = [m.id for m in loaded]
    if found.message_id not in ids:
        return None
    return [m.message for m in loaded[:ids.index(found.message_id) + 1]]
