"""The seams every API codec implements: what the core may ask of a codec, and nothing more.

A codec owns one API's wire format: its route profile (what a route of that API reads back), the
request body for a history under a replay plan, the decode of a whole response, the fold of a
stream of ``(event type, payload)`` pairs, the endpoint URL and framing, which authentication the
API expects, the request summary the log shows, and the reading of a rejected request's 4xx body
into a ``Lesson``. Codecs are pure: no I/O, no clock, no globals; the transport sends, the turn
engine retries, the store persists.

The core (``session``, ``turn``, ``replay``, ``transport``) is typed against these protocols only:
adding an API is one codec package, its route data, an emulator personality and one registry line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import orjson

from thoughtline.events import Done, Event
from thoughtline.messages import Message, Origin, ToolSpec
from thoughtline.verdicts import Verdict

if TYPE_CHECKING:
    from thoughtline.config import ProviderConfig
    from thoughtline.replay import ReplayPlan
    from thoughtline.routes.resolve import Route

#: How a response body is framed: Server-Sent Events (the SSE ``event:`` name is the event type),
#: the AWS event stream (``:event-type`` frame header, decoded by botocore), one JSON document, or
#: a JSON array streamed element by element (Gemini without ``alt=sse``).
Framing: TypeAlias = Literal["sse", "aws-eventstream", "json", "json-array"]

#: One stream event as the transport yields it: the event type ("" when the framing has none,
#: e.g. a Chat Completions ``data:`` line) and the parsed JSON payload.
StreamEvent: TypeAlias = tuple[str, Any]

#: The user's must-echo option (``echo`` of a provider in config.toml, a gateway upstream or an
#: imported file): ``auto`` follows the route data, ``always`` / ``never`` override it. Only an
#: API with a must-echo rule (Chat) reads it.
Echo: TypeAlias = Literal["auto", "always", "never"]

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
    canonical parts (or holds counts for the log); its shape is the codec's own.
    """

    __slots__ = ("_body", "_dump", "_raw", "index")

    def __init__(self, *, body: Mapping[str, Any] | None = None, raw: bytes | None = None,
                 index: Any = None, dump: Callable[[], bytes] | None = None) -> None:
        if body is None and raw is None:
            raise ValueError("Encoded needs a body or its raw bytes")
        self._body, self._raw, self.index = body, raw, index
        self._dump = dump  # how to serialize ``body`` faster than dumping it (the same bytes)

    @property
    def body(self) -> Mapping[str, Any]:
        if self._body is None:
            assert self._raw is not None
            self._body = orjson.loads(self._raw)
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


class Profile(Protocol):
    """What a route of one API reads back; a frozen, hashable value from the route data.

    A profile class subclasses this protocol to inherit its defaults (``with_echo``,
    ``effective_json``).
    """

    __slots__ = ()

    def with_echo(self, echo: Echo) -> Profile:
        """This profile under the user's must-echo option, set once when the route is resolved
        (``codecs.registry.resolve``). A profile with no must-echo rule is unchanged."""
        return self

    def narrowed(self, verdicts: Sequence[Verdict]) -> Profile:
        """This profile after what was learned for exactly this route."""
        ...

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """The signature scope: may an opaque value made at ``origin`` be sent to ``target``?"""
        ...

    def public_json(self) -> dict[str, Any]:
        """The fields ``routes --json`` reports for this profile."""
        ...

    def describe(self) -> list[str]:
        """What the route receives, in lines a user understands (``thoughtline routes``)."""
        ...

    def effective_json(self) -> dict[str, Any]:
        """What a narrowed profile sends (``routes --json``'s ``effective_*`` fields); by default
        its ``public_json``."""
        return self.public_json()


class WireCache(Protocol):
    """A codec's per-session memo of stored turns' wire forms (turns are immutable)."""

    def __len__(self) -> int: ...


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

    def new_cache(self) -> WireCache: ...

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: WireCache | None = None) -> Encoded: ...

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        """A whole response. ``seed`` makes synthetic ids unique per request (pure otherwise)."""
        ...

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold: ...

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint: ...

    def auth_scheme(self, provider: ProviderConfig) -> AuthScheme: ...

    def summary(self, encoded: Encoded, cache: WireCache | None = None) -> dict[str, Any]:
        """What the request log records about the reasoning a request carried."""
        ...

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        """Read a rejected request's error body: what to learn before the one retry, if any."""
        ...


class ChecksNative(Protocol):
    """Optional: a codec that can say what is wrong with a stored ``native`` record of one of its
    namespaces (read from an imported file), before encoding it back would trip on it."""

    def native_problem(self, namespace: str, value: Mapping[str, Any]) -> tuple[str, str] | None:
        """``(path below the record, why)`` for a record of ``namespace`` it cannot encode;
        None when the record is fine or the namespace is not this codec's."""
        ...


class StoresWireForms(Protocol):
    """Optional: a codec whose turns' wire forms are stored, so a resume splices bytes.

    ``plan_digest`` names everything a stored form depends on (stable across processes).
    ``wire_forms`` gives the forms of ``history[start:]`` under ``plan``: index -> (the turn's
    bytes as they go into the request, its ``meta``: ``stored.meta_of`` plus the codec's own
    keys). It may also give earlier turns whose form has changed since it was stored, and leave
    out a turn that has no form of its own; the codec's cache splices what it finds and encodes
    the rest.
    """

    def plan_digest(self, plan: ReplayPlan) -> str: ...

    def wire_forms(self, history: Sequence[Message], start: int,
                   plan: ReplayPlan) -> Mapping[int, tuple[bytes, bytes]]: ...

