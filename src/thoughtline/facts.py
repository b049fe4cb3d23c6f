"""What the core reads about a turn without decoding it: its ``TurnFacts`` (role, tool calls and
results, whether it opens a tool loop, the API's own extras) and the ``Named`` values an API
stores beside a turn's wire form (its extras, its "after" facts).

Neutral: no wire format, no codec. ``codecs.base`` (the turn encoder's seam) re-exports both; the
core's history views (``stored``, ``replay``) read them from here, so neither imports a codec.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, get_args

import orjson

from thoughtline.messages import Message, Role, ToolCall, ToolResult


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
        return _reader(kind)(raw)

    @classmethod
    def of_fields(cls, *values: Any) -> Any:
        """The value with these field values, in field order, set without the frozen
        ``__init__``'s keyword call (a resume builds one per stored turn; the caller gives
        every field, already of its type)."""
        kind: type = cls  # (as ``type``: see ``from_json``)
        return _maker(kind)(*values)


_REQUIRED = object()
_tuple = tuple.__new__  # a named tuple from its values in order, in one call


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, Any], ...]:
    """A ``Named`` type's (field name, default) pairs in order (read once per type: a resume
    reads every stored turn's after facts)."""
    out = []
    for f in dataclasses.fields(cls):
        default: Any = f.default
        if f.default is dataclasses.MISSING:
            factory = f.default_factory
            default = _REQUIRED if factory is dataclasses.MISSING else factory()
        out.append((f.name, default))
    return tuple(out)


def _slots(cls: type) -> dict[str, Any]:
    """What a generated function of ``cls`` reads: the bare constructor and each field's slot
    setter (``s0``, ``s1``, … in field order)."""
    names = [f.name for f in dataclasses.fields(cls)]
    return {"new": object.__new__, "cls": cls,
            **{f"s{i}": cls.__dict__[name].__set__ for i, name in enumerate(names)}}


def _compiled(source: str, env: dict[str, Any], name: str) -> Callable[..., Any]:
    exec(compile(source, f"<thoughtline.facts {name}>", "exec"), env)
    return env[name]


@functools.cache
def _maker(cls: type) -> Callable[..., Any]:
    """``cls``'s value from its field values in order, one slot set per field: made once per
    type, as ``dataclasses`` makes an ``__init__`` (a resume builds one value per stored turn,
    and a loop over the fields costs more than the setting)."""
    count = len(dataclasses.fields(cls))
    args = ", ".join(f"a{i}" for i in range(count))
    body = "".join(f"    s{i}(obj, a{i})\n" for i in range(count))
    source = f"def make({args}):\n    obj = new(cls)\n{body}    return obj\n"
    return _compiled(source, _slots(cls), "make")


def maker(cls: type) -> Callable[..., Any]:
    """A frozen slotted dataclass's value from its field values in order, set without the frozen
    ``__init__``'s keyword call: ``Named.of_fields`` for any such class (a walk state that a
    cold request makes once per turn)."""
    return _maker(cls)


def sharer(cls: type) -> Callable[..., Any]:
    """``maker(cls)`` that makes one value per distinct field values (frozen, so shared; the
    512 last used are kept): a history's turns repeat a handful of after facts, and a cold
    request makes one per turn. Every field is given, and hashable."""
    return functools.lru_cache(maxsize=512)(_maker(cls))


