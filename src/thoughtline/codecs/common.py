"""Small JSON and URL helpers more than one codec needs (no wire knowledge of any API)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import orjson


def path_segment(value: str) -> str:
    """``value`` (a model id a client chose) escaped to stay one URL path segment.

    ``/``, ``?``, ``#``, ``%`` and ``:`` are escaped, so no id can climb out of its segment
    (``../``), start a query or fragment, or add a ``:verb``; ``@`` stays (Vertex versions:
    ``claude-sonnet-4-5@20250929``, RFC 3986 allows it in a segment).
    """
    return quote(value, safe="@")


def deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into ``base`` in place, objects key by key (copied, never shared)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merged = dict(base[key])
            deep_merge(merged, value)
            base[key] = merged
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def merge_params(body: dict[str, Any], params: Mapping[str, Any],
                 owned: frozenset[str]) -> list[str]:
    """Merge request ``params`` into ``body`` like ``deep_merge``, except the fields a codec owns.

    The codec decides what a body holds; params only add. ``owned`` names fields as dotted paths
    (``"messages"``, ``"generationConfig.thinkingConfig.includeThoughts"``): a param naming one is
    left out, and so is a non-object value that would replace an object holding one. Returns the
    dotted paths left out (empty when every param applied).
    """
    refused: list[str] = []
    _merge_owned(body, params, owned, "", refused)
    return refused


def refused_params(params: Mapping[str, Any], owned: frozenset[str]) -> list[str]:
    """The params ``merge_params`` would leave out (to tell the user before a request)."""
    return merge_params({}, params, owned)


def _merge_owned(base: dict[str, Any], extra: Mapping[str, Any], owned: frozenset[str],
                 prefix: str, refused: list[str]) -> None:
    for key, value in extra.items():
        path = prefix + str(key)
        if path in owned:
            refused.append(path)
            continue
        inner = path + "."
        guards = any(name.startswith(inner) for name in owned)
        held = base.get(key)
        if isinstance(value, Mapping) and (guards or isinstance(held, dict)):
            merged = dict(held) if isinstance(held, dict) else {}
            _merge_owned(merged, value, owned, inner, refused)
            base[key] = merged
        elif guards:  # would replace an object holding an owned field
            refused.append(path)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


class SerializedPrefix:
    """The bytes of a growing request array, serialized once per item.

    A session's request carries the previous request's items again (the same objects, shared
    by the wire cache) plus a few new ones. Serializing every item again on every request is
    most of a steady build; this keeps the items already reused as ``orjson.Fragment`` chunks:
    each request serializes, in one call, the items that were new in the request before it, and
    splices the rest. ``parts`` gives what to put in the array instead of ``items``: the same
    bytes as ``orjson.dumps(items)``. Any change to the prefix (an item replaced, a plan change)
    starts over; nothing is serialized ahead of need, so a cold build costs what it did.
    """

    __slots__ = ("_chunks", "_covered", "_items")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._chunks: list[Any] = []
        self._covered = 0  # how many leading items the chunks hold

    def parts(self, items: Sequence[Any]) -> list[Any]:
        previous = self._items
        if len(previous) <= len(items) and all(map(operator.is_, items, previous)):
            if self._covered < len(previous):  # the last request's new items, reused now
                self._chunks.append(orjson.Fragment(
                    orjson.dumps(previous[self._covered:])[1:-1]))
                self._covered = len(previous)
        else:
            self._chunks, self._covered = [], 0
        self._items = list(items)  # held, so identities stay unique while compared
        return [*self._chunks, *items[self._covered:]]
