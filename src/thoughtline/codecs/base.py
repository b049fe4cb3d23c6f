"""The seams every API codec implements: what the core may ask of a codec, and nothing more.

A codec owns one API's wire format: its route profile (what a route of that API reads back), the
request body for a history under a replay plan, the decode of a whole response, the fold of a
stream of ``(event type, payload)`` pairs, the endpoint URL and framing, which authentication the
API expects, the request summary the log shows, and the reading of a rejected request's 4xx body
into a ``Lesson``. Codecs are pure: no I/O, no clock, no globals; the transport sends, the turn
engine retries, the store persists.

The core (``session``, ``turn``, ``replay``, ``transport``) is typed against these protocols only:
adding an API is one codec package, its route data, an emulator personality and one registry line.

The turn encoder (``TurnEncoder``, stored wire forms)
-----------------------------------------------------
An API whose request carries one wire form per turn encodes a request turn by turn, so the core's
one wire cache (``thoughtline.wire.cache``) can store each turn's bytes and splice them into later
requests (a resumed session decodes nothing). A turn's bytes are a pure function of
(the turn, the plan's digest, its *context*): the context is everything else they depend on,
computed from the walk state without decoding the turn (``""`` for Chat and Responses; the loop
state for Bedrock; keep/chain/stale for Anthropic; call names and text mode for Gemini). The walk:

    state = start(plan, spec, facts)               # facts: every turn's ``TurnFacts``
    for index, turn in enumerate(history):
        context = context(state, index, facts[index])
        data, after = encode_turn(turn, plan, context)
        state = advance(state, facts[index], context, after)
    encoded = assemble(Walk(state, turns, facts, afters, contexts, history), spec, plan)

The cache remembers a walk, and stores it with the turns it walked
(``thoughtline.wire.lastwalk``): a resumed session continues it as a live session continues its
last one, so a codec's rules are asked of the turns it encodes and of nothing else; its one duty
to the cache is ``context``.

``TurnFacts`` are context-free (the same under every plan); ``after`` facts are what the walk (and
the request log, and ``classify``) needs to know about the turn as sent. Both are frozen values of
JSON fields, stored with the form under their field names. A turn that, e.g., no longer keeps its
thinking is simply encoded under another context, with its own stored form. ``version`` names the
encoding: bump it and every stored form of that API is simply not found any more. Walk states
compare by value and are stored as the plain JSON values ``state_json`` makes of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    TypeAlias,
    TypeVar,
)

import orjson

from thoughtline.events import Done, Event
from thoughtline.messages import Message, Origin, ToolSpec, freeze
from thoughtline.routes.resolve import Echo as Echo  # re-exported: the codecs' seam
from thoughtline.routes.resolve import Profile as Profile
from thoughtline.routes.resolve import Route
from thoughtline.verdicts import Verdict
from thoughtline.wire.facts import Named as Named  # re-exported: the codecs' seam
from thoughtline.wire.facts import TurnFacts as TurnFacts
from thoughtline.wire.facts import maker as maker
from thoughtline.wire.facts import sharer as sharer
from thoughtline.wire.facts import with_role as with_role

if TYPE_CHECKING:
    from thoughtline.config import ProviderConfig
    from thoughtline.replay import ReplayPlan

#: How a response body is framed: Server-Sent Events (the SSE ``event:`` name is the event type),
#: the AWS event stream (``:event-type`` frame header, decoded by botocore), one JSON document, or
#: a JSON array streamed element by element (Gemini without ``alt=sse``).
Framing: TypeAlias = Literal["sse", "aws-eventstream", "json", "json-array"]

#: One stream event as the transport yields it: the event type ("" when the framing has none,
#: e.g. a Chat Completions ``data:`` line) and the parsed JSON payload.
StreamEvent: TypeAlias = tuple[str, Any]

#: Which credentials a request needs; the transport turns the scheme into an ``httpx.Auth``.
#: ``bearer``/``x-api-key``/``x-goog-api-key``/``api-key`` put the key in that header;
#: ``sigv4:<service>`` signs with botocore's credential chain; ``google-oauth`` and ``entra`` use
#: a bearer token from the key variable (or the platform's library when installed); ``none``.
AuthScheme: TypeAlias = str


@dataclass(frozen=True, kw_only=True, slots=True)
class Endpoint:
    """Where one request goes and how its answer is framed."""

    url: str
    framing: Framing = "json"
    #: Headers the API itself requires (versions, betas), never credentials.
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestSpec:
    """Everything a request needs besides the history and the plan."""

    model: str
    tools: Sequence[ToolSpec] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    stream: bool = False
    #: Per-session API settings (e.g. Anthropic ``prefix_mismatch_behavior``), from ModelConfig.
    settings: Mapping[str, Any] = field(default_factory=dict)


class Encoded:
    """A request body and what the codec needs to read a rejection of it later.

    Give ``body`` (a JSON object) or ``raw`` (its serialized bytes, e.g. spliced from stored wire
    forms); the other is derived on first use. ``body`` shares read-only values with the history
    and the wire cache: serialize it, never edit it. ``index`` maps wire locations back to
    canonical parts (or holds counts for the log); its type is the codec's own (a codec reads it
    back with ``isinstance``).
    """

    __slots__ = ("_body", "_dump", "_raw", "index")

    def __init__(self, *, body: Mapping[str, Any] | None = None, raw: bytes | None = None,
                 index: object = None, dump: Callable[[], bytes] | None = None) -> None:
        if body is None and raw is None:
            raise ValueError("Encoded needs a body or its raw bytes")
        self._body, self._raw, self.index = body, raw, index
        self._dump = dump  # how to serialize ``body`` faster than dumping it (the same bytes)

    @property
    def body(self) -> Mapping[str, Any]:
        if self._body is None:
            assert self._raw is not None
            self._body = freeze(orjson.loads(self._raw))  # read-only, like a built body
        return self._body

    @property
    def raw(self) -> bytes:
        """The exact bytes sent."""
        if self._raw is None:
            self._raw = self._dump() if self._dump is not None else orjson.dumps(self._body)
        return self._raw


@dataclass(frozen=True, kw_only=True, slots=True)
class Lesson:
    """What one rejected request taught: at most one verdict, some fingerprints, new settings.

    ``notice`` is the line shown to the user when the lesson leads to the one retry.
    """

    notice: str
    verdict: Verdict | None = None
    fingerprints: frozenset[str] = frozenset()
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: The id of the fallback wording that matched, for logs ("" when none).
    wording: str = ""


class StreamFold(Protocol):
    """Accumulates one streamed response; ``add_event`` returns the deltas to show."""

    saw_chunk: bool

    @property
    def finished(self) -> bool:
        """True once the provider said the answer is over (a stop reason arrived)."""
        ...

    def add_event(self, event_type: str, payload: Any) -> list[Event]: ...

    def finish(self, *, complete: bool = True) -> Done: ...


class Codec(Protocol):
    """One API's wire format, as the core sees it."""

    api: str
    #: The body fields this API's encode writes itself, as dotted paths (``"messages"``,
    #: ``"output_config.effort"``): a request param naming one is never applied (see
    #: ``codecs.common.merge_params``); the codec decides what a body holds, params only add.
    owned: frozenset[str]

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        """The route for (provider id, base URL, model) from this API's route data (the user's
        must-echo option is the profile's ``with_echo``, applied by ``codecs.registry``)."""
        ...

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: TurnCache | None = None) -> Encoded: ...

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        """A whole response. ``seed`` makes synthetic ids unique per request (pure otherwise)."""
        ...

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold: ...

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint: ...

    def auth_scheme(self, provider: ProviderConfig) -> AuthScheme: ...

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        """What the request log records about the reasoning a request carried."""
        ...

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        """Read a rejected request's error body: what to learn before the one retry, if any."""
        ...

    # --- the optional hooks (no-op defaults in ``CodecBase``) --------------------------------

    #: The API's turn encoder: a request is encoded turn by turn (``TurnEncoder``).
    turns: TurnEncoder[Any, Any]

    def stamp(self, done: Done, encoded: Encoded) -> Done: ...

    def issued(self, done: Done, plan: ReplayPlan) -> Done: ...

    def reported(self, done: Done, encoded: Encoded, plan: ReplayPlan) -> Lesson | None: ...

    def later_contexts(self, state: Any, context: Context) -> tuple[Context, ...]: ...

    def native_problem(self, namespace: str,
                       value: Mapping[str, Any]) -> tuple[str, str] | None: ...


