"""Reading values thoughtline did not make: provider replies, client bodies, imported files.

Owns the checks every codec (and every place a JSON body enters) shares: the one nesting bound
(``MAX_DEPTH``, from ``thoughtline.depth``) and its checker, also for JSON held in a string;
a token count that is a non-negative integer a JSON encoder can write, summed or not; a value
used as a lookup key that is a string or an integer; and the final check of a decoded answer
(``check_answer``): canonical fields of the right types, tool-call arguments and verbatim values
that nest within the bound and that the store can write back. Each failure is a ``ProtocolError``
naming the field. No wire knowledge: callers name their own fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from thoughtline.depth import MAX_DEPTH as MAX_DEPTH  # re-exported: every reader's bound
from thoughtline.depth import deeper_than as deeper_than
from thoughtline.depth import text_deeper_than as text_deeper_than
from thoughtline.depth import too_deep as too_deep
from thoughtline.errors import ProtocolError
from thoughtline.events import Done
from thoughtline.messages import Message, Opaque, Reasoning, Text, ToolCall, ToolResult, Usage

#: The integer range orjson writes (int64 and uint64). Token counts are 0 … int64: a sum of two
#: (a face's ``total_tokens``) then still fits uint64, which a negative count would not.
_INT_MIN, _INT_MAX, _UINT_MAX = -(2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1


def described(value: Any) -> str:
    """A value's kind in words, for error messages (short, one line)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 24 else text[:20] + '...'}"
    return type(value).__name__


def count(value: Any, field: str) -> int:
    """A token count: missing (null) is 0; an integer (or an integral number, or decimal digits)
    from 0 to int64's largest; anything else raises ``ProtocolError`` naming ``field``."""
    if value is None:
        return 0
    kind = type(value)
    if kind is int:
        number = value
    elif (kind is float and value.is_integer()) or (
            kind is str and value.isascii() and value.isdigit() and len(value) < 20):
        number = int(value)
    else:
        raise ProtocolError(f"`{field}` must be an integer, not {described(value)}")
    if not 0 <= number <= _INT_MAX:
        raise ProtocolError(f"`{field}` is out of range: {described(value)}")
    return number


def key(value: Any, field: str) -> Any:
    """``value`` when it can key a lookup (null, a string, an integer), else ``ProtocolError``."""
    if value is None or type(value) is str or type(value) is int:
        return value
    raise ProtocolError(f"`{field}` must be a string or an integer, not {described(value)}")


def position(value: Any, field: str, default: int) -> int:
    """A position in a list the provider numbers (``default`` when missing): a non-negative
    integer below 2^31, else ``ProtocolError`` naming ``field``."""
    if value is None:
        return default
    if type(value) is not int or not 0 <= value < 2 ** 31:
        raise ProtocolError(f"`{field}` must be a non-negative integer, not {described(value)}")
    return value


def bad_key(value: Any, field: str) -> ProtocolError:
    """The error for a lookup key that failed (the caller caught the ``TypeError``)."""
    return ProtocolError(f"`{field}` must be a string or an integer, not {described(value)}")


def json_text(value: Any, field: str) -> str:
    """``value`` (tool-call arguments received as JSON) as compact JSON text, key order kept;
    ``ProtocolError`` naming ``field`` when it cannot be written (too deep, a huge integer)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:
        raise ProtocolError(f"`{field}` cannot be written back as JSON: {exc}") from None


# --- the decoded answer ---------------------------------------------------------------------------


def check_answer(done: Done) -> None:
    """Raise ``ProtocolError`` unless ``done`` can be stored, rendered and replayed as it is."""
    _check_usage(done.usage)
    check_message(done.message, "the answer")


def check_message(message: Message, where: str) -> None:
    _storable(message.native, f"{where}'s native values")
    for position, part in enumerate(message.parts):
        at = f"{where}'s part {position}"
        if isinstance(part, Text):
            _strings(part, at, "text")
        elif isinstance(part, Reasoning):
            _strings(part, at, "text", "summary", "signature", "data", optional=True)
        elif isinstance(part, ToolCall):
            _strings(part, at, "id", "name", "arguments")
            if text_deeper_than(part.arguments):
                raise ProtocolError(too_deep(f"{at}'s arguments string"))
        elif isinstance(part, ToolResult):
            _strings(part, at, "call_id", "content")
        elif not isinstance(part, Opaque):
            raise ProtocolError(f"{at} is not a message part: {described(part)}")
        native = getattr(part, "native", None)
        if native:
            _storable(native, f"{at}'s native values")


def _check_usage(usage: Usage) -> None:
    for name in ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens",
                 "prompt_tokens"):
        value = getattr(usage, name)
        if type(value) is not int or not 0 <= value <= _INT_MAX:
            raise ProtocolError(f"the answer's usage {name} is not a token count: "
                                f"{described(value)}")


def _strings(part: Any, at: str, *names: str, optional: bool = False) -> None:
    for name in names:
        value = getattr(part, name)
        if type(value) is not str and not (optional and value is None):
            raise ProtocolError(f"{at} has a {name} that is {described(value)}, not text")


def _storable(value: Any, where: str) -> None:
    """Verbatim values: within the nesting bound, string keys, integers orjson can write."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            if depth >= MAX_DEPTH:
                raise ProtocolError(too_deep(where))
            for name, child in item.items():
                if type(name) is not str:
                    raise ProtocolError(f"{where} hold an object key that is "
                                        f"{described(name)}, not a string")
                stack.append((child, depth + 1))
        elif isinstance(item, list | tuple):
            if depth >= MAX_DEPTH:
                raise ProtocolError(too_deep(where))
            stack.extend((child, depth + 1) for child in item)
        elif type(item) is int and not _INT_MIN <= item <= _UINT_MAX:
            raise ProtocolError(f"{where} hold an integer out of range: {described(item)}")
