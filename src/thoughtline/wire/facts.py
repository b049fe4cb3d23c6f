"""What the core reads about a turn without decoding it: its ``TurnFacts``, and the ``Named``
values an API stores beside a turn's wire form (its extras, its "after" facts). Neutral (no wire
format, no codec), so the core's history views (``stored``, ``replay``) import no codec.
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
            if f.default is dataclasses.MISSING or value != f.default:
                out[f.name] = value
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Any:
        """The value ``to_json`` wrote (``TypeError``/``KeyError`` when it is not one)."""
        kind: type = cls  # (as ``type``: mypy finds no class object hashable, python/mypy#20409)
        return cls(**{name: _tuples(raw[name]) for name in _names(kind) if name in raw})

    @classmethod
    def of_fields(cls, *values: Any) -> Any:
        """The value with these field values, in field order (every field given)."""
        kind: type = cls  # (as ``type``: see ``from_json``)
        return maker(kind)(*values)


_tuple = tuple.__new__  # a named tuple from its values in order, in one call


@functools.cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def maker(cls: type) -> Callable[..., Any]:
    """A frozen dataclass's value from its field values in order (``Named.of_fields`` for any
    such class, keyword-only ones included)."""
    names = _names(cls)

    def make(*values: Any) -> Any:
        return cls(**dict(zip(names, values, strict=True)))

    return make


def sharer(cls: type) -> Callable[..., Any]:
    """``maker(cls)`` sharing one value per distinct field values (all given and hashable; the
    512 last used are kept): a history's turns repeat a handful of after facts."""
    return functools.lru_cache(maxsize=512)(maker(cls))


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


#: What the unanswered-call scan reads of a turn (``TurnFacts.shape``).
Shape = tuple[str, Sequence[str], Sequence[str], bool]


class TurnFacts(NamedTuple):
    """What the core and an API's walk read about one turn without decoding it.

    Context-free: the same under every plan and wherever the turn is, so they are stored with
    every form of the turn and read on a resume instead of the turn. ``extra`` holds the API's
    own facts (e.g. Anthropic's prefix stamp), of the encoder's ``extra_type``.

    A named tuple, not a dataclass: a resume reads one per stored turn, and a tuple is made in
    one C call (about three times faster than a frozen slotted dataclass here)."""

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
    def shape(self) -> Shape:
        """(role, its calls if an assistant, its results if a tool turn, incomplete): what the
        unanswered-call scan reads."""
        return (self.role, self.calls if self.role == "assistant" else (),
                self.results if self.role == "tool" else (), self.incomplete)

    def to_json(self) -> dict[str, Any]:
        # (in field order, each only when set; the role always is)
        out: dict[str, Any] = {name: value for name, value in zip(self._fields, self, strict=True)
                               if value}
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


def read_meta(meta: str, extra_type: type[Named] | None = None,
              after_type: type[Named] | None = None) -> tuple[TurnFacts, Any] | None:
    """The facts and after facts (None without ``after_type``) a stored form's meta holds —
    ``{**facts.to_json(), "after": after.to_json()}``, as the wire cache writes it — or None
    where it holds none of these types (decode the turn)."""
    try:
        raw = orjson.loads(meta)
        return (TurnFacts.from_json(raw, extra_type),
                after_type.from_json(raw["after"]) if after_type is not None else None)
    except UNREADABLE:
        return None


def with_role(facts: Sequence[TurnFacts], role: str) -> tuple[int, ...]:
    """The indices of the turns of ``role``, in order."""
    return tuple(index for index, found in enumerate(facts) if found.role == role)
