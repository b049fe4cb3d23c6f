"""A Responses client's tools in canonical terms, wherever the client puts them.

Owns reading ``tools`` — the body's top-level list and the list of each ``additional_tools``
input item (Codex's Responses Lite profiles send only the latter) — into ``ToolSpec`` values,
and the names every upstream API accepts:

- ``function`` tools → a ``ToolSpec`` with their JSON Schema;
- ``custom`` tools (free text, or text under a ``grammar`` format such as Codex's ``exec``) →
  a function taking one string, ``input``; a grammar goes into the description, since no other
  API can constrain a string by one;
- ``namespace`` tools → their member tools, each under a flat name ``<namespace>__<name>``
  (the double underscore Codex itself uses for MCP tools), made safe for the strictest upstream
  (``^[a-zA-Z0-9_-]{1,64}$``, Bedrock and Chat Completions; Gemini also wants a letter or
  ``_`` first) and disambiguated by a digest when it had to be changed;
- built-in tools (``web_search``, ``tool_search`` …) run only on a Responses upstream.

``ToolNames`` maps a flat name back to the client's ``(namespace, name)`` and says which tools
are custom, so an answer from any upstream goes back to the client as the items it expects
(``function_call`` / ``custom_tool_call`` with their ``namespace``). Each ``ToolSpec`` keeps the
client's own definition in ``native`` for a Responses upstream: the tool (or its namespace) when
it came in the top-level list, ``IN_ITEM`` when an ``additional_tools`` item carries it (that
item goes to a Responses upstream verbatim, in its place, so the tool is not listed twice).

Facts: the ``openai`` SDK's ``types/responses`` (``namespace_tool_param``, ``custom_tool_param``,
``response_input_item_param.AdditionalTools``: "tools made available at this item"; calls carry
``namespace``), the recording ``tests/fixtures/clients/codex_lite_run1.requests.jsonl`` and
docs/codex.md. Pure functions; no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.face import ClientRequestError
from thoughtline.codecs.openai_responses.wire import NS, is_map, text_of
from thoughtline.messages import ToolSpec

ADDITIONAL_TOOLS = "additional_tools"
FUNCTION, CUSTOM, NAMESPACE = "function", "custom", "namespace"
CUSTOM_CALL, CUSTOM_CALL_OUTPUT = "custom_tool_call", "custom_tool_call_output"
#: The one argument a custom (free-text) tool takes when it is offered as a function.
CUSTOM_INPUT = "input"
#: ``ToolSpec.native`` of a tool an ``additional_tools`` item carries.
IN_ITEM: Mapping[str, Any] = {"type": ADDITIONAL_TOOLS}
#: The flat name's joint between a namespace and a member tool.
JOINT = "__"
#: What every upstream accepts as a function name (the strictest: Bedrock's toolSpec name and
#: Chat Completions' function name; Gemini also wants a letter or underscore first).
_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST = 8

_CUSTOM_SCHEMA: Mapping[str, Any] = {
    "type": "object", "properties": {CUSTOM_INPUT: {"type": "string"}},
    "required": [CUSTOM_INPUT]}


@dataclass(frozen=True, slots=True)
class WireName:
    """A tool as the client names it: its namespace ("" for none), name, and whether it is a
    custom (free-text) tool."""

    namespace: str
    name: str
    custom: bool = False


@dataclass(frozen=True, slots=True)
class ToolNames:
    """Flat name → the client's name, for every tool of one request."""

    by_flat: Mapping[str, WireName] = field(default_factory=dict)

    def __contains__(self, flat: object) -> bool:
        return flat in self.by_flat

    def __bool__(self) -> bool:
        return bool(self.by_flat)

    def wire(self, flat: str) -> WireName:
        """The client's name for ``flat`` (a name the request did not offer stays as it is)."""
        return self.by_flat.get(flat) or WireName("", flat)

    def is_custom(self, flat: str) -> bool:
        found = self.by_flat.get(flat)
        return found is not None and found.custom


#: A request that offers no tools.
NO_TOOLS = ToolNames()


def flat_name(namespace: str, name: str) -> str:
    """The name every upstream accepts for ``name`` in ``namespace`` (``name`` itself when it
    has none)."""
    if not namespace:
        return name
    joined = f"{namespace}{JOINT}{name}"
    if _SAFE.fullmatch(joined):
        return joined
    digest = hashlib.sha256(f"{namespace}\0{name}".encode()).hexdigest()[:_DIGEST]
    safe = _UNSAFE.sub("_", joined)
    if not safe[:1].isalpha():
        safe = "_" + safe
    return f"{safe[:63 - _DIGEST]}_{digest}"


def called_name(item: Mapping[str, Any]) -> str:
    """The flat name of the tool a ``function_call`` / ``custom_tool_call`` item calls."""
    return flat_name(text_of(item.get(NAMESPACE)), text_of(item.get("name")))


def call_rest(item: Mapping[str, Any], held: frozenset[str]) -> dict[str, Any]:
    """A call item's fields the canonical ``ToolCall`` does not hold (``held``): its own
    ``name`` stays beside its ``namespace``, since the canonical name is the flat one."""
    keep_name = NAMESPACE in item
    return {k: v for k, v in item.items() if k not in held or (keep_name and k == "name")}


def custom_input(arguments: str) -> str:
    """A custom call's free text from the canonical arguments (``{"input": …}``; arguments an
    upstream wrote otherwise go as they are)."""
    try:
        found = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return arguments
    value = found.get(CUSTOM_INPUT) if isinstance(found, dict) else None
    return value if isinstance(value, str) else arguments