@functools.cache
def _reader(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """``cls.from_json`` for a ``Named`` type, made once per type: each field read by name with
    its default, a list read back as a tuple, a missing required field a ``TypeError``; an empty
    object is the shared all-defaults value (most turns' after facts)."""
    env = {**_slots(cls), "default": _default, "required": _REQUIRED, "tuples": _flat_tuple,
           "missing": TypeError}
    lines = ["def read(raw):", "    if not raw:", "        return default(cls)",
             "    get = raw.get", "    obj = new(cls)"]
    for i, (name, value) in enumerate(_layout(cls)):
        env[f"d{i}"] = value
        lines.append(f"    v = get({name!r}, d{i})")
        if value is _REQUIRED:
            lines += ["    if v is required:",
                      f"        raise missing({f'{cls.__name__}: {name} is missing'!r})"]
        lines.append(f"    s{i}(obj, tuples(v) if type(v) is list else v)")
    lines.append("    return obj")
    return _compiled("\n".join(lines) + "\n", env, "read")


@functools.cache
def _default(cls: type) -> Any:
    """A ``Named`` type's value with every field at its default (frozen: shared)."""
    return cls()


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _flat_tuple(value: list[Any]) -> tuple[Any, ...]:
    """A JSON list read back as a tuple: at C speed when it holds no list (most do)."""
    out = tuple(value)
    return out if list not in map(type, out) else _tuples(value)


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


_ROLE = operator.itemgetter(0)  # ``TurnFacts.role``, read as the tuple's first item
_LEAD = '{"role":"'  # how ``TurnFacts.to_json`` serialized compactly begins


_HEADS: dict[str, tuple[str, str]] = {}  # ``_heads`` of the roles read so far


def _heads(role: str) -> tuple[str, str]:
    """How a ``TurnFacts.to_json`` text of ``role`` begins (its role closed by "," or "}"):
    looked up, not rebuilt, once per distinct stored meta of a resume."""
    heads = _HEADS.get(role)
    if heads is None:
        heads = f'{_LEAD}{role}",', f'{_LEAD}{role}"}}'
        if len(_HEADS) < 64:  # (the roles a meta may name are few; a stray one is not kept)
            _HEADS[role] = heads
    return heads


class Pending(Sequence[TurnFacts]):
    """Turns' facts some of which are read only when first used (a resumed history's stored
    turns: most requests never need them), each from a ``to_json`` text (``texts``, "" for
    the turns whose facts are at hand): ``with_role`` finds a role's turns without reading
    them, from how their texts begin (``leads_with``)."""

    __slots__ = ()

    @property
    def texts(self) -> list[str]:
        raise NotImplementedError

    def indices_of(self, role: str) -> tuple[int, ...]:
        texts = self.texts
        found = positions(list(map(str.startswith, texts, itertools.repeat(_heads(role)))),
                          True)
        # (a text that begins with no role, and a turn whose facts are at hand: read)
        others = positions(list(map(str.startswith, texts, itertools.repeat(_LEAD))), False)
        found += [index for index in others if self[index].role == role]
        return tuple(sorted(found))


def leads_with(text: str, role: str) -> bool | None:
    """Does ``text``, a ``TurnFacts.to_json`` object serialized compactly (its role first), name
    ``role``? None: it does not begin with a plain role (parse it to know). A reader of such a
    text checks that its role is the one it begins with (``names_its_role``), so the two agree."""
    return text.startswith(_heads(role)) if text.startswith(_LEAD) else None


def names_its_role(text: str, facts: TurnFacts) -> bool:
    """Is ``facts.role``, read from ``text``, the role ``text`` begins with, if it begins with
    one (``leads_with``)? A text naming a role twice is not one ``to_json`` wrote."""
    role = facts[0]  # (its heads read from the cache here: once per distinct stored meta)
    heads = _HEADS.get(role) or _heads(role)
    return text.startswith(heads) or not text.startswith(_LEAD)


#: What reading a stored meta that is not one the wire cache wrote may raise (the turn is then
#: decoded, or encoded again, instead).
UNREADABLE = (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError)


def read_meta(meta: str, extra_type: type[Named] | None = None,
              raw_afters: dict[str, Any] | None = None) -> TurnFacts | None:
    """The facts a stored form's meta holds — ``{**facts.to_json(), "after": …}``, as the wire
    cache writes it — its role the one it begins with (``facts.Pending``); None: it holds none
    (decode the turn). Its after facts, parsed with them, go to ``raw_afters``. In one frame: a
    resume reads one per distinct meta, and most differ by their call ids."""
    try:
        raw = orjson.loads(meta)
        found = TurnFacts.from_json(raw, extra_type)
        after = raw["after"]
    except UNREADABLE:
        return None
    if not names_its_role(meta, found):
        return None
    if raw_afters is not None:
        raw_afters[meta] = after
    return found


#: How a stored meta of an assistant turn with calls begins (``to_json``: its role, then calls).
_MAKES = f'{_LEAD}assistant","calls":'


def calls_made(meta: str) -> tuple[list[str], dict[str, Any]] | None:
    """The call ids and the raw after facts of a complete assistant turn that makes calls, read
    from its stored meta as ``read_meta`` reads it, without building its ``TurnFacts``: a
    resumed walk reads one per such turn. None where the meta is not one, or where this cannot
    tell (then ``read_meta`` it)."""
    if not meta.startswith(_MAKES):  # (its role is the one it begins with: ``names_its_role``)
        return None
    try:
        raw = orjson.loads(meta)
    except orjson.JSONDecodeError:
        return None
    calls, after = raw.get("calls"), raw.get("after")
    if (raw.get("role") != "assistant" or raw.get("incomplete") or type(calls) is not list
            or not calls or type(after) is not dict):
        return None
    if len(calls) == 1:  # (most model turns make one call)
        return (calls, after) if type(calls[0]) is str else None
    return (calls, after) if all(type(call) is str for call in calls) else None


#: How a ``to_json`` text of a turn with no calls and no results begins: its role (one a message
#: can have), then the end, or a key that ``to_json`` writes after those two, or the wire
#: cache's ``"after"`` (``TurnFacts`` fields are written in order, empty ones left out).
_QUIET = tuple(f'{_LEAD}{role}"{rest}' for role in get_args(Role)
               for rest in ("}", ',"incomplete":', ',"opens":', ',"extra":', ',"after":'))


def names_no_calls(text: str) -> bool:
    """Does ``text``, a ``TurnFacts.to_json`` object serialized compactly (as the wire cache
    stores it), name no tool calls and no tool results? Read without parsing it, at C speed: a
    resumed walk settles such turns of a long history without reading their facts. False
    whenever its beginning cannot tell (then parse it). It trusts the rest to be as the wire
    cache wrote it, fields in order: a stored meta's digest is checked before it is read."""
    return text.startswith(_QUIET)


def with_role(facts: Sequence[TurnFacts], role: str) -> tuple[int, ...]:
    """The indices of the turns of ``role``, in order: found at C speed (every request's walk
    looks for its system turns among all its turns' facts), or without reading the facts not
    read yet (``Pending``)."""
    if isinstance(facts, Pending):
        return facts.indices_of(role)
    return tuple(positions(list(map(_ROLE, facts)), role))


def positions(items: list[Any], value: object) -> list[int]:
    """The indices of ``items`` equal to ``value``, in order, found at C speed."""
    found: list[int] = []
    at = -1
    while True:
        try:
            at = items.index(value, at + 1)
        except ValueError:
            return found
        found.append(at)
