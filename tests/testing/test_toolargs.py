"""``testing.toolargs``: the arguments every emulator's tool call carries fit the offered schema."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.testing.toolargs import arguments


def test_every_declared_property_gets_a_value_of_its_type() -> None:
    schema = {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"},
        "hourly": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
        "nothing": {"type": "null"}}}
    assert arguments(schema, "Lima", number=7) == {
        "city": "Lima", "days": 7, "ratio": 7, "hourly": True, "tags": ["Lima"],
        "where": {"lat": 7}, "nothing": None}


def test_enum_const_format_and_lengths() -> None:
    schema = {"properties": {
        "unit": {"enum": ["c", "f"]}, "kind": {"const": "forecast"},
        "day": {"type": "string", "format": "date"},
        "mail": {"type": "string", "format": "email"},
        "code": {"type": "string", "maxLength": 2}, "long": {"type": "string", "minLength": 9}}}
    assert arguments(schema, "Lisbon") == {"unit": "c", "kind": "forecast", "day": "2026-01-01",
                                           "mail": "user@example.com", "code": "Li",
                                           "long": "Lisbonxxx"}


@pytest.mark.parametrize(("bounds", "kind", "expected"), [
    ({"minimum": 3, "maximum": 14}, "integer", 3),
    ({"maximum": 0}, "integer", 0),
    ({"exclusiveMinimum": 5}, "integer", 6),
    ({"minimum": 5, "exclusiveMinimum": True}, "integer", 6),  # draft 4
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, "number", 0.5),
    ({"minimum": 0, "maximum": 99}, "integer", 1),  # the seed fits: kept
])
def test_numbers_respect_their_bounds(bounds: dict[str, Any], kind: str, expected: Any) -> None:
    assert arguments({"properties": {"x": {"type": kind, **bounds}}}, "t") == {"x": expected}


def test_refs_unions_and_gemini_types() -> None:
    schema = {"$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
              "type": "object", "properties": {
                  "place": {"$ref": "#/$defs/Place"},
                  "note": {"anyOf": [{"type": "null"}, {"type": "string"}]},
                  "size": {"type": ["null", "integer"]},
                  "both": {"allOf": [{"properties": {"a": {"type": "BOOLEAN"}}},
                                     {"properties": {"b": {"type": "INTEGER"}}}]}}}
    assert arguments(schema, "Oslo", number=2) == {
        "place": {"city": "Oslo"}, "note": "Oslo", "size": 2, "both": {"a": True, "b": 2}}


def test_a_recursive_schema_ends() -> None:
    schema = {"$defs": {"Node": {"type": "object", "properties": {
        "name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node"}
    made = arguments(schema, "n")
    depth = 0
    while "child" in made:
        made, depth = made["child"], depth + 1
    assert 1 < depth < 20


def test_open_and_closed_schemas_without_properties() -> None:
    fallback = {"query": "q", "n": 3}
    for open_schema in ({"type": "object"}, {}, None, "not a schema"):
        assert arguments(open_schema, "t", fallback=fallback) == fallback
    assert arguments({"type": "object", "additionalProperties": False}, "t",
                     fallback=fallback) == {}
    assert arguments({"type": "object", "properties": {}}, "t", fallback=fallback) == {}
