"""What the Messages face does with each content block type a client may send.

Every type in the ``anthropic`` SDK's ``BetaContentBlockParam`` union is classified here, so a
new one fails ``tests/codecs/test_face_kinds.py`` until someone decides, and ``docs/faces.md``
shows the table. The classes are ``codecs.face``'s (``MAPPED``, ``OWN``, ``MINTED``): an
``OWN`` block goes verbatim, in place, to an Anthropic upstream (issuer-scoped blocks only to the
route that made them) and every other API gets nothing of it, the request log naming it in
``dropped``. A ``compaction`` block goes verbatim to the route that made it, and every other
upstream gets its readable summary as text in its place (``codecs.foreign``). Data only.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.codecs.face import MAPPED, MINTED, OWN

__all__ = ["BLOCKS", "MAPPED", "MINTED", "OWN"]

#: Content block type → what the face does with it.
BLOCKS: Mapping[str, str] = {
    "text": MAPPED,
    "thinking": MINTED,            # signed: verbatim to its issuer; a minted signature expanded
    "redacted_thinking": MAPPED,   # opaque reasoning: to the Anthropic route that made it
    "tool_use": MAPPED,
    "tool_result": MAPPED,
    "tool_addition": MAPPED,       # its tools join the tools other APIs are offered
    "tool_removal": MAPPED,        # its tools leave them
    "fallback": OWN,               # a server-side fallback's marker (beta types)
    "compaction": MAPPED,          # to its issuer verbatim; elsewhere its summary as text
    "image": OWN,
    "document": OWN,
    "search_result": OWN,
    "container_upload": OWN,
    "server_tool_use": OWN,
    "web_search_tool_result": OWN,
    "web_fetch_tool_result": OWN,
    "code_execution_tool_result": OWN,
    "bash_code_execution_tool_result": OWN,
    "text_editor_code_execution_tool_result": OWN,
    "tool_search_tool_result": OWN,
    "advisor_tool_result": OWN,
    "mcp_tool_use": OWN,
    "mcp_tool_result": OWN,
    "mcp_tool_listing": OWN,
}
