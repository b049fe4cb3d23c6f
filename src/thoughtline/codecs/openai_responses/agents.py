"""Codex multi-agent v2 ``agent_message`` items: a message from one agent of a run to another.

Shape (the ``openai`` SDK's beta ``AgentMessage`` input item): ``{"type": "agent_message",
"id"?, "author", "recipient", "content": [input_text | input_image | {"type":
"encrypted_content", "encrypted_content"}], "agent"?}``; ``content`` may be null. Codex hands a
child agent its task this way, the text sealed by the Responses API and decrypted only inside it
(openai/codex PR #26210, unverified): only OpenAI reads ``encrypted_content``, and other
Responses servers take no ``agent_message`` item at all (openai/codex#33551,
router-for-me/CLIProxyAPI#4801). So the face reads one as a user message — what the recipient
is told — whose readable form (who wrote to whom, then its text parts) every other upstream
gets, while the item itself goes verbatim only to a route that reads OpenAI's sealed items
(``ResponsesProfile.openai_sealed``); an item with no text part is nothing elsewhere.
Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.codecs.openai_responses.wire import ENCRYPTED, NS, is_map, text_of
from thoughtline.messages import Message, Text

AGENT_MESSAGE = "agent_message"
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
#: How the request log names what an upstream other than OpenAI's does not get.
DROPPED = "input[agent_message] encrypted_content: only OpenAI reads it"


def _content(item: Mapping[str, Any]) -> list[Any]:
    content = item.get("content")
    return content if isinstance(content, list) else []


def sealed(item: Mapping[str, Any]) -> bool:
    """The item carries ``encrypted_content`` (what only OpenAI reads)."""
    return any(is_map(p) and p.get("type") == ENCRYPTED for p in _content(item))


def readable(item: Mapping[str, Any]) -> str:
    """The item's readable form: who wrote to whom, then its text parts ("" when it has no
    text part: an encrypted-only message has nothing another model could read)."""
    texts = [text_of(p.get("text")) for p in _content(item)
             if is_map(p) and p.get("type") in _TEXT_PARTS]
    body = "\n".join(t for t in texts if t)
    if not body:
        return ""
    author, recipient = text_of(item.get("author")), text_of(item.get("recipient"))
    if not (author or recipient):
        return body
    return f"Message from agent {author or '?'} to {recipient or '?'}:\n\n{body}"


def as_message(item: Mapping[str, Any]) -> Message:
    """A client's ``agent_message`` item as the user message its recipient reads, the item
    verbatim on it (``native``) for an upstream that reads it."""
    text = readable(item)
    return Message(role="user", parts=(Text(text=text),) if text else (),
                   native={NS: {"item": item}})


def is_item(item: Any) -> bool:
    return is_map(item) and item.get("type") == AGENT_MESSAGE