class ChecksNative(Protocol):
    """Optional: a codec that can say what is wrong with a stored ``native`` record of one of its
    namespaces (read from an imported file), before encoding it back would trip on it."""

    def native_problem(self, namespace: str, value: Mapping[str, Any]) -> tuple[str, str] | None:
        """``(path below the record, why)`` for a record of ``namespace`` it cannot encode;
        None when the record is fine or the namespace is not this codec's."""
        ...



# --- the turn encoder (see the module docstring) ------------------------------------------------


#: What a turn's bytes depend on besides the turn and the plan: a string, or a tuple of JSON
#: scalars (stored as its compact JSON). Equal contexts must give equal bytes.
Context: TypeAlias = "str | tuple[str | int | bool | None, ...]"

StateT = TypeVar("StateT")
AfterT = TypeVar("AfterT", bound=Named)
ProfileT = TypeVar("ProfileT", bound=Profile)


def profile_of(plan: ReplayPlan, kind: type[ProfileT]) -> ProfileT:
    """``plan.profile`` as the API's own profile type: a plan is made from a route of the codec's
    own API (``replay.plan``), whose profile that codec's route data made, so a codec may read its
    own fields; ``ReplayPlan.profile`` is typed as the ``Profile`` protocol every API shares."""
    profile = plan.profile
    assert isinstance(profile, kind), f"a {kind.__name__} plan holds {type(profile).__name__}"
    return profile


