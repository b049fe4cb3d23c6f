"""What the core reads about a turn without decoding it: its ``TurnFacts`` (role, tool calls and
results, whether it opens a tool loop, the API's own extras) and the ``Named`` values an API
stores beside a turn's wire form (its extras, its "after" facts).

Neutral: no wire format, no codec. ``codecs.base`` (the turn encoder's seam) re-exports both; the
core's history views (``stored``, ``replay``) read them from here, so neither imports a codec.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thoughtline.messages import Message, ToolCall, ToolResult


class Named:
    """A frozen dataclass of JSON values stored under its field names (``TurnFacts.extra`` and a
    turn's ``after`` facts): ``to_json`` leaves out fields at their default; ``from_json`` reads
    lists back as tuples. Subclass it as ``@dataclass(frozen=True, slots=True) class X(Named)``."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Any:
        """The value ``to_json`` wrote (``TypeError``/``KeyError`` when it is not one)."""
        if not raw:  # most turns' after facts are all defaults: one shared value
            return _default(cls)
        values = []
        get = raw.get
        for name, default in _layout(cls):
            value = get(name, default)
            if value is _REQUIRED:
                raise TypeError(f"{cls.__name__}: {name} is missing")
            values.append(_tuples(value) if type(value) is list else value)
        return _build(cls, values)

    @classmethod
    def of_fields(cls, *values: Any) -> Any:
        """The value with these field values, in field order, set without the frozen
        ``__init__``'s keyword call (a resume builds one per stored turn; the caller gives
        every field, already of its type)."""
        return _build(cls, values)


_REQUIRED = object()


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, Any], ...]:
    """A ``Named`` type's (field name, default) pairs in order (read once per type: a resume
    reads every stored turn's after facts)."""
    out = []
    for f in dataclasses.fields(cls):
        default: Any = f.default
        if default is dataclasses.MISSING:
            factory = f.default_factory
            default = _REQUIRED if factory is dataclasses.MISSING else factory()
        out.append((f.name, default))
    return tuple(out)


@functools.cache
def _setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of a frozen slotted dataclass's fields, in field order."""
    return tuple(cls.__dict__[f.name].__set__ for f in dataclasses.fields(cls))


def _build(cls: type, values: Sequence[Any]) -> Any:
    obj = object.__new__(cls)
    for put, value in zip(_setters(cls), values, strict=True):
        put(obj, value)
    return obj


@functools.cache
def _default(cls: type) -> Any:
    """A ``Named`` type's value with every field at its default (frozen: shared)."""
    return cls()


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnFacts:
    """What the core and an API's walk read about one turn without decoding it.

    Context-free: the same under every plan and wherever the turn is, so they are stored with
    every form of the turn and read on a resume instead of the turn. ``extra`` holds the API's
    own facts (e.g. Anthropic's prefix stamp), a ``Named`` value of the encoder's
    ``extra_type``."""

    role: str
    #: The ids of the tool calls it makes (an assistant turn's).
    calls: tuple[str, ...] = ()
    #: The call ids its tool results answer.
    results: tuple[str, ...] = ()
    #: An interrupted answer (its calls never ran).
    incomplete: bool = False
    #: A user turn that is not only tool results: it opens a new tool loop (``replay.loop_start``).
    opens: bool = False
    extra: Named | None = None

    @classmethod
    def of(cls, message: Message, extra: Named | None = None) -> TurnFacts:
        """The neutral facts of ``message`` (and the API's ``extra``)."""
        calls: tuple[str, ...] = ()
        results: tuple[str, ...] = ()
        for part in message.parts:  # one pass: this runs for every turn of a cold request
            if isinstance(part, ToolResult):
                results += (part.call_id,)
            elif isinstance(part, ToolCall):
                calls += (part.id,)
        role = message.role
        return _build(cls, (role, calls, results, message.incomplete,  # (fields in order)
                            role == "user" and len(results) < len(message.parts), extra))

    @property
    def shape(self) -> tuple[str, Sequence[str], Sequence[str], bool]:
        """(role, its calls if an assistant, its results if a tool turn, incomplete): what the
        unanswered-call scan reads (``stored.shape_of``)."""
        return (self.role, self.calls if self.role == "assistant" else (),
                self.results if self.role == "tool" else (), self.incomplete)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role}
        if self.calls:
            out["calls"] = self.calls
        if self.results:
            out["results"] = self.results
        if self.incomplete:
            out["incomplete"] = True
        if self.opens:
            out["opens"] = True
        if self.extra is not None:
            out["extra"] = self.extra.to_json()
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], extra_type: type[Named] | None = None,
                  ) -> TurnFacts:
        """What ``to_json`` wrote (``TypeError``/``KeyError``/``ValueError`` when it is not)."""
        get = raw.get
        extra, calls, results = get("extra"), get("calls"), get("results")
        role = raw["role"]
        if type(role) is not str:
            raise TypeError("a turn's role is a string")
        return _build(cls, (role, tuple(map(str, calls)) if calls else (),
                            tuple(map(str, results)) if results else (),
                            bool(get("incomplete")), bool(get("opens")),
                            extra_type.from_json(extra) if extra_type and extra is not None
                            else None))
