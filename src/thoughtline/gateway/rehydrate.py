"""Rehydration: put back the stored canonical turn for every assistant message a client resends.

Clients send the whole history each time and drop what they do not understand (reasoning,
signatures, encrypted items). Every turn the gateway answered is stored with its lookup keys: each
tool-call id and a digest of its visible content (text plus the calls' names and arguments). On a
request, each client assistant message gets one lookup key — its first tool-call id, else its
content digest — and a hit replaces the message only when the stored turn shows the client exactly
what it sent back (same visible digest, same call ids). Everything else is the client's own
message, used as sent. Pure: the lookups themselves go through ``storage``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from thoughtline.messages import Message
from thoughtline.store.rehydration import CALL, CONTENT, IndexKey, Rehydrated


def _arguments(text: str) -> str:
    """Arguments compared as JSON values (clients may re-serialize them), else as text."""
    try:
        return orjson.dumps(orjson.loads(text), option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONDecodeError:
        return text


def visible_digest(message: Message) -> str:
    """What a client sees of an assistant turn, as one digest (whitespace at the ends ignored)."""
    shown = [message.text.strip(), [[c.name, _arguments(c.arguments)] for c in message.tool_calls]]
    return "v1:" + hashlib.sha256(orjson.dumps(shown)).hexdigest()


def index_keys(message: Message) -> list[IndexKey]:
    """Every key a returned turn is stored under."""
    keys = [IndexKey(kind=CALL, key=c.id) for c in message.tool_calls if c.id]
    keys.append(IndexKey(kind=CONTENT, key=visible_digest(message)))
    return keys


def lookup_key(message: Message) -> IndexKey | None:
    """The one key a client assistant message is looked up by (None: not an assistant turn)."""
    if message.role != "assistant":
        return None
    calls = message.tool_calls
    if calls and calls[0].id:
        return IndexKey(kind=CALL, key=calls[0].id)
    return IndexKey(kind=CONTENT, key=visible_digest(message))


def matches(client: Message, stored: Rehydrated, key: IndexKey) -> bool:
    """True when ``stored`` is the turn the client is showing us (visible content and ids).

    A turn found by its content digest shows that content by construction (it was indexed under
    its own digest); one found by a call id is compared.
    """
    calls = stored.message.tool_calls
    if [c.id for c in client.tool_calls] != [c.id for c in calls]:
        return False
    if key.kind == CONTENT:
        return True
    return visible_digest(client) == _stored_digest(stored)


_DIGESTS: dict[str, str] = {}  # message id -> visible digest (stored turns are immutable)


def _stored_digest(stored: Rehydrated) -> str:
    found = _DIGESTS.get(stored.message_id)
    if found is None:
        if len(_DIGESTS) > 16384:
            _DIGESTS.clear()
        found = _DIGESTS[stored.message_id] = visible_digest(stored.message)
    return found


@dataclass(frozen=True, kw_only=True, slots=True)
class Rehydration:
    """The history to send: stored turns put back, split where the stored conversation ends.

    ``history`` runs to the last assistant turn found in the store; ``pending`` is what the
    client added after it (stored with the answer). ``session_id`` is that turn's session ("" when
    nothing matched). ``hits`` counts replaced turns, ``misses`` assistant turns used as sent.
    """

    history: tuple[Message, ...]
    pending: tuple[Message, ...]
    session_id: str
    hits: int
    misses: int


def apply(messages: Sequence[Message], keys: Sequence[IndexKey | None],
          found: Sequence[Rehydrated | None]) -> Rehydration:
    """Replace each client assistant message by its stored turn when that turn matches.

    ``keys`` are the messages' ``lookup_key`` values and ``found`` what the store returned for
    them, position by position.
    """
    out: list[Message] = []
    last_hit = -1
    session_id = ""
    hits = misses = 0
    for index, (message, key, hit) in enumerate(zip(messages, keys, found, strict=True)):
        if hit is not None and key is not None and matches(message, hit, key):
            out.append(hit.message)
            last_hit, session_id = index, hit.session_id
            hits += 1
            continue
        if message.role == "assistant":
            misses += 1
        out.append(message)
    return Rehydration(history=tuple(out[:last_hit + 1]), pending=tuple(out[last_hit + 1:]),
                       session_id=session_id, hits=hits, misses=misses)
