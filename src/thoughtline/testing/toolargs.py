"""The arguments an emulated model puts in a tool call: values the offered JSON schema accepts.

Owns the one rule every emulator follows (Chat, Responses, Anthropic, Gemini, Bedrock): a call
carries every property the tool's schema declares, each with a value of its type — the prompt's
text for a string (or the first ``enum`` / the ``const`` value, a sample for a known ``format``),
``number`` clamped into the bounds for a number, ``true``, one item for an array, an object built
the same way — so an agent that validates the arguments it receives accepts them. ``$ref``s into
the schema's own ``$defs`` / ``definitions`` are followed; ``anyOf`` / ``oneOf`` take their first
option that is not ``null``; ``allOf`` merges its parts.

A schema that declares no ``properties`` and does not forbid other ones (``{"type": "object"}``)
accepts any object: the emulator's own ``fallback`` arguments are used then, as before. Does not
own which tool is called, or when: that is each emulator's script.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

_MAX_DEPTH = 8  # a recursive schema ($ref cycles) ends in empty values here
#: A valid sample per string ``format`` an agent's validator may check.
_FORMATS = {
    "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "time": "00:00:00",
    "email": "user@example.com", "uri": "https://example.com/", "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000", "ipv4": "127.0.0.1", "hostname": "example.com",
}


def arguments(schema: Any, text: str, *, number: int = 1,
              fallback: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Arguments for a tool whose parameters are ``schema`` (see the module docstring)."""
    root = schema if isinstance(schema, Mapping) else {}
    resolved = _resolve(root, root, 0)
    if "properties" not in resolved and resolved.get("additionalProperties") is not False:
        return dict(fallback or {})
    return _object(root, resolved, text, number, 0)


def _resolve(root: Mapping[str, Any], schema: Any, depth: int) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` followed and ``allOf`` / ``anyOf`` / ``oneOf`` settled."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _resolve(root, _pointer(root, ref), depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            chosen = next((o for o in options if not _is_null(root, o, depth)), options[0])
            rest = {k: v for k, v in schema.items() if k != key}
            return _resolve(root, {**rest, **_resolve(root, chosen, depth + 1)}, depth + 1)
    parts = schema.get("allOf")
    if isinstance(parts, list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in parts:
            resolved = _resolve(root, part, depth + 1)
            merged["properties"] = {**merged.get("properties", {}),
                                    **resolved.get("properties", {})}
            merged.update({k: v for k, v in resolved.items() if k != "properties"})
        if not merged.get("properties"):
            merged.pop("properties", None)
        return merged
    return schema


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """A ``#/...`` JSON pointer into the schema itself; anything else resolves to nothing."""
    if not ref.startswith("#"):
        return {}
    found: Any = root
    for token in ref[1:].split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        found = found.get(token) if isinstance(found, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _is_null(root: Mapping[str, Any], option: Any, depth: int) -> bool:
    return _type(_resolve(root, option, depth + 1)) == "null"


def _type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first that is not null
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    if isinstance(kind, str):
        return kind.lower()  # Gemini's OpenAPI subset writes STRING, INTEGER …
    if "properties" in schema:
        return "object"
    return "array" if "items" in schema or "prefixItems" in schema else "string"


def _value(root: Mapping[str, Any], schema: Any, text: str, number: int, depth: int) -> Any:
    spec = _resolve(root, schema, depth)
    if "const" in spec:
        return spec["const"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = _type(spec)
    if kind == "object":
        return _object(root, spec, text, number, depth + 1)
    if kind == "array":
        return _array(root, spec, text, number, depth + 1)
    if kind in ("integer", "number"):
        return _number(spec, number, whole=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(spec, text)


def _object(root: Mapping[str, Any], spec: Mapping[str, Any], text: str, number: int,
            depth: int) -> dict[str, Any]:
    properties = spec.get("properties")
    if not isinstance(properties, Mapping) or depth > _MAX_DEPTH:
        return {}
    return {str(name): _value(root, inner, text, number, depth)
            for name, inner in properties.items()}


def _array(root: Mapping[str, Any], spec: Mapping[str, Any], text: str, number: int,
           depth: int) -> list[Any]:
    prefix = spec.get("prefixItems")
    if isinstance(prefix, list):
        return [_value(root, item, text, number, depth) for item in prefix]
    if depth > _MAX_DEPTH or spec.get("maxItems") == 0:
        return []
    least = spec.get("minItems")
    count = least if isinstance(least, int) and least > 1 else 1
    return [_value(root, spec.get("items", {}), text, number, depth) for _ in range(count)]


def _number(spec: Mapping[str, Any], number: int, *, whole: bool) -> int | float:
    """``number`` if the bounds allow it, else the nearest value they do (a fraction for a
    ``number`` whose bounds hold no whole one, e.g. 0 < x < 1)."""
    low, high = _bound(spec, "minimum", "exclusiveMinimum"), _bound(spec, "maximum",
                                                                     "exclusiveMaximum")

    def fits(value: float) -> bool:
        return ((low is None or value > low[0] or (value == low[0] and not low[1]))
                and (high is None or value < high[0] or (value == high[0] and not high[1])))

    candidates: list[int | float] = [number]
    if low is not None:
        candidates.append(math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
    if high is not None:
        candidates.append(math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
    if not whole and low is not None and high is not None:
        candidates.append((low[0] + high[0]) / 2)
    return next((c for c in candidates if fits(c)), candidates[-1])


def _bound(spec: Mapping[str, Any], inclusive: str, exclusive: str) -> tuple[float, bool] | None:
    """(limit, is it exclusive): draft 2020-12 numbers, or draft 4's boolean flag."""
    strict = spec.get(exclusive)
    if _is_number(strict):
        return float(strict), True
    limit = spec.get(inclusive)
    return (float(limit), strict is True) if _is_number(limit) else None


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string(spec: Mapping[str, Any], text: str) -> str:
    sample = _FORMATS.get(str(spec.get("format", "")).lower())
    value = sample if sample is not None else text
    longest, shortest = spec.get("maxLength"), spec.get("minLength")
    if isinstance(longest, int) and len(value) > longest:
        value = value[:longest]
    if isinstance(shortest, int) and len(value) < shortest:
        value = value + "x" * (shortest - len(value))
    return value
