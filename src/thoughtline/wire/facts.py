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
from typing import Any, NamedTuple

import orjson

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
        kind: type = cls  # (as ``type``: mypy finds no class object hashable, python/mypy#20409)
        return _readers(kind)(raw)

    @classmethod
    def of_fields(cls, *values: Any) -> Any:
        """The value with these field values, in field order (every field given)."""
        kind: type = cls  # (as ``type``: see ``from_json``)
        return _makers(kind)(*values)


_tuple = tuple.__new__  # a named tuple from its values in order, in one call


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, Any], ...]:
    """A ``Named`` type's (field name, default) pairs in order (``_MISSING``: required)."""
    out = []
    for f in dataclasses.fields(cls):
        default: Any = f.default
        if f.default is dataclasses.MISSING:
            factory = f.default_factory
            default = _MISSING if factory is dataclasses.MISSING else factory()
        out.append((f.name, default))
    return tuple(out)


_MISSING = object()


def _reader(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """``cls.from_json``: each field read by name with its default, a list read back as a
    tuple, a missing required field a ``TypeError``."""
    layout = _layout(cls)

    def read(raw: Mapping[str, Any]) -> Any:
        values = {}
        for name, default in layout:
            value = raw.get(name, default)
            if value is _MISSING:
                raise TypeError(f"{cls.__name__}: {name} is missing")
            values[name] = _tuples(value)
        return cls(**values)

    return read


def maker(cls: type) -> Callable[..., Any]:
    """A frozen dataclass's value from its field values in order (``Named.of_fields`` for any
    such class, keyword-only ones included)."""
    names = tuple(name for name, _ in _layout(cls))

    def make(*values: Any) -> Any:
        return cls(**dict(zip(names, values, strict=True)))

    return make


def sharer(cls: type) -> Callable[..., Any]:
    """``maker(cls)`` that makes one value per distinct field values (frozen, so shared; the
    512 last used are kept): a history's turns repeat a handful of after facts. Every field is
    given, and hashable."""
    return functools.lru_cache(maxsize=512)(maker(cls))


_readers = functools.cache(_reader)
_makers = functools.cache(maker)


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


class TurnFacts(NamedTuple):
    """What the core and an API's walk read about one turn without decoding it.

    Context-free: the same under every plan and wherever the turn is, so they are stored with
    every form of the turn and read on a resume instead of the turn. ``extra`` holds the API's
    own facts (e.g. Anthropic's prefix stamp), a ``Named`` value of the encoder's
    ``extra_type``.

    A named tuple, not a dataclass: a resume reads one per stored turn, and a tuple is made in
    one C call (about three times faster than a frozen slotted dataclass here); it is as
    immutable. Made only by ``of`` and ``from_json``."""

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
        parts = message.parts
        for part in parts:  # one pass: this runs for every turn of a cold request
            # (parts are final dataclasses: an exact type test misses no subclass)
            if type(part) is ToolResult:
                results += (part.call_id,)
            elif type(part) is ToolCall:
                calls += (part.id,)
        role = message.role
        return _tuple(cls, (role, calls, results, message.incomplete,  # (fields in order)
                            role == "user" and len(results) < len(parts), extra))

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
        return _tuple(cls, (role, tuple(map(str, calls)) if calls else (),
                            tuple(map(str, results)) if results else (),
                            bool(get("incomplete")), bool(get("opens")),
                            extra_type.from_json(extra) if extra_type and extra is not None
                            else None))


#: What reading a stored value that is not one the wire cache wrote may raise (the turn is then
#: decoded, or encoded again, instead).
UNREADABLE = (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError)


def read_facts(meta: str) -> TurnFacts | None:
    """The neutral facts a stored form's meta holds (``{**facts.to_json(), "after": …}``, as the
    wire cache writes it); None: it holds none (decode the turn)."""
    try:
        return TurnFacts.from_json(orjson.loads(meta))
    except UNREADABLE:
        return None


def with_role(facts: Sequence[TurnFacts], role: str) -> tuple[int, ...]:
    """The indices of the turns of ``role``, in order."""
    return tuple(index for index, found in enumerate(facts) if found.role == role)
