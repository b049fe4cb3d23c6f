"""The stateless turn engine: build → send → fold → classify → at most one retry.

Given a history, the pending turn and a model config, the engine builds the request through the
route's codec, sends it through a ``Transport``, folds the answer, and on a rejection asks the
codec what to learn; when the lesson changes the request it retries exactly once. It owns no
store: what it learned and what it produced go to a ``TurnSink`` (a ``Session`` stores them; the
gateway stores and indexes them). It writes one request-log record per HTTP request sent, also when
a stream breaks or is cancelled. It knows no wire field names and no API: the codec does.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import threading
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from thoughtline import platforms, replay, tracing
from thoughtline.codecs import registry, shape
from thoughtline.codecs.base import Codec, Encoded, Lesson, RequestSpec
from thoughtline.config import ProviderConfig
from thoughtline.errors import ProtocolError, ProviderError, StreamInterrupted, UsageError
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, Origin
from thoughtline.modelconfig import ModelConfig
from thoughtline.requestlog import RecordWriter
from thoughtline.routes.resolve import Route, is_local_endpoint
from thoughtline.verdicts import Verdict
from thoughtline.wire.cache import WireCache, encode
from thoughtline.wire.stored import StoredHistory

if TYPE_CHECKING:
    from thoughtline.transport import Target
    from thoughtline.transport.http import Transport


def require_key(p: ProviderConfig, codec: Codec, host: str) -> None:
    """A ``UsageError`` naming the key variable when ``p`` needs a key there and it is unset
    (a loopback or private host may go without one)."""
    from thoughtline.transport.auth import needs_key

    if p.api_key() is None and p.key_env and needs_key(codec.auth_scheme(p)) \
            and not is_local_endpoint(host):
        raise UsageError(f"{p.key_env} is not set: export it (export {p.key_env}=...), or pass "
                         f"--api-key-env VAR naming the variable that holds {p.id}'s key "
                         "(api_key_env in config.toml)")


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnOptions:
    stream: bool = True
    keep_partial: bool = True  # store an interrupted answer marked incomplete (else drop it)
    #: At most this many requests (1 or 2): the second only when the first's 4xx taught
    #: something. A turn sent again after a compaction gets what its first sending left over.
    requests: int = 2
    #: Told the upstream's request id of each response (the transport's ``on_request_id``).
    on_request_id: Callable[[str], None] | None = None
    #: Told the seconds of each wait on the upstream (the transport's ``on_upstream``).
    on_upstream: Callable[[float], None] | None = None
    #: The span the turn's upstream requests are traced under (a gateway request's); None: the
    #: current OpenTelemetry context, if any (``thoughtline.tracing``).
    trace: object | None = None
    #: Build each request in a worker thread (a server's choice for a large history: its
    #: encode would otherwise hold the event loop, and every other request on it, that long).
    offload: bool = False


class TurnSink(Protocol):
    """Where a turn's results go. Each call may raise; the engine logs the true outcome."""

    def learned(self, lesson: Lesson) -> None:
        """Persist what a rejection taught (before the one retry is sent)."""
        ...

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        """Store the completed turn (the pending messages and the answer) atomically."""
        ...

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        """The answer did not complete: keep what should be kept (``partial`` may be None)."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnInput:
    """Everything one turn needs: who to talk to, what was learned, what to send."""

    codec: Codec
    provider: ProviderConfig
    config: ModelConfig
    history: Sequence[Message]
    pending: Sequence[Message]
    #: Verdicts learned elsewhere for the same (provider, host, model): the global ledger.
    ledger: Sequence[Verdict] = ()
    cache: WireCache | None = None
    session: str = ""  # for the request log
    #: Why a request that is not a turn of the session was sent (the request log's ``purpose``:
    #: "compaction" for a summary); "" for a turn.
    purpose: str = ""

    @property
    def route(self) -> Route:
        return registry.route_for(self.codec, self.provider)


@dataclass(kw_only=True, slots=True)
class _Attempt:
    """One HTTP request of a turn, as the request log records it."""

    route: Route
    encoded: Encoded
    attempt: int
    stream: bool
    learned: tuple[Lesson, ...]
    started: float
    retries_before: int
    status: int | None = None
    outcome: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Its spans (None: tracing is off), and what ended it when it failed (``error.type``).
    span: tracing.AttemptSpan | None = None
    error: str = ""
    answer: Message | None = None
    #: The request log's summary of ``encoded``, made when it was built (None: made on use).
    summary: dict[str, Any] | None = None

    def finish(self, status: int | None, outcome: str) -> None:
        self.status, self.outcome = status, outcome


class TurnEngine:
    """Runs turns over one transport; stateless between turns."""

    def __init__(self, transport: Transport, log: RecordWriter | None = None, *,
                 tracer: tracing.Tracer | tracing.Process | None = tracing.PROCESS) -> None:
        self.transport = transport
        self.log = log
        #: Where its spans go: the process's tracer unless given one (None: no spans).
        self._tracer = tracer

    @property
    def tracer(self) -> tracing.Tracer | None:
        if isinstance(self._tracer, tracing.Process):
            self._tracer = tracing.default()  # the environment read on the first turn
        return self._tracer

    # --- building -----------------------------------------------------------------------------

    @staticmethod
    def plan(turn: TurnInput, config: ModelConfig | None = None) -> replay.ReplayPlan:
        config = config or turn.config
        route = turn.route
        return replay.plan(route, [*config.verdicts, *turn.ledger],
                           fingerprints=config.fingerprints,
                           settings=config.api_settings(route.api),
                           account=turn.provider.project, region=_region(turn.provider),
                           issuer=issuer_of(turn.provider))

    @staticmethod
    def spec(turn: TurnInput, *, stream: bool, config: ModelConfig | None = None) -> RequestSpec:
        """Everything the turn's request needs besides the history and the plan."""
        config = config or turn.config
        return RequestSpec(model=turn.provider.model, tools=config.tools, params=config.params,
                           stream=stream, settings=config.api_settings(turn.codec.api))

    @classmethod
    def build(cls, turn: TurnInput, *, stream: bool, config: ModelConfig | None = None,
              ) -> tuple[Encoded, replay.ReplayPlan]:
        """The request the turn would send now (history + pending), and its plan."""
        config = config or turn.config
        plan = cls.plan(turn, config)
        spec = cls.spec(turn, stream=stream, config=config)
        history = replay.answered(turn.history, turn.pending)
        return encode(turn.codec, history, plan, spec, turn.cache), plan

    @staticmethod
    def target(turn: TurnInput, route: Route, *, stream: bool) -> Target:
        from thoughtline.transport import Target
        from thoughtline.transport.auth import auth_for

        p, codec = turn.provider, turn.codec
        endpoint = codec.endpoint(p, p.model, stream=stream)
        scheme = codec.auth_scheme(p)
        key = p.api_key()
        require_key(p, codec, route.host)
        # The codec's API headers win: it already merged the configured ones it owns (e.g. a
        # client's anthropic-beta list plus the betas the model needs).
        return Target(url=endpoint.url, headers={**(p.headers or {}), **endpoint.headers},
                      route=route.row, provider=p.id, auth=auth_for(scheme, key,
                                                                   region=_region(p)),
                      framing=endpoint.framing, secrets=(key,) if key else ())

    # --- running ------------------------------------------------------------------------------

    def run(self, turn: TurnInput, sink: TurnSink,
            options: TurnOptions | None = None) -> AsyncGenerator[Event, None]:
        """Send the turn; yield reasoning/text deltas, notices, and finally ``Done``.

        At most two requests: the second only when the first's 4xx taught something that
        changes the request. A lesson from the retry's own rejection is kept, never retried.
        Traced outside a gateway request (no ``options.trace``), the turn is a span of its own.
        """
        options = options or TurnOptions()
        tracer = self.tracer
        if tracer is None or options.trace is not None:
            return self._requests(turn, sink, options)
        return self._traced(tracer, turn, sink, options)

    async def _traced(self, tracer: tracing.Tracer, turn: TurnInput, sink: TurnSink,
                      options: TurnOptions) -> AsyncGenerator[Event, None]:
        """``run`` as a span of its own, its requests' spans the children."""
        span = tracing.TurnSpan(tracer, provider=turn.route.provider, model=turn.provider.model,
                                session=turn.session, purpose=turn.purpose)
        try:
            async with contextlib.aclosing(self._requests(
                    turn, sink, replace(options, trace=span.span))) as events:
                async for event in events:
                    yield event
        except BaseException as exc:
            outcome, error = _failure(exc)
            span.finished(outcome, error=error)
            raise
        span.finished("ok")

    async def _requests(self, turn: TurnInput, sink: TurnSink,
                        options: TurnOptions) -> AsyncGenerator[Event, None]:
        """``run`` without a span of its own: the turn's one or two requests."""
        learned: list[Lesson] = []
        config = turn.config
        for attempt in range(1, max(1, min(options.requests, 2)) + 1):
            route = turn.route
            encoded, plan, summary = await _built(
                turn, options, config, summarize=self.log is not None or self.tracer is not None)
            target = self.target(turn, route, stream=options.stream)
            if options.on_request_id is not None:
                target = replace(target, on_request_id=options.on_request_id)
            if options.on_upstream is not None:
                target = replace(target, on_upstream=options.on_upstream)
            record = _Attempt(route=route, encoded=encoded, attempt=attempt,
                              stream=options.stream, learned=tuple(learned),
                              started=time.monotonic(),
                              retries_before=self.transport.retries,
                              span=self._span(turn, route, options.trace, attempt),
                              summary=summary)
            if record.span is not None:
                target = replace(target, on_retry=record.span.retried)
            try:
                async for event in self._exchange(turn, route, target, encoded, sink, options,
                                                  record, plan):
                    yield event
                return
            except ProviderError as error:
                record.finish(error.status, "error")
                record.error = str(error.status) if error.status else type(error).__name__
                lesson = self._lesson(turn, error, encoded, plan, config, options)
                if lesson is None or attempt >= options.requests:
                    if lesson is not None:
                        sink.learned(lesson)
                    error.attempts = attempt
                    raise
            except ProtocolError as error:
                record.finish(200, "interrupted")
                record.error = type(error).__name__
                raise
            except (_cancelled(), GeneratorExit):
                record.finish(record.status, record.outcome or "cancelled")
                record.error = record.error or ("" if record.outcome == "ok" else "cancelled")
                raise
            finally:
                self._log(turn, record)
            learned.append(lesson)
            config = config.after(lesson)
            sink.learned(lesson)
            yield Notice(lesson.notice)

    def _lesson(self, turn: TurnInput, error: ProviderError, encoded: Encoded,
                plan: replay.ReplayPlan, config: ModelConfig,
                options: TurnOptions) -> Lesson | None:
        if error.status is not None and not 400 <= error.status < 500:
            return None
        lesson = turn.codec.classify(error.status, error.body, encoded, plan)
        if lesson is None:
            return None
        retry, _ = self.build(turn, stream=options.stream, config=config.after(lesson))
        if retry.raw == encoded.raw:
            # E.g. a pad demanded while every assistant turn already carries it: the retry
            # would be the same request, so the error stands.
            return None
        return lesson

    async def _exchange(self, turn: TurnInput, route: Route, target: Target, encoded: Encoded,
                        sink: TurnSink, options: TurnOptions, record: _Attempt,
                        plan: replay.ReplayPlan) -> AsyncIterator[Event]:
        codec = turn.codec
        origin = Origin(api=codec.api, provider=route.provider, host=route.host,
                        model=turn.provider.model, region=_region(turn.provider),
                        account=turn.provider.project)  # where signatures are bound (Vertex)
        seed = uuid.uuid4().hex
        raw = encoded.raw
        if not options.stream:
            try:
                body = await self.transport.post_json(target, raw)
            except ProtocolError as exc:
                raise _routed(exc, route) from None
            with _reading(route, "response"):
                done = codec.decode_response(body, origin, seed=seed)
            done, lesson = _accepted(codec, done, encoded, plan, route)
            record.finish(200, "ok")
            self._store(sink, turn.pending, done, record)
            for notice in _learned(lesson, sink):
                yield notice
            yield done
            return
        fold = codec.new_fold(origin, seed=seed)
        finished = False
        event_type = ""
        try:
            try:
                async for event_type, payload in self.transport.stream_events(target, raw):
                    for event in fold.add_event(event_type, payload):
                        yield event
                if not fold.finished:
                    raise StreamInterrupted("the stream ended before the provider finished "
                                            "the answer")
                event_type = "(end)"
                done = fold.finish(complete=True)
            except _MALFORMED as exc:
                raise _malformed(route, f"stream event {event_type or '(untyped)'!r}",
                                 exc) from exc
            except ProtocolError as exc:
                raise _routed(exc, route) from None
            done, lesson = _accepted(codec, done, encoded, plan, route)
            record.finish(200, "ok")
            finished = True  # from here on the answer is whole: never stored as partial
            self._store(sink, turn.pending, done, record)
            for notice in _learned(lesson, sink):
                yield notice
            yield done
        finally:
            if not finished:
                sink.interrupted(turn.pending,
                                 _partial(fold, route) if options.keep_partial else None)

    @staticmethod
    def _store(sink: TurnSink, pending: Sequence[Message], done: Done, record: _Attempt) -> None:
        usage = done.usage
        record.extra["usage"] = {"input": usage.prompt_size, "output": usage.output_tokens,
                                 "reasoning": usage.reasoning_tokens,
                                 "cache_read": usage.cached_tokens}
        answered = done.message.origin
        if answered is not None and answered.model:
            record.extra["response_model"] = answered.model
        if done.finish:
            record.extra["finish"] = done.finish
        record.answer = done.message
        try:
            sink.finished(pending, done)
        except BaseException:
            record.finish(200, "unsaved")
            record.error = "unsaved"
            raise
        if done.reports:
            record.extra["reports"] = list(done.reports)
        if done.usage.prompt_size > 0:  # the whole prompt (cached tokens too), for the chart
            record.extra["prompt_tokens"] = done.usage.prompt_size

    def _span(self, turn: TurnInput, route: Route, parent: object | None,
              attempt: int) -> tracing.AttemptSpan | None:
        tracer = self.tracer
        if tracer is None:
            return None
        return tracing.AttemptSpan(tracer, parent, provider=route.provider,
                                   model=turn.provider.model, host=route.host,
                                   extra={"thoughtline.attempt": attempt})

    def _log(self, turn: TurnInput, record: _Attempt) -> None:
        if self.log is None and record.span is None:
            return
        entry = self._entry(turn, record)
        if self.log is not None:
            self.log.write(entry)
        if record.span is not None:
            record.span.finished(entry, error=record.error,
                                 sent=(*turn.history, *turn.pending), answer=record.answer)

    def _entry(self, turn: TurnInput, record: _Attempt) -> dict[str, Any]:
        """The attempt's request-log record."""
        route = record.route
        summary = record.summary if record.summary is not None else _summary(turn,
                                                                              record.encoded)
        # (only on a decoded history: a request spliced from stored forms decodes nothing)
        history = turn.history
        foreign = (replay.foreign_compactions(history, route)
                   if not isinstance(history, StoredHistory) or history.decoded else [])
        if foreign:  # left out, never silently: our summary text stood in for each
            summary = {**summary, "compaction_left_out": {
                "count": len(foreign), "made_by": sorted(set(foreign)),
                "reason": "a native compaction is readable only by the provider that made it; "
                          "the checkpoint's summary text was sent instead"}}
        return {
            "session": turn.session, "route": route.row, "api": route.api,
            "provider": route.provider, "host": route.host, "model": route.model,
            "status": record.status, "outcome": record.outcome or "cancelled",
            "attempt": record.attempt, "stream": record.stream,
            "duration_ms": round((time.monotonic() - record.started) * 1000, 1),
            "retries": self.transport.retries - record.retries_before, **summary,
            "verdicts": [lesson.verdict.to_json() for lesson in record.learned
                         if lesson.verdict is not None],
            **({"repairs": sorted(f for lesson in record.learned for f in lesson.fingerprints)}
               if any(lesson.fingerprints for lesson in record.learned) else {}),
            **({"purpose": turn.purpose} if turn.purpose else {}),
            **record.extra,
        }


