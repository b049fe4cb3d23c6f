"""The one nesting bound for JSON thoughtline did not make (``MAX_DEPTH``) and its iterative
checker: a value nested deeper is refused with a clear error wherever it enters, never walked by
recursive code that would overflow the stack. No thoughtline imports, so the message model can use
it as well as the codecs (``codecs.shape`` re-exports it with the rest of the reading checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

#: The deepest nesting accepted anywhere a JSON body enters (orjson parses 1024 levels but
#: writes only 255; real replies and requests nest a few dozen at most).
MAX_DEPTH = 128

def deeper_than(value: Any, limit: int = MAX_DEPTH, *, raw: bytes | str | None = None,
                skip: object = None) -> bool:
    """True when ``value`` nests more than ``limit`` arrays/objects deep (iterative).

    ``raw``, the text ``value`` was parsed from, skips the walk when it holds fewer brackets
    than ``limit`` (the common case, checked in C). ``skip``: an array or object inside
    ``value`` (that very object) left out of the walk, with all it holds: the caller checks it.
    """
    if raw is not None:
        opening = (b"[", b"{") if isinstance(raw, bytes | bytearray) else ("[", "{")
        if raw.count(opening[0]) + raw.count(opening[1]) <= limit:  # type: ignore[arg-type]
            return False
    level = [value] if _nests(value) else []  # the arrays/objects ``depth`` levels down
    depth = 0
    while level:
        if depth >= limit:
            return True
        below: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict or isinstance(item, Mapping) \
                else item
            below += [child for child in children
                      if type(child) not in _FLAT and child is not skip and _nests(child)]
        level = below
        depth += 1
    return False


#: What a JSON parser makes: the exact types that never nest are told apart without the
#: (slower) abstract ``Mapping`` check, which the profile showed on every element of a body.
_FLAT = frozenset({str, int, float, bool, type(None)})
_NESTING = frozenset({dict, list, tuple})


def _nests(value: Any) -> bool:
    kind = type(value)
    if kind in _FLAT:
        return False
    return kind in _NESTING or isinstance(value, Mapping | list | tuple)


def text_deeper_than(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when ``text`` is JSON nesting more than ``limit`` deep (tool-call arguments are JSON
    held in a string, unseen by the body's own bound). Text that is not JSON is not checked:
    every reader of arguments already treats it as text."""
    if text.count("[") + text.count("{") <= limit:
        return False
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return deeper_than(value, limit)


def too_deep(what: str) -> str:
    """The words for a value nested deeper than the bound."""
    return f"{what} nests deeper than {MAX_DEPTH} levels of arrays and objects"
