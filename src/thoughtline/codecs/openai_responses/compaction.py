"""OpenAI Responses server-side compaction as the summarizer (``[compaction] native = true``).

Facts (developers.openai.com/api/docs/guides/compaction; openai-python types/responses; the
Codex recordings, docs/codex.md): ``compaction_trigger`` is a public input item ("Compacts the
current context. Must be the final input item"); the answer holds exactly one ``compaction``
output item with its ``encrypted_content`` (Codex requires exactly one: "expected exactly one
compaction output item, got 0", CLIProxyAPI#4848), readable only by the provider that produced it
(OpenRouter: providers reached through translation "drop the field"). It carries no readable
summary, so our own summarizer still writes the checkpoint's text, which every other route gets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from thoughtline.codecs.openai_responses.wire import ENCRYPTED, NS
from thoughtline.messages import Message, Opaque

TRIGGER = "compaction_trigger"
ITEM = "compaction"
#: Items that go back unchanged and in their original position (openai-python types/responses): a
#: ``program`` item's ``fingerprint`` "must be round-tripped", a ``configuration_update`` changes
#: what follows, a ``compaction`` item stands for everything before it.
POSITION_CRITICAL = frozenset({"program", "configuration_update", ITEM})
_NAMES_COMPACTION = re.compile(r"compaction", re.IGNORECASE)


def is_item(part: object) -> TypeGuard[Opaque]:
    return (isinstance(part, Opaque) and part.namespace == NS
            and part.native[NS].get("type") == ITEM)


@dataclass(frozen=True, kw_only=True, slots=True)
class NativeCompaction:
    """A ``compaction_trigger`` after the head; one encrypted ``compaction`` item back."""

    params: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def trigger(self) -> Message:
        """The trigger as the gateway's Responses face carries a client's (``client.py``): a
        user message whose native ``item`` is sent verbatim."""
        return Message(role="user", native={NS: {"item": {"type": TRIGGER}}})

    def read(self, message: Message) -> tuple[str, Opaque] | None:
        found = [p for p in message.parts if isinstance(p, Opaque) and p.namespace == NS
                 and p.native[NS].get("type") == ITEM]
        if len(found) != 1:
            return None
        sealed = found[0].native[NS].get(ENCRYPTED)
        if not isinstance(sealed, str) or not sealed:
            return None
        return "", found[0]  # encrypted only: our summary is the readable stand-in

    def names_it(self, status: int | None, body: str) -> bool:
        return status == 400 and bool(_NAMES_COMPACTION.search(body or ""))


NATIVE = NativeCompaction()