#: What a decoder or fold raises when a reply has the wrong shape somewhere the codec did not
#: check: each becomes a ``ProtocolError`` naming the route (the safety net under the codecs'
#: own field checks, so a malformed reply never escapes as anything else).
_MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError,
              OverflowError)


@contextlib.contextmanager
def _reading(route: Route, what: str) -> Iterator[None]:
    try:
        yield
    except _MALFORMED as exc:
        raise _malformed(route, what, exc) from exc
    except ProtocolError as exc:
        raise _routed(exc, route) from None


def _malformed(route: Route, what: str, exc: BaseException) -> ProtocolError:
    if isinstance(exc, RecursionError):
        detail = shape.too_deep("a value")
    else:
        detail = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
    return _routed(ProtocolError(f"the {what} is malformed ({detail})"), route)


def _routed(exc: ProtocolError, route: Route) -> ProtocolError:
    if not exc.route:
        exc.route = f"{route.provider}/{route.row}"
    return exc


def _accepted(codec: Codec, done: Done, encoded: Encoded, plan: replay.ReplayPlan,
              route: Route) -> tuple[Done, Lesson | None]:
    """The answer as it will be stored, and what its reports teach, or ``ProtocolError``: all of
    the reply is read before anything is stored, so a broken one stores nothing."""
    with _reading(route, "answer"):
        shape.check_answer(done)
        done = _issued(codec, _stamped(codec, done, encoded), plan)
        return done, _reported(codec, done, encoded, plan)