def output_text(output: Any) -> str:
    """A tool output's text: the string, or the texts of its ``input_text`` / ``output_text``
    parts joined by newlines (Codex's code-mode outputs are parts)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(text_of(p.get("text")) for p in output if is_map(p))
    return ""


def client_name(flat: str, native: Mapping[str, Any], names: ToolNames) -> WireName:
    """How the client names the tool a call calls: as the call's own item did (a namespace and
    a name), else as the request's tools did."""
    namespace = text_of(native.get(NAMESPACE))
    if namespace:
        return WireName(namespace, text_of(native.get("name")) or flat)
    return names.wire(flat)


@dataclass(frozen=True, slots=True)
class Tools:
    """A request's tools: canonical specs, their names, and the built-ins by kind (which only
    a Responses upstream runs)."""

    specs: tuple[ToolSpec, ...] = ()
    names: ToolNames = field(default_factory=ToolNames)
    builtins: tuple[str, ...] = ()


def read_tools(top: Any, items: Iterable[tuple[Any, str]]) -> Tools:
    """The tools of the top-level ``tools`` list and of each ``additional_tools`` item's list
    (with the item's position for errors); raises ``ClientRequestError`` naming what is wrong."""
    if top is not None and not isinstance(top, list):
        raise ClientRequestError("`tools` must be an array", param="tools")
    reader = _Reader()
    reader.read(top or (), "tools", in_item=False)
    for raw, where in items:
        if not isinstance(raw, list):
            raise ClientRequestError(f"{where}.tools must be an array", param=f"{where}.tools")
        reader.read(raw, f"{where}.tools", in_item=True)
    return Tools(specs=tuple(reader.specs), names=ToolNames(reader.names),
                 builtins=tuple(dict.fromkeys(reader.builtins)))


class _Reader:
    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []
        self.names: dict[str, WireName] = {}
        self.builtins: list[str] = []

    def read(self, tools: Iterable[Any], where: str, *, in_item: bool) -> None:
        for index, tool in enumerate(tools):
            at = f"{where}[{index}]"
            kind = _kind(tool, at)
            if kind == NAMESPACE:
                self._namespace(tool, at, in_item)
            elif kind in (FUNCTION, CUSTOM):
                self._add(tool, "", at, IN_ITEM if in_item else tool)
            else:
                self.builtins.append(f"tools[{kind}]")

    def _namespace(self, tool: Mapping[str, Any], at: str, in_item: bool) -> None:
        namespace = text_of(tool.get("name"))
        if not namespace:
            raise ClientRequestError(f"{at} must have a name", param=f"{at}.name")
        members = tool.get("tools")
        if not isinstance(members, list):
            raise ClientRequestError(f"{at}.tools must be an array", param=f"{at}.tools")
        for index, member in enumerate(members):
            where = f"{at}.tools[{index}]"
            if _kind(member, where) not in (FUNCTION, CUSTOM):
                raise ClientRequestError(f"{where}: a namespace holds function and custom tools "
                                         "only", param=f"{where}.type")
            self._add(member, namespace, where, IN_ITEM if in_item else tool)

    def _add(self, tool: Mapping[str, Any], namespace: str, at: str,
             native: Mapping[str, Any]) -> None:
        name = text_of(tool.get("name"))
        if not name:
            raise ClientRequestError(f"{at} must have a name", param=f"{at}.name")
        custom = tool["type"] == CUSTOM
        flat = flat_name(namespace, name)
        if flat in self.names:  # a later definition of the same tool (a repeated item) wins
            self.specs = [s for s in self.specs if s.name != flat]
        self.names[flat] = WireName(namespace, name, custom)
        description = text_of(tool.get("description"))
        if custom:
            spec = ToolSpec(name=flat, description=_with_format(description, tool.get("format")),
                            parameters=_CUSTOM_SCHEMA, native={NS: native})
        else:
            schema = tool.get("parameters")
            spec = ToolSpec(name=flat, description=description,
                            parameters=schema if is_map(schema)
                            else {"type": "object", "properties": {}}, native={NS: native})
        self.specs.append(spec)


def _kind(tool: Any, at: str) -> str:
    if not is_map(tool) or not isinstance(tool.get("type"), str):
        raise ClientRequestError(f"{at} must be a tool with a type", param=at)
    return str(tool["type"])


def _with_format(description: str, format_: Any) -> str:
    """A custom tool's description with its input grammar, when it has one."""
    if not is_map(format_) or format_.get("type") != "grammar":
        return description
    definition = text_of(format_.get("definition"))
    if not definition:
        return description
    syntax = text_of(format_.get("syntax")) or "the"
    lead = f"{description}\n\n" if description else ""
    return (f"{lead}The `{CUSTOM_INPUT}` string must match this {syntax} grammar:\n"
            f"{definition}")


def top_level(specs: Iterable[ToolSpec]) -> Iterator[Mapping[str, Any]]:
    """The top-level ``tools`` a Responses upstream gets: each client definition once (a
    namespace for all its members), none for a tool an ``additional_tools`` item carries, and
    a function built from the spec for a tool with no client definition."""
    seen: set[int] = set()
    for spec in specs:
        given = spec.native.get(NS)
        if given is IN_ITEM or (is_map(given) and given.get("type") == ADDITIONAL_TOOLS):
            continue
        if is_map(given):
            if id(given) not in seen:
                seen.add(id(given))
                yield given
            continue
        yield {"type": FUNCTION, "name": spec.name, "description": spec.description,
               "parameters": dict(spec.parameters)}
