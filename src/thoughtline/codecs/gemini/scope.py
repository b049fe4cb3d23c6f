"""Which Gemini model can read a thought signature another Gemini model made.

Facts (Gemini Enterprise Agent Platform thought-signatures page,
docs.cloud.google.com/gemini-enterprise-agent-platform/models/thinking/thought-signatures):
signatures are compatible only within the same family **and tier** (Flash-Lite cannot read Flash
or Pro signatures; older families cannot read newer ones), and are scoped to the same project. A
model id is read as ``gemini-<version>-<tier>[-preview|-exp|-latest|-<date>…]``: the family is
the major version (``3`` for 3, 3.1, 3.5: the recorded ``gemini-3-pro-preview`` request was
served by ``gemini-3.1-pro-preview``), the tier the words after it (``pro``, ``flash``,
``flash-lite``, ``pro-image`` …). An id of another shape can only read its own signatures.

Shared by this API's profile and the Chat ``gemini-openai`` route (``openai_chat/profile.py``), so
both routes apply one rule. Holds no wire names and imports nothing heavy.
"""

from __future__ import annotations

import re
from functools import lru_cache

from thoughtline.messages import Origin

_ID = re.compile(r"(?:.*/)?gemini-(\d+)(?:\.(\d+))?-([a-z][a-z0-9-]*)")
_STOP_WORDS = frozenset({"preview", "exp", "experimental", "latest", "001", "002"})


@lru_cache(maxsize=256)
def family_tier(model: str) -> tuple[int, str] | None:
    """``(major version, tier)`` of a Gemini model id, or None when the id is not one."""
    found = _ID.fullmatch(model.strip().lower())
    if found is None:
        return None
    words: list[str] = []
    for word in found.group(3).split("-"):
        if word in _STOP_WORDS or word[:1].isdigit():
            break
        words.append(word)
    if not words:
        return None
    return int(found.group(1)), "-".join(words)


def is_gemini(model: str) -> bool:
    return family_tier(model) is not None


def can_read(made_by: str, reader: str) -> bool:
    """May ``reader`` be sent a signature ``made_by`` produced? Same family and tier."""
    if made_by.strip().lower() == reader.strip().lower():
        return True
    made, read = family_tier(made_by), family_tier(reader)
    return made is not None and made == read


def same_project(origin: Origin, target: Origin) -> bool:
    """Where both sides know their project (``Origin.account``), it must be the same one."""
    return not (origin.account and target.account and origin.account != target.account)