def _partial(fold: Any, route: Route) -> Message | None:
    """What an interrupted stream folded so far, or None (also when that is malformed)."""
    if not fold.saw_chunk:
        return None
    try:
        with _reading(route, "partial answer"):
            folded = fold.finish(complete=False)
            shape.check_answer(folded)
    except ProtocolError:
        return None
    return folded.message if folded.message.parts else None


def _stamped(codec: Codec, done: Done, encoded: Encoded) -> Done:
    """The codec hook ``stamp``: the answer with what the codec must know later about the
    request that produced it (e.g. a prefix digest), before storing."""
    return codec.stamp(done, encoded)


def _issued(codec: Codec, done: Done, plan: replay.ReplayPlan) -> Done:
    """The codec hook ``issued``: the answer with its encrypted items stamped with who they
    were issued to (``plan.issuer``), before storing."""
    return codec.issued(done, plan) if plan.issuer else done


def issuer_of(provider: ProviderConfig) -> str:
    """Who a provider issues opaque values to, as far as thoughtline knows: the configured
    account/project, else a digest of the API key (a key identity, never the key: 64 bits of a
    domain-separated SHA-256); "" with neither."""
    if provider.project:
        return provider.project
    key = provider.api_key()
    if not key:
        return ""
    return "key-" + hashlib.sha256(b"thoughtline issuer\0" + key.encode()).hexdigest()[:16]


