"""What the Chat face does with each message role and content part a client may send.

Every role of the ``openai`` SDK's ``ChatCompletionMessageParam`` union and every part type of
its content part unions is classified here (``tests/codecs/test_face_kinds.py`` fails for one
that is not; ``docs/faces.md`` shows the table), with ``codecs.face``'s classes. The Chat face
rebuilds every request from canonical messages, so a part with no canonical meaning (an image,
audio, a file, an assistant's refusal) reaches no upstream; the request log names it in
``dropped`` as ``content[<type>]``. Data only.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.codecs.face import DROPPED, MAPPED, REFUSED

__all__ = ["DROPPED", "MAPPED", "PARTS", "REFUSED", "ROLES", "TEXT_PARTS"]

#: Message role → what the face does with it.
ROLES: Mapping[str, str] = {
    "system": MAPPED,
    "developer": MAPPED,   # a system message
    "user": MAPPED,
    "assistant": MAPPED,
    "tool": MAPPED,
    "function": REFUSED,   # deprecated since tool calls; a 400 names the role
}

#: Content part type → what the face does with it.
PARTS: Mapping[str, str] = {
    "text": MAPPED,
    "input_text": MAPPED,
    "image_url": DROPPED,
    "input_audio": DROPPED,
    "file": DROPPED,
    "refusal": DROPPED,
}

TEXT_PARTS = frozenset(k for k, v in PARTS.items() if v == MAPPED)