@dataclass(frozen=True, kw_only=True, slots=True)
class Walk(Generic[StateT, AfterT]):
    """One request's walk over its history, as ``assemble`` gets it (and may keep as its index).

    ``turns[i]`` is turn ``i``'s bytes as ``encode_turn`` made them (``b""``: it adds nothing);
    ``fragments`` are the non-empty ones as ``orjson.Fragment`` values, in order (what a flat
    array splices). ``history`` is the view that was encoded: indexing it may decode a resumed
    history, so read it only on a rare path (a rejection)."""

    state: StateT
    turns: Sequence[bytes]
    fragments: Sequence[Any]
    facts: Sequence[TurnFacts]
    afters: Sequence[AfterT]
    contexts: Sequence[Context]
    history: Sequence[Message]


class TurnEncoder(Protocol[StateT, AfterT]):
    """One API's request, encoded turn by turn (see the module docstring). Pure."""

    #: The wire-form version: bump it when a turn's bytes or its after facts change.
    version: str
    #: True when every context is ``""`` and ``advance`` returns the state it is given: the core
    #: then never calls ``context``/``advance``.
    flat: bool
    #: The ``Named`` type of a turn's after facts.
    after_type: type[AfterT]

    @property
    def extra_type(self) -> type[Named] | None:
        """The ``Named`` type of ``TurnFacts.extra`` (None: no extra facts). Read-only (the core
        only reads it), so an encoder's class attribute may be its own ``Named`` type or None."""
        ...

    def facts(self, message: Message) -> TurnFacts:
        """``TurnFacts.of(message, <the API's extra>)``."""
        ...

    def start(self, plan: ReplayPlan, spec: RequestSpec,
              facts: Sequence[TurnFacts]) -> StateT:
        """The walk state before the first turn of a request over turns with these ``facts``.
        States compare by value: a history that only grew and starts in an equal state
        continues the previous walk (its earlier turns' contexts cannot have changed)."""
        ...

    def context(self, state: StateT, index: int, facts: TurnFacts) -> Context:
        """What turn ``index``'s bytes depend on besides the turn and the plan."""
        ...

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, AfterT]:
        """The turn's bytes as they go into the request, and its after facts."""
        ...

    def advance(self, state: StateT, facts: TurnFacts, context: Context,
                after: AfterT) -> StateT:
        """The state after a turn (a new value: never change ``state``)."""
        ...

    def state_json(self, state: StateT) -> Any:
        """``state`` as a plain JSON value (what the cache stores of a walk)."""
        ...

    def state_of(self, value: Any) -> StateT:
        """The state ``state_json`` made ``value`` of (``TypeError``/``ValueError``/
        ``KeyError`` when it is not one)."""
        ...

    def assemble(self, walk: Walk[StateT, AfterT], spec: RequestSpec,
                 plan: ReplayPlan) -> Encoded:
        """The request: ``Encoded(raw=…, index=…)`` from the turns' bytes. Its index holds what
        ``summary`` and ``classify`` read (typed facts of the request as sent)."""
        ...