def _reported(codec: Codec, done: Done, encoded: Encoded,
              plan: replay.ReplayPlan) -> Lesson | None:
    """The codec hook ``reported``: what an accepted request's provider reports teach (e.g.
    stored blocks the provider dropped, never to be sent again). Learned without a retry: the
    answer already arrived."""
    return codec.reported(done, encoded, plan) if done.reports else None


def _learned(lesson: Lesson | None, sink: TurnSink) -> list[Notice]:
    if lesson is None:
        return []
    sink.learned(lesson)
    return [Notice(lesson.notice)]


def _failure(exc: BaseException) -> tuple[str, str]:
    """A failed turn's outcome and ``error.type``, as its last attempt's record names them."""
    if isinstance(exc, ProviderError):
        return "error", str(exc.status) if exc.status else type(exc).__name__
    if isinstance(exc, ProtocolError):
        return "interrupted", type(exc).__name__
    if isinstance(exc, _cancelled() | GeneratorExit):
        return "cancelled", "cancelled"
    return "error", type(exc).__name__


def _cancelled() -> type[BaseException]:
    # asyncio is imported when a turn is actually running (never at start-up).
    import asyncio

    return asyncio.CancelledError


def _region(provider: ProviderConfig) -> str:
    return platforms.aws_region(provider)  # the one region rule (thoughtline.platforms)


