"""Per-turn prefix digests: which stored blocks are still bound to the conversation they are in.

On models that bind blocks (platform.claude.com/docs/en/build-with-claude/preserved-thinking), a
block is bound to its prefix: the top-level ``system``, ``tools`` and the earlier messages. Each
assistant turn is stamped, when it is stored, with a digest of the prefix its request had
(``stamp``); every later request computes the same digest for that turn's position and compares. A
different digest means the prefix was edited since — a rebuilt system prompt, changed tools, a
branch or compaction that rewrote an earlier turn — so the turn's blocks can no longer pass the
prefix check. The digest covers what the model sees besides thinking (thinking blocks are bound by
their own signatures), as a chain: ``h(n) = sha256(h(n-1) ‖ sha256(visible wire message n))``, so it
costs one small hash per message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from thoughtline.codecs.anthropic.wire import NS, REDACTED, THINKING
from thoughtline.events import Done
from thoughtline.messages import Message

_SKIP = frozenset({THINKING, REDACTED})
PREFIX_KEY = "prefix"  # the stamp's key under native[NS] of an assistant message


def seed(system: Sequence[Any], tools: Sequence[Any]) -> bytes:
    return hashlib.sha256(orjson.dumps([_unmarked(system), _unmarked(tools)])).digest()


def _unmarked(blocks: Sequence[Any]) -> list[Any]:
    """Blocks without cache breakpoints (a moved ``cache_control`` is no change of the prefix)."""
    return [{k: v for k, v in b.items() if k != "cache_control"}
            if isinstance(b, Mapping) and "cache_control" in b else b for b in blocks]


def blocks_of(wire: Mapping[str, Any]) -> Sequence[Any]:
    """A wire message's blocks (a client's string content is one text block)."""
    content = wire["content"]
    return ({"type": "text", "text": content},) if isinstance(content, str) else content


def visible(wire: Mapping[str, Any]) -> bytes:
    """The digest of one wire message without its thinking blocks.

    What a client resends changes in ways that are no change of the prefix: a cache breakpoint
    moves (``cache_control``), string content becomes one text block. Both are left out.
    """
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} if "cache_control" in b else b
              for b in blocks_of(wire) if b.get("type") not in _SKIP]
    return hashlib.sha256(orjson.dumps([wire["role"], blocks])).digest()


def chain(running: bytes, digest: bytes) -> bytes:
    return hashlib.sha256(running + digest).digest()


def stamp_of(message: Message) -> str | None:
    found = message.native.get(NS)
    value = found.get(PREFIX_KEY) if found is not None and isinstance(found, Mapping) else None
    return value if isinstance(value, str) else None


def stamped(done: Done, prefix: str) -> Done:
    """``done`` with its message stamped with the prefix digest of the request that made it."""
    message = done.message
    native = {**message.native, NS: {**message.native.get(NS, {}), PREFIX_KEY: prefix}}
    return replace(done, message=replace(message, native=native))
