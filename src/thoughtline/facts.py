"""What the core reads about a turn without decoding it: its ``TurnFacts`` (role, tool calls and
results, whether it opens a tool loop, the API's own extras) and the ``Named`` values an API
stores beside a turn's wire form (its extras, its "after" facts).

Neutral: no wire format, no codec. ``codecs.base`` (the turn encoder's seam) re-exports both; the
core's history views (``stored``, ``replay``) read them from here, so neither imports a codec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thoughtline.messages import Message, ToolResult


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
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: _tuples(v) for k, v in raw.items() if k in names})


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
        results = tuple(p.call_id for p in message.parts if isinstance(p, ToolResult))
        return cls(role=message.role, calls=tuple(c.id for c in message.tool_calls),
                   results=results, incomplete=message.incomplete,
                   opens=message.role == "user" and len(results) < len(message.parts),
                   extra=extra)

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
        extra = raw.get("extra")
        role = raw["role"]
        if not isinstance(role, str):
            raise TypeError("a turn's role is a string")
        return cls(role=role, calls=tuple(map(str, raw.get("calls", ()))),
                   results=tuple(map(str, raw.get("results", ()))),
                   incomplete=bool(raw.get("incomplete")), opens=bool(raw.get("opens")),
                   extra=extra_type.from_json(extra) if extra_type and extra is not None
                   else None)
