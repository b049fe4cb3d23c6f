"""Server-side state: which stored interaction our history may continue, or why not.

With ``store: true`` the server keeps every interaction, and a request naming
``previous_interaction_id`` continues that chain: it sends only what came after (ai.google.dev/
gemini-api/docs/interactions). That is only right while the server's chain is our history. Each
answer is stamped, when it is stored, with its interaction id and a digest of the whole conversation
up to and including it (``stamped``); a later request recomputes the digest over its history up to
that answer. A different digest — an earlier turn rewritten by compaction, an edited or imported
history — or an answer that is not the last one, from another model or service, or an id the server
said it no longer has, means the chain no longer matches: the request sends the whole history (once:
its answer starts a new chain), and the request log says why (``Sent.chain``).

The digest is a chain ``h(n) = sha256(h(n-1) ‖ sha256(message n))`` over what each message says
(roles, texts, thought signatures and summaries, calls and results), never over the stamps
themselves, so it costs one small hash per message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from thoughtline.codecs.interactions.wire import NS
from thoughtline.events import Done
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult

ID_KEY = "interaction"  # native[NS][ID_KEY]: the interaction that produced the answer
DIGEST_KEY = "chain"  # native[NS][DIGEST_KEY]: the conversation digest up to the answer
#: The session setting a "no such interaction" rejection teaches: that id is gone.
GONE = "gone_interaction"
_START = hashlib.sha256(b"thoughtline/gemini-interactions/chain/v1").digest()


def said(message: Message) -> bytes:
    """The digest of what ``message`` says (its link in the chain)."""
    return _said(message)


def _said(message: Message) -> bytes:
    parts: list[Any] = []
    for part in message.parts:
        if isinstance(part, Text):
            parts.append(["t", part.text])
        elif isinstance(part, Reasoning):
            parts.append(["r", part.signature, part.summary, part.text])
        elif isinstance(part, ToolCall):
            parts.append(["c", part.id, part.name, part.arguments])
        elif isinstance(part, ToolResult):
            parts.append(["o", part.call_id, part.content, part.is_error])
    return hashlib.sha256(orjson.dumps([message.role, parts])).digest()


def running(history: Sequence[Message], start: bytes = _START) -> list[bytes]:
    """The digest after each message of ``history``."""
    return folded([_said(message) for message in history], start)


def folded(links: Sequence[bytes], start: bytes = _START) -> list[bytes]:
    """The digest after each of the messages whose own digests (``said``) are ``links``."""
    out: list[bytes] = []
    for link in links:
        start = hashlib.sha256(start + link).digest()
        out.append(start)
    return out


def extended(digest: str, answer: Message) -> str:
    """The digest (hex) of a conversation of digest ``digest`` (hex) followed by ``answer``."""
    return running([answer], bytes.fromhex(digest) if digest else _START)[0].hex()


def stamp_of(message: Message) -> tuple[str, str] | None:
    """``(interaction id, digest)`` of a stamped answer, or None."""
    found = message.native.get(NS)
    if not isinstance(found, Mapping):
        return None
    ident, digest = found.get(ID_KEY), found.get(DIGEST_KEY)
    if isinstance(ident, str) and ident and isinstance(digest, str) and digest:
        return ident, digest
    return None


def stamped(done: Done, digest: str) -> Done:
    """``done`` with its answer stamped with the conversation digest (its id is already there)."""
    message = done.message
    native = {**message.native, NS: {**message.native.get(NS, {}), DIGEST_KEY: digest}}
    return replace(done, message=replace(message, native=native))


def unstamped(done: Done) -> Done:
    """``done`` without an interaction id: the server did not keep it (``store: false``)."""
    message = done.message
    if NS not in message.native:
        return done
    native = {k: v for k, v in message.native.items() if k != NS}
    return replace(done, message=replace(message, native=native))


@dataclass(frozen=True, slots=True)
class Link:
    """Where a request continues the server's chain (``start``: the first message to send), or
    why it sends the whole history (``reason``; "" on a first turn: nothing to continue)."""

    previous: str = ""
    start: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """What ``link`` reads of one message (``encode.Said`` keeps it as the turn's facts)."""

    role: str
    said: bytes
    stamp: tuple[str, str] | None = None
    origin: Origin | None = None


def link(turns: Sequence[Turn], *, model: str, may_replay: Any, gone: str = "") -> Link:
    """The chain point of a history of ``turns``: the last answer, when its stamp still
    matches."""
    last = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "assistant"),
                None)
    if last is None:
        return Link()
    if not any(turns[i].stamp is not None for i in range(last + 1)):
        return Link()  # no stored interaction in this history: nothing is lost by sending it all
    answer = turns[last]
    if answer.stamp is None:
        return Link(reason=f"message {last} is not a stored interaction")
    ident, digest = answer.stamp
    origin = answer.origin
    if origin is None or origin.model != model or not may_replay(origin):
        return Link(reason=f"interaction {ident} was made by another model or service")
    if ident == gone:
        return Link(reason=f"the server no longer has interaction {ident}")
    if folded([t.said for t in turns[:last + 1]])[-1].hex() != digest:
        return Link(reason=f"the history before message {last} changed since interaction "
                           f"{ident} (compaction, branch or edit)")
    return Link(previous=ident, start=last + 1)
