"""Reading an emulator's records the way a provider would: which fields came on assistant turns.

Used by ``thoughtline demo`` and tests to report what a route actually received, from the wire
bodies the emulator recorded — independently of the codecs that produced them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from thoughtline.testing.server import Received

_STANDARD = frozenset({"role", "content", "tool_calls", "name"})
_SHORT = {"reasoning_content": "RC", "reasoning": "R", "reasoning_details": "RD",
          "extra_content": "google signature", "reasoning_opaque": "copilot opaque",
          "reasoning_text": "copilot text"}
LEGEND = ("RC = reasoning_content, R = reasoning, RD = reasoning_details (items verbatim); "
          "fields counted on the requests each route accepted.")


@dataclass(frozen=True, kw_only=True, slots=True)
class WireFields:
    """Non-standard fields seen on assistant messages, and how many carried the " " pad."""

    fields: frozenset[str]
    pads: int

    def label(self) -> str:
        names = ", ".join(sorted(_SHORT.get(f, f) for f in self.fields)) or "nothing"
        return f"{names} ({self.pads} pads)" if self.pads else names


def assistant_fields(received: Iterable[Received], *, accepted_only: bool = True) -> WireFields:
    fields: set[str] = set()
    pads = 0
    for record in received:
        if accepted_only and record.status != 200:
            continue
        body = record.body if isinstance(record.body, dict) else {}
        for message in body.get("messages", ()):
            if isinstance(message, dict) and message.get("role") == "assistant":
                fields |= set(message) - _STANDARD
                pads += message.get("reasoning_content") == " "
    return WireFields(fields=frozenset(fields), pads=pads)