def turn_bytes(wire: Any) -> bytes:
    """A turn's wire value serialized, as ``encode_turn`` returns it: ``orjson.dumps`` copied to
    its exact size. orjson hands over the buffer it wrote into, a few KB whatever the output; a
    session keeps one per turn, so kept by the thousand each takes fresh pages, where a copy
    frees the buffer for the next turn (measured here: 3-6 µs per kept call, under 1 µs
    copied; a cold 1,000-turn Anthropic build 58 -> 48 ms)."""
    return b"%b" % orjson.dumps(wire)  # (the cheapest exact copy measured: 150 ns a KB)


def context_key(context: Context) -> str:
    """A context as it is stored (the ``wire_forms.context`` column)."""
    return context if isinstance(context, str) else orjson.dumps(context).decode()


def walk_turns(encoder: TurnEncoder[Any, Any], history: Sequence[Message], plan: ReplayPlan,
               spec: RequestSpec) -> Encoded:
    """The request for ``history`` with every turn encoded here (no cache, nothing stored):
    what the core's wire cache gives too, byte for byte, from whatever it has stored."""
    messages = list(history)
    facts = [encoder.facts(m) for m in messages]
    state = encoder.start(plan, spec, facts)
    turns: list[bytes] = []
    afters: list[Any] = []
    contexts: list[Context] = []
    for index, message in enumerate(messages):
        context = "" if encoder.flat else encoder.context(state, index, facts[index])
        data, after = encoder.encode_turn(message, plan, context)
        if not encoder.flat:
            state = encoder.advance(state, facts[index], context, after)
        turns.append(data)
        afters.append(after)
        contexts.append(context)
    fragments = [orjson.Fragment(data) for data in turns if data]
    return encoder.assemble(Walk(state=state, turns=turns, fragments=fragments, facts=facts,
                                 afters=afters, contexts=contexts, history=history), spec, plan)


class TurnCache(Protocol):
    """The core's wire cache as a codec may be handed it (``thoughtline.wire.cache.WireCache``)."""

    def encode(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
               spec: RequestSpec) -> Encoded: ...


class CodecBase:
    """The optional hooks the core calls on every codec, with their no-op defaults: a codec
    inherits this and overrides what its API needs. The core never probes a codec for a hook."""

    #: The API's turn encoder (every codec has one: the core's wire cache encodes, stores and
    #: splices its turns).
    turns: ClassVar[TurnEncoder[Any, Any]]

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: TurnCache | None = None) -> Encoded:
        """Through the core's wire cache when one is given (``thoughtline.wire.cache``), else
        every turn encoded here."""
        if cache is not None:
            return cache.encode(self, history, plan, spec)  # type: ignore[arg-type]
        return walk_turns(self.turns, history, plan, spec)

    def stamp(self, done: Done, encoded: Encoded) -> Done:
        """The answer with what the codec must know later about the request that produced it
        (e.g. a prefix digest), before it is stored."""
        return done

    def issued(self, done: Done, plan: ReplayPlan) -> Done:
        """The answer with its opaque items stamped with who they were issued to."""
        return done

    def reported(self, done: Done, encoded: Encoded, plan: ReplayPlan) -> Lesson | None:
        """What an accepted request's provider reports teach (learned without a retry)."""
        return None

    def later_contexts(self, state: Any, context: Context) -> tuple[Context, ...]:
        """The other contexts a later request may put a turn in, given its ``context`` now and
        the walk's final ``state`` (e.g. Anthropic: a turn that keeps its thinking loses it once
        it is no longer the last, or once its prefix changes). The core's write-through stores
        those forms too, while the turn is a message in memory, so a resume still splices."""
        return ()

    def native_problem(self, namespace: str, value: Mapping[str, Any]) -> tuple[str, str] | None:
        """``ChecksNative``: what is wrong with a stored native record of this codec's."""
        return None
