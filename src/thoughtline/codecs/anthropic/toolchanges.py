"""Mid-conversation tool changes, in the terms of an API that has only one tool list.

Facts and shapes (anthropic-sdk-python 2.17 beta types; Claude Code 2.1.337 sends them): a
``tool_addition`` block (beta ``mid-conversation-tool-changes-2026-07-01``) offers a tool from its
place in ``messages`` on — a ``tool_reference`` to a ``tools`` entry or to a tool defined earlier,
or (beta ``inline-tools-2026-09-15``) a ``tool_definition`` carrying the tool by value; a
``tool_removal`` block withdraws one by reference; a ``compaction`` block's ``tool_changes`` are
the same entries for the range it compacted. MCP references have no canonical meaning here.

An Anthropic upstream gets the blocks verbatim, in place, and the client's ``tools`` as sent
(``encode.top_tools``). Every other API gets what they mean at the end of the history: the
``tools`` list, plus every tool added, minus every tool removed since (``effective``). Owns that
reading only; the client face (``client``) parses and calls it. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from thoughtline.codecs.anthropic.wire import (
    COMPACTION,
    NS,
    TOOL_ADDITION,
    TOOL_REMOVAL,
    text_of,
)
from thoughtline.messages import ToolSpec

_DEFINITION = "tool_definition"
_REFERENCE = "tool_reference"


def spec_of(tool: Mapping[str, Any]) -> ToolSpec | None:
    """A client's tool definition as a canonical tool (None for a server tool such as
    ``web_search``, which only an Anthropic upstream runs, or one without a name)."""
    name = text_of(tool.get("name"))
    schema = tool.get("input_schema")
    if not name or (schema is None and tool.get("type") not in (None, "custom")):
        return None
    return ToolSpec(name=name, description=text_of(tool.get("description")),
                    parameters=schema if isinstance(schema, Mapping)
                    else {"type": "object", "properties": {}}, native={NS: tool})


def changes(messages: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The tool changes of a client's ``messages``, in order: each ``tool_addition`` and
    ``tool_removal`` block, and the ``tool_changes`` entries of each ``compaction`` block."""
    out: list[Mapping[str, Any]] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind in (TOOL_ADDITION, TOOL_REMOVAL):
                out.append(block)
            elif kind == COMPACTION and isinstance(block.get("tool_changes"), list):
                out.extend(c for c in block["tool_changes"] if isinstance(c, Mapping))
    return out


def effective(tools: Sequence[ToolSpec], messages: Iterable[Any]) -> tuple[ToolSpec, ...]:
    """The tools on offer after ``messages``: ``tools`` with every change applied in order."""
    return applied(tools, changes(messages))


def applied(tools: Sequence[ToolSpec], found: Sequence[Mapping[str, Any]]) -> tuple[ToolSpec, ...]:
    """``tools`` with the changes ``found`` (``changes``) applied in order."""
    if not found:
        return tuple(tools)
    known = {t.name: t for t in tools}
    offered = dict(known)
    for change in found:
        tool = change.get("tool")
        if not isinstance(tool, Mapping):
            continue
        kind = tool.get("type")
        if kind == _DEFINITION and change.get("type") == TOOL_ADDITION:
            definition = tool.get("definition")
            spec = spec_of(definition) if isinstance(definition, Mapping) else None
            if spec is not None:
                known[spec.name] = offered[spec.name] = spec
        elif kind == _REFERENCE:
            name = text_of(tool.get("name"))
            if change.get("type") == TOOL_REMOVAL:
                offered.pop(name, None)
            elif name in known:
                offered[name] = known[name]
    return tuple(offered.values())