#: Wire caches being built into by a worker thread now (``_built``), and the lock those take.
_BUILDING: collections.Counter[int] = collections.Counter()
_BUILD_LOCK = threading.Lock()


async def _built(turn: TurnInput, options: TurnOptions, config: ModelConfig, *,
                 summarize: bool) -> tuple[Encoded, replay.ReplayPlan, dict[str, Any] | None]:
    """``TurnEngine.build`` and (``summarize``) the request log's summary of it — in a worker
    thread when ``options.offload`` asks, or when a turn of the same wire cache is being built
    in one (a cache is never built into by two threads at once)."""
    def build() -> tuple[Encoded, replay.ReplayPlan, dict[str, Any] | None]:
        encoded, plan = TurnEngine.build(turn, stream=options.stream, config=config)
        return encoded, plan, _summary(turn, encoded) if summarize else None

    key = id(turn.cache) if turn.cache is not None else -1
    if not options.offload and key not in _BUILDING:
        return build()

    def locked() -> tuple[Encoded, replay.ReplayPlan, dict[str, Any] | None]:
        with _BUILD_LOCK:
            return build()

    _BUILDING[key] += 1  # on the loop, before the thread starts: no inline build slips in
    try:  # (the thread is waited for even when the request is cancelled meanwhile)
        return await anyio.to_thread.run_sync(locked)
    finally:
        _BUILDING[key] -= 1
        if not _BUILDING[key]:
            del _BUILDING[key]


def _summary(turn: TurnInput, encoded: Encoded) -> dict[str, Any]:
    """The request log's summary of the request's wire form (its codec's)."""
    return turn.codec.summary(encoded)
