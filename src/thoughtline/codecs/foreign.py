"""What an API gets of a verbatim value another API's codec owns: its readable form, if any.

An ``Opaque`` part holds a block or item only its own API may carry (an Anthropic
``compaction`` block). Another API never gets the value itself; where the owning codec says the
value has a readable form (``readable(value)`` hook: a compaction block's summary) it gets that
form as text, in the value's place, when a turn is encoded. The canonical turn keeps the part
as it was, so what a client showed (``gateway.rehydrate``'s digests) and what is stored do not
change. Knows no wire names: the owning codec reads its own value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from thoughtline.codecs import registry
from thoughtline.messages import Message, Opaque, Part, Text


def readable(part: Opaque) -> str:
    """The readable form of ``part``'s value as its own codec renders it ("" when none)."""
    namespace = part.namespace
    if namespace not in registry.apis():
        return ""
    hook = getattr(registry.codec(namespace), "readable", None)
    found = hook(part.native[namespace]) if hook is not None else None
    return found if isinstance(found, str) else ""


def shown(message: Message, api: str) -> Message:
    """``message`` as an upstream of ``api`` may see it: each part another API owns replaced
    by its readable form as text; one with none stays as it is (that API's codec sends nothing
    of it). ``message`` itself when it holds no value with a readable form."""
    if not any(type(p) is Opaque and p.namespace != api for p in message.parts):
        return message
    parts: list[Part] = []
    changed = False
    for index, part in enumerate(message.parts):
        if type(part) is Opaque and part.namespace != api:
            text = readable(part)
            if text:
                # set apart from the turn's own text where an API joins a turn's texts into one
                before = "\n\n" if _texts(parts) else ""
                after = "\n\n" if _texts(message.parts[index + 1:]) else ""
                parts.append(Text(text=before + text + after))
                changed = True
                continue
        parts.append(part)
    return replace(message, parts=tuple(parts)) if changed else message


def _texts(parts: Sequence[Part]) -> bool:
    return any(type(p) is Text and p.text for p in parts)
