"""What every client face of the gateway hands it: a client's request in canonical terms.

Owns the API-neutral values a client-side codec (``codecs.<api>.client``) produces and the
gateway consumes: ``ClientRequest`` and ``ClientRequestError``. A face parses its own wire
(Chat Completions, Messages, Responses) into canonical messages and tools, and says, per target
API, which of the client's parameters that API reads, what it drops (for the request log), which
headers it passes on, which session the client named and which values the gateway minted that the
client echoed back. A request is checked once it is built, whatever its face: tool-call arguments
(JSON in a string, unseen by the body's own nesting bound) nest within ``shape.MAX_DEPTH``.
A face converts its client's items in one resumable loop (``Walked``, ``walk``), so that a caller's
``ItemMemo`` can continue a resent conversation from where an earlier request's conversion ended.
Knows no wire names and does no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from thoughtline.codecs import shape
from thoughtline.errors import UsageError
from thoughtline.messages import Message, ToolSpec

#: The prefix of every value the gateway mints (a thinking block's ``signature``, a reasoning
#: item's ``id`` …). ``:`` is outside the base64 alphabets of real provider values, so a client
#: codec tells a minted value from a provider's without knowing the gateway's key.
MINT_PREFIX = "tl1:"


def is_minted(value: Any) -> TypeGuard[str]:
    """True when ``value`` has the shape of a value the gateway minted (not that it is valid)."""
    return isinstance(value, str) and value.startswith(MINT_PREFIX)


def array_at(body: Any, key: str) -> list[Any] | None:
    """``body[key]`` when ``body`` is an object and that is an array (None otherwise): a face's
    conversation items, under the key its codec names (``items_of``)."""
    items = body.get(key) if isinstance(body, Mapping) else None
    return items if isinstance(items, list) else None


#: What a face does with a type a client may send (each face's ``kinds`` table; docs/faces.md):
#: give it every upstream in its own terms; send it verbatim to an upstream of the face's own
#: API only (named in ``dropped`` for the others); verify and expand a value the gateway minted;
#: or drop it for every upstream, named in ``dropped`` (no upstream API has a place for it).
MAPPED, OWN, MINTED = "mapped", "verbatim to its own API", "mapped; minted values expanded"
DROPPED, REFUSED = "dropped, named in the log", "refused with a 400 naming it"


class ClientRequestError(UsageError):
    """The client's body is not a valid request of its face's API (HTTP 400)."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, kw_only=True, slots=True)
class Minted:
    """A value the gateway minted earlier, echoed by the client on one of its messages.

    ``message`` is the index in ``ClientRequest.messages`` of the assistant turn that carried it;
    ``value`` the value as received (verified by the gateway, never by a codec).
    """

    message: int
    value: str


@dataclass(kw_only=True, slots=True)
class Walked:
    """A face's client items converted so far: its loop's whole state. ``minted`` counts its
    ``Minted.message`` in ``messages``; ``unread`` names what no upstream receives, ``own``
    what only an upstream of the face's own API receives (each name once); ``tool_changes``:
    the items' changes to the tools on offer, in order, as the face reads them; ``held``: what
    the face read that is no message yet (e.g. items that join the next ones into one turn), an
    immutable value of the face's own, finished by its parse after the walk (None: nothing)."""

    messages: list[Message] = field(default_factory=list)
    minted: list[Minted] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    own: list[str] = field(default_factory=list)
    tool_changes: list[Any] = field(default_factory=list)
    held: Any = None

    def copy(self) -> Walked:
        return Walked(messages=list(self.messages), minted=list(self.minted),
                      unread=list(self.unread), own=list(self.own),
                      tool_changes=list(self.tool_changes), held=self.held)


#: A face's conversion of ``items[start:]`` onto ``walked`` (in place: it appends, and may
#: replace its last message, never change one): what it makes of an item depends only on that
#: item and on ``walked``; an error names the item by its index in ``items``.
Convert = Callable[[Sequence[Any], int, Walked], None]


class ItemMemo(Protocol):
    """Converts ``items`` as ``convert`` does, from the state an earlier conversion of a prefix
    of them left (the gateway's ``memo``): the result equals ``walk(items, convert)``."""

    def walk(self, items: Sequence[Any], convert: Convert) -> Walked: ...


def walk(items: Sequence[Any], convert: Convert, memo: ItemMemo | None = None) -> Walked:
    """``items`` converted by ``convert``, through ``memo`` when given."""
    if memo is not None:
        return memo.walk(items, convert)
    walked = Walked()
    convert(items, 0, walked)
    return walked


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientRequest:
    """A client's request in canonical terms."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    #: The client's other body keys, verbatim, in the face's own API names.
    params: Mapping[str, Any] = field(default_factory=dict)
    stream: bool = False
    include_usage: bool = False
    #: The face's API (``params`` go verbatim to an upstream of this API only).
    api: str = "openai-chat"
    #: Per target API: the parameters that API reads, mapped from the client's (a target API
    #: missing here gets ``params`` when it is the face's own API, else nothing).
    params_for: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Per target API: the client's parameters that API has no place for (logged, never sent).
    dropped_for: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Per target API: request headers of the client passed on to that API (e.g. versions).
    headers_for: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: The conversation the client names in its own terms ("" when it names none).
    session_hint: str = ""
    #: Values the gateway minted that the client sent back, in message order.
    minted: tuple[Minted, ...] = ()
    #: What of the request no upstream receives (content no API of the gateway carries), as the
    #: request log names it.
    unread: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for message in self.messages:
            for call in message.tool_calls:
                if shape.text_deeper_than(call.arguments):
                    raise ClientRequestError(shape.too_deep(
                        f"the arguments string of tool call {call.id!r}"))

    def params_to(self, api: str) -> Mapping[str, Any]:
        """The parameters an upstream of ``api`` receives."""
        found = self.params_for.get(api)
        if found is not None:
            return found
        return self.params if api == self.api else {}

    def dropped_to(self, api: str) -> tuple[str, ...]:
        """The client's parameters an upstream of ``api`` does not receive."""
        found = self.dropped_for.get(api)
        if found is None:
            found = () if api == self.api else tuple(sorted(self.params))
        return (*found, *self.unread) if self.unread else found
