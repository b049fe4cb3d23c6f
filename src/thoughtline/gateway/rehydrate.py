"""Rehydration: put back the stored canonical turn for every assistant message a client resends.

Clients send the whole history each time and drop what they do not understand (reasoning,
signatures, encrypted items). Every turn the gateway answered is stored with its lookup keys:
each tool-call id; the digest of its visible content (text, the calls' names and arguments) in
its place — chained with the visible digest of everything the client had sent before it — and
that visible digest alone. Two turns with the same text ("Done.") in one conversation are told
apart by their place; a client that edited earlier messages still finds a turn by its content.

On a request each client assistant message is looked up by its first tool-call id, else by its
place, and (only when that misses) by its content; a hit replaces the message only when the stored
turn shows the client exactly what it sent back (same visible content, same call ids). Everything
else is the client's own message, used as sent. Pure: the lookups go through ``storage``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from thoughtline.messages import Message
from thoughtline.store.rehydration import CALL, CONTENT, CONTEXT, MINT, IndexKey, Rehydrated


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


def _shown(message: Message, visible: str | None = None) -> bytes:
    """Any message as the client shows it (assistant turns without their reasoning);
    ``visible``: the assistant turn's ``visible_digest``, when already known."""
    if message.role == "assistant":
        return (visible or visible_digest(message)).encode()
    results = [[r.call_id, r.content] for r in message.tool_results]
    return orjson.dumps([message.role, message.text, results])


@dataclass(frozen=True, slots=True)
class Chain:
    """A request's digests, computed once and shared by its lookups and its answer's keys.

    ``places[i]``: a digest of everything the client showed before ``messages[i]``;
    ``places[-1]`` covers them all (the place of the answer to this request). ``visible[i]``:
    ``visible_digest`` of an assistant message, None for the others.
    """

    places: tuple[bytes, ...]
    visible: tuple[str | None, ...]


#: One message's part of a ``Chain``: its ``visible_digest`` (assistant turns, else None) and
#: the digest of what the client showed of it. Depends on the message's content alone.
Element = tuple[str | None, bytes]


def element(message: Message) -> Element:
    seen = visible_digest(message) if message.role == "assistant" else None
    return seen, hashlib.sha256(_shown(message, seen)).digest()


def chain(messages: Sequence[Message],
          elements: Callable[[Message], Element] = element) -> Chain:
    """The digests of ``messages`` (``elements``: ``element``, or a memo of it)."""
    state = hashlib.sha256(b"thoughtline-context-v1")
    places = [state.digest()]
    visible: list[str | None] = []
    for message in messages:
        seen, shown = elements(message)
        visible.append(seen)
        state.update(shown)
        places.append(state.copy().digest())
    return Chain(places=tuple(places), visible=tuple(visible))


def prefixes(messages: Sequence[Message]) -> list[bytes]:
    """``chain(messages).places`` as a list (see ``Chain``)."""
    return list(chain(messages).places)


def _context(prefix: bytes, message: Message, visible: str | None = None) -> IndexKey:
    seen = visible or visible_digest(message)
    digest = hashlib.sha256(prefix + seen.encode()).hexdigest()
    return IndexKey(kind=CONTEXT, key="c1:" + digest)


def index_keys(message: Message, prefix: bytes) -> list[IndexKey]:
    """Every key a returned turn is stored under (``prefix``: its place, see ``prefixes``)."""
    seen = visible_digest(message)
    keys = [IndexKey(kind=CALL, key=c.id) for c in message.tool_calls if c.id]
    keys.append(_context(prefix, message, seen))
    keys.append(IndexKey(kind=CONTENT, key=seen))
    return keys


def lookup_keys(messages: Sequence[Message],
                digests: Chain | None = None) -> list[IndexKey | None]:
    """The first key each client message is looked up by (None: not an assistant turn);
    ``digests``: ``chain(messages)`` when the caller has it already."""
    digests = digests or chain(messages)
    out: list[IndexKey | None] = []
    for index, message in enumerate(messages):
        calls = message.tool_calls if message.role == "assistant" else ()
        if message.role != "assistant":
            out.append(None)
        elif calls and calls[0].id:
            out.append(IndexKey(kind=CALL, key=calls[0].id))
        else:
            out.append(_context(digests.places[index], message, digests.visible[index]))
    return out


def fallback_key(message: Message, key: IndexKey | None,
                 visible: str | None = None) -> IndexKey | None:
    """The second key, asked only when the first missed: the content alone (``visible``: its
    ``visible_digest``, when already known)."""
    if key is None or key.kind != CONTEXT:
        return None
    return IndexKey(kind=CONTENT, key=visible or visible_digest(message))


def matches(client: Message, stored: Rehydrated, key: IndexKey,
            visible: str | None = None) -> bool:
    """True when ``stored`` is the turn the client is showing us (visible content and ids).

    A turn found by its place or its content digest shows that content by construction (it was
    indexed under its own digest); one found by a call id or a minted reference is compared.
    """
    calls = stored.message.tool_calls
    if [c.id for c in client.tool_calls] != [c.id for c in calls]:
        return False
    if key.kind not in (CALL, MINT):
        return True
    return (visible or visible_digest(client)) == _stored_digest(stored)


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
    client added after it (stored with the answer). ``session_id`` is that turn's session and
    ``head_id`` its message id ("" when nothing matched). ``hits`` counts replaced turns,
    ``misses`` assistant turns used as sent.
    """

    history: tuple[Message, ...]
    pending: tuple[Message, ...]
    session_id: str
    hits: int
    misses: int
    head_id: str = ""
    #: How the hits were found: index key kind -> count.
    by_kind: tuple[tuple[str, int], ...] = ()


def apply(messages: Sequence[Message], keys: Sequence[IndexKey | None],
          found: Sequence[Rehydrated | None], digests: Chain | None = None) -> Rehydration:
    """Replace each client assistant message by its stored turn when that turn matches.

    ``keys`` are the messages' ``lookup_key`` values and ``found`` what the store returned for
    them, position by position; ``digests``: ``chain(messages)``, when the caller has it.
    """
    visible = digests.visible if digests is not None else (None,) * len(messages)
    out: list[Message] = []
    last_hit = -1
    session_id = head_id = ""
    hits = misses = 0
    kinds: dict[str, int] = {}
    for index, (message, key, hit) in enumerate(zip(messages, keys, found, strict=True)):
        if hit is not None and key is not None and matches(message, hit, key, visible[index]):
            out.append(hit.message)
            last_hit, session_id, head_id = index, hit.session_id, hit.message_id
            hits += 1
            kinds[key.kind] = kinds.get(key.kind, 0) + 1
            continue
        if message.role == "assistant":
            misses += 1
        out.append(message)
    return Rehydration(history=tuple(out[:last_hit + 1]), pending=tuple(out[last_hit + 1:]),
                       session_id=session_id, hits=hits, misses=misses, head_id=head_id,
                       by_kind=tuple(sorted(kinds.items())))
