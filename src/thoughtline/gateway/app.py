"""The gateway's ASGI app: every client face (``faces``), ``GET /v1/models``, ``GET /healthz``.

Owns the HTTP side of a request, the same for every face: token tenancy (401), the body limit
(413), JSON and request validation (400), model → upstream or alias (404), the
``X-Thoughtline-Session`` header both ways, verifying the values the gateway minted that a client
echoed and minting the answer's own, mapping upstream failures to the face's error shape with
the upstream's status, streamed and whole answers with the gateway hint headers (``hints``),
cancelling the upstream request when the client leaves, and one access-log line per request.
``GET /v1/models`` is in the Anthropic shape for an Anthropic client (Claude Code), else in the
OpenAI shape; ``HEAD /`` is 200. It has no wire logic: each face's client wire is its codec's
(``faces``, and the model list's), the upstream's is its codec behind the ``TurnEngine``, storage
is ``conversation``/``storage``; a request's errors, log record and body reading are ``request``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from thoughtline import tracing
from thoughtline.codecs.anthropic import client as messages_client
from thoughtline.codecs.face import ClientRequest, ClientRequestError
from thoughtline.codecs.openai_chat import client
from thoughtline.errors import (
    ProtocolError,
    ProviderError,
    StoreError,
    ThoughtlineError,
    UsageError,
)
from thoughtline.estimate import Estimator
from thoughtline.events import Done
from thoughtline.gateway import compaction, mint
from thoughtline.gateway.accesslog import AccessLog
from thoughtline.gateway.config import GatewayConfig, upstream_models
from thoughtline.gateway.conversation import Conversations, GatewaySink, Prepared, UnknownSession
from thoughtline.gateway.faces import (
    CHAT,
    FACES,
    MESSAGES,
    NO_TOOLS,
    RESPONSES,
    Face,
    MessagesFace,
    Reply,
    all_paths,
    both_ways,
    token_of,
)
from thoughtline.gateway.front import Front
from thoughtline.gateway.hints import Hints
from thoughtline.gateway.metrics import CONTENT_TYPE, Metrics, RequestLogTee
from thoughtline.gateway.mint import KEY_NAME, Minter
from thoughtline.gateway.offload import HEAVY_BYTES, off_loop, settle
from thoughtline.gateway.overflow import recovering
from thoughtline.gateway.request import (
    HttpError,
    Record,
    TooLarge,
    client_request,
    closed,
    json_response,
    read_body,
    store_down,
    unauthorized,
    unauthorized_error,
)
from thoughtline.gateway.storage import AsyncStore
from thoughtline.gateway.stream import EventStreamResponse, unless_disconnected
from thoughtline.gateway.tenancy import Tenants
from thoughtline.gateway.upstreams import Engines, provider_failure
from thoughtline.gateway.warm import warm
from thoughtline.messages import Usage
from thoughtline.persist import Written
from thoughtline.requestlog import RequestLog
from thoughtline.store.base import Store
from thoughtline.transport.redact import redact
from thoughtline.turn import TurnInput, TurnOptions

SESSION_HEADER = "X-Thoughtline-Session"
#: The gateway's own milliseconds before the answer's first byte: since the request arrived,
#: less the time spent waiting on the upstream (issue 45 item 4).
OVERHEAD_HEADER = "X-Thoughtline-Overhead-Ms"


class Gateway:
    """The running gateway: config, tenants, store, engine and logs, shared by all requests."""

    def __init__(self, config: GatewayConfig, store: Store, *,
                 environ: Mapping[str, str] | None = None, transport: Any = None,
                 request_log: RequestLog | None = None, access_log: AccessLog | None = None,
                 ) -> None:
        self.config = config
        self.tenants = Tenants(config.tokens(environ))
        self.metrics = Metrics(pools=lambda: self.engines.pools())
        #: OpenTelemetry, when the OTEL_* variables ask for it (``thoughtline.tracing``).
        self.tracer = tracing.from_environ()
        self.store = AsyncStore(store, on_error=self.metrics.store_failed)
        self.conversations = Conversations(config, self.store)
        #: One engine and connection pool per upstream (``transport``, when given, is shared).
        self.engines = Engines(config, transport=transport,
                               log=RequestLogTee(request_log, self.metrics), tracer=self.tracer)
        self.access = access_log or AccessLog(config.access_log)
        if request_log is not None and request_log.on_error is None:
            # A request log that cannot be written is said once, as a JSON line of the access log.
            request_log.on_error = lambda text: self.access.write({"event": "request_log_error",
                                                                   "error": text})
        self._minter: Minter | None = None

    async def minter(self) -> Minter:
        """The minting key's holder (the key is read from the store once, made on first use)."""
        if self._minter is None:
            self._minter = Minter(await self.store.call(self.store.store.secret, KEY_NAME))
        return self._minter

    async def aclose(self) -> None:
        await self.engines.aclose()
        await self.store.close()
        self.access.close()
        self.metrics.close()
        if self.tracer is not None:  # exports what is queued
            await anyio.to_thread.run_sync(self.tracer.shutdown)

    async def warm(self) -> None:
        """Load what the first request would (``gateway.warm``, the worker threads, the store's
        connection) before any is accepted: the first request costs what a steady one does."""
        for step in await anyio.to_thread.run_sync(warm, self.config, self.engines):
            self.access.write({"event": "warm_skipped", "step": step})
        with contextlib.suppress(StoreError):  # /readyz and the requests say it
            await self.store.call(self.store.store.latest_session, tenant="thoughtline-warm")
        settle()  # start-up's objects out of the collector's passes

    # --- routes -------------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return json_response(200, {"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        """200 when the store answers a read (the config loaded, or there would be no app); the
        store's error goes to the access log, not to an unauthenticated prober."""
        try:
            await self.store.call(self.store.store.latest_session, tenant="thoughtline-readyz")
        except StoreError as exc:
            self.access.write({"event": "not_ready", "error": str(exc)})
            return json_response(503, {"status": "unavailable",
                                       "reason": "the store does not answer"})
        return json_response(200, {"status": "ready"})

    async def metrics_text(self, request: Request) -> Response:
        if not self.config.metrics_public and self.tenants.authenticate(
                token_of(request.headers)) is None:
            return unauthorized(CHAT)
        return Response(self.metrics.text(), media_type=CONTENT_TYPE)

    async def probe(self, request: Request) -> Response:
        """``HEAD /``: Claude Code's check that the gateway is there (no token needed)."""
        return Response(status_code=200)

    async def models(self, request: Request) -> Response:
        record = Record(fields={"method": "GET", "path": request.url.path})
        face = MESSAGES if messages_client.asks_models(request.headers) else CHAT
        tenant = self.tenants.authenticate(token_of(request.headers))
        if tenant is None:
            return self._logged(record, unauthorized(face))
        record.fields["tenant"] = tenant
        models = upstream_models(self.config)
        if face is CHAT:
            return self._logged(record, json_response(200, client.models_json(models)))
        try:
            return self._logged(record, json_response(200, messages_client.models_json(
                models, request.query_params)))
        except ClientRequestError as exc:
            return self._logged(record, HttpError(400, str(exc), param=exc.param).response(face))

    def endpoint(self, face: Face, *, compact: bool = False) -> Any:
        """The request handler of ``face`` (``compact``: its compaction endpoint)."""

        async def serve(request: Request) -> Any:
            record = Record(fields={"method": "POST", "path": request.url.path},
                             in_flight=face.name,
                             span=tracing.request_span(self.tracer, "POST", request.url.path,
                                                       request.headers))
            self.metrics.started(face.name)
            try:
                return await self._serve(request, record, face, compact=compact)
            except HttpError as error:
                record.fields["error"] = error.kind
                headers = {"www-authenticate": "Bearer"} if error.status == 401 else {}
                return self._logged(record, error.response(face, {**headers,
                                                                  **record.hints.headers()}),
                                    error.outcome)

        return serve

    def counter(self, face: MessagesFace) -> Any:
        """The token-counting handler of ``face``: the request priced as it would be sent."""

        async def count(request: Request) -> Any:
            record = Record(fields={"method": "POST", "path": request.url.path})
            try:
                counted = await self._count(request, record, face)
                return self._logged(record, json_response(200, counted))
            except HttpError as error:
                record.fields["error"] = error.kind
                return self._logged(record, error.response(face), error.outcome)

        return count

    async def _count(self, request: Request, record: Record, face: MessagesFace) -> Any:
        tenant = self.tenants.authenticate(token_of(request.headers))
        if tenant is None:
            raise unauthorized_error()
        record.fields["tenant"] = tenant
        raw = await self._body(request, record)
        heavy = len(raw) >= HEAVY_BYTES
        parsed = self._within_limits(
            await off_loop(heavy, client_request, raw, face, request.headers,
                           self.conversations.items_memo(tenant)))
        upstream, model = self._upstream(parsed.model)
        record.fields.update(face=face.name, upstream=upstream.name, model=model)
        try:
            minted = _verified(await self.minter(), tenant, parsed, record)
            prepared = await self.conversations.prepare(
                tenant, parsed, upstream, model, request.headers.get(SESSION_HEADER) or None,
                minted=minted, create=False, heavy=heavy)
        except UnknownSession as exc:
            raise HttpError(404, str(exc), code="session_not_found") from None
        except StoreError as exc:
            raise store_down(exc) from None
        turn = prepared.turn
        try:
            tokens = await off_loop(heavy, _priced, turn)
        except UsageError as exc:
            raise HttpError(400, str(exc)) from None
        record.fields["tokens"] = tokens
        return face.count_json(tokens)

    def _logged(self, record: Record, response: Response,
                outcome: str | None = None) -> Response:
        response.headers[OVERHEAD_HEADER] = f"{record.overhead_ms():g}"
        self._ended(record, response.status_code, outcome)
        return response

    def _ended(self, record: Record, status: int, outcome: str | None) -> None:
        """The request's one access-log line, and its metrics."""
        line = record.line(status, outcome)
        self.access.write(line)
        tracing.request_ended(self.tracer, record.span, line)
        self.metrics.finished(line, {**record.marks, "started": record.started,
                                     "ended": time.monotonic()}, record.in_flight,
                              upstream_s=record.upstream_s)

    async def _serve(self, request: Request, record: Record, face: Face, *,
                     compact: bool = False) -> Any:
        tenant = self.tenants.authenticate(token_of(request.headers))
        if tenant is None:
            raise unauthorized_error()
        record.fields["tenant"] = tenant
        raw = await self._body(request, record)
        heavy = len(raw) >= HEAVY_BYTES
        parsed = self._within_limits(
            await off_loop(heavy, client_request, raw, face, request.headers,
                           self.conversations.items_memo(tenant)))
        upstream, model = self._upstream(parsed.model)
        record.fields.update(face=face.name, upstream=upstream.name, model=model,
                             stream=parsed.stream)
        record.hints = Hints.of(upstream, parsed.model, model)
        dropped = parsed.dropped_to(upstream.provider.api)
        if dropped:  # the client's parameters this upstream's API has no place for
            record.fields["dropped"] = list(dropped)
        reply = Reply(response_id=face.new_id(), model=parsed.model,
                      include_usage=parsed.include_usage,
                      tool_names=getattr(parsed, "tool_names", NO_TOOLS),
                      upstream_api=upstream.provider.api)
        try:
            minted: dict[int, str] = {}
            if face.mints:
                minter = await self.minter()
                parsed = await self._expanded(minter, tenant, await self._continued(
                    tenant, parsed))
                own = getattr(face, "own_compaction", None)
                passed = own(parsed, upstream.provider.api) if own and not compact else None
                parsed = passed or parsed  # an upstream that compacts itself gets the trigger
                minted = _verified(minter, tenant, parsed, record)
                reply = replace(reply, minted=minter.mint(tenant, reply.response_id))
                record.fields["minted_issued"] = 1  # the answer's reasoning carries it back
            prepared = await self.conversations.prepare(
                tenant, parsed, upstream, model, request.headers.get(SESSION_HEADER) or None,
                minted=minted, answer_ref=reply.response_id if face.mints else "", heavy=heavy)
        except UnknownSession as exc:
            raise HttpError(404, str(exc), code="session_not_found") from None
        except StoreError as exc:
            raise store_down(exc) from None
        record.fields.update(session=prepared.session.id, rehydrated=prepared.rehydration.hits,
                             unmatched=prepared.rehydration.misses)
        if prepared.rehydration.by_kind:
            record.fields["rehydrated_by"] = dict(prepared.rehydration.by_kind)
        record.marks["upstream"] = time.monotonic()
        headers = {SESSION_HEADER: prepared.session.id}
        if compact or getattr(parsed, "compact", False):
            return await self._compacted(request, prepared, face, reply, headers, record,
                                         parsed, endpoint=compact)
        if parsed.stream:
            return await self._stream(request, prepared, face, reply, headers, record)
        return await self._whole(request, prepared, face, reply, headers, record)

    async def _body(self, request: Request, record: Record) -> bytes:
        limit = self.config.max_body_bytes
        try:
            raw = await read_body(request, limit)
        except TooLarge:
            raise HttpError(413, f"the request body is larger than the gateway's limit of "
                                 f"{limit} bytes ([server] max_body_bytes)",
                            code="request_too_large") from None
        except ClientDisconnect:
            gone = HttpError(499, "the client disconnected", code="clientclosed")
            gone.outcome = "clientclosed"
            raise gone from None
        record.fields["bytes_in"] = len(raw)
        return raw

    def _within_limits(self, parsed: ClientRequest) -> ClientRequest:
        """``parsed``, unless it carries more messages than ``[server] max_items`` allows."""
        limit = self.config.max_items
        if len(parsed.messages) > limit:
            raise HttpError(400, f"the request carries {len(parsed.messages)} messages, more than "
                                 f"the gateway's limit of {limit} ([server] max_items)",
                            code="too_many_items")
        return parsed

    def _upstream(self, model: str) -> Any:
        try:
            return self.config.upstream_for(model)
        except UsageError as exc:
            raise HttpError(404, str(exc), code="model_not_found", param="model") from None

    # --- compaction (``gateway.compaction``) ---------------------------------------------------

    async def _continued(self, tenant: str, parsed: Any) -> Any:
        """``parsed`` after the stored conversation its ``previous_response_id`` names (an
        answer of this gateway to this tenant), else a clear 400."""
        previous = getattr(parsed, "previous_response_id", "")
        if not previous:
            return parsed
        earlier = None
        if mint.valid_ref(previous):
            earlier = await self.store.call(compaction.history_until, self.store.store, tenant,
                                            previous)
        if earlier is None:
            raise HttpError(400, f"previous_response_id {previous!r} names no response this "
                                 "gateway stored for this token; send the whole conversation "
                                 "as input (store: false) instead",
                            code="previous_response_not_found", param="previous_response_id")
        return replace(parsed, **compaction.continued(parsed, earlier))

    async def _expanded(self, minter: Minter, tenant: str, parsed: Any) -> Any:
        """``parsed`` with the compaction reference it carries replaced by what it names."""
        value = getattr(parsed, "checkpoint", "")
        if not value:
            return parsed
        ref = minter.verify(tenant, value)
        found = None
        if ref is not None:
            (found,) = await self.store.call(self.store.store.rehydrate, tenant,
                                             [mint.index_key(ref)])
        try:
            stored = compaction.expansion(found.message) if found is not None else None
        except ValueError:
            stored = None
        if stored is None:
            raise HttpError(400, "the compaction item names no compacted conversation of this "
                                 "gateway for this token (forged, damaged or another "
                                 "tenant's); send the conversation without it",
                            code="invalid_compaction", param="input")
        messages, moved = compaction.expand(parsed.messages, parsed.checkpoint_at, stored,
                                            parsed.minted)
        return replace(parsed, messages=messages, minted=moved, checkpoint="",
                       checkpoint_at=-1)

    async def _compacted(self, request: Request, prepared: Prepared, face: Any, reply: Reply,
                         headers: Mapping[str, str], record: Record, parsed: ClientRequest,
                         *, endpoint: bool) -> Any:
        """Compact the conversation (the upstream's model summarizes) and answer with exactly
        one reference to the stored result."""
        record.fields["compaction"] = True
        engine = self.engines[prepared.upstream]
        try:
            bundle, tokens = await compaction.compact(prepared.turn, engine, trace=record.span,
                                                      on_upstream=record.waited)
            written = await self.conversations.store_compaction(prepared, bundle, reply.response_id)
        except compaction.CannotCompact as exc:  # said, not answered with a no-op compaction
            raise HttpError(400, str(exc), code="compaction_cannot_shrink") from None
        except ThoughtlineError as exc:
            raise self._failure(exc, prepared) from None
        if branch := written.branch:  # the head moved meanwhile: the bundle is on a branch
            headers, record.fields["session"] = {**headers, SESSION_HEADER: branch}, branch
        usage = Usage(input_tokens=tokens)
        if parsed.stream and not endpoint:
            writer = face.writer(reply)
            body = writer.start() + writer.compaction(usage)
            return self._logged(record, Response(body, media_type="text/event-stream",
                                                 headers={**headers, **record.hints.headers()}))
        answer = face.compaction(reply, parsed, endpoint=endpoint, usage=usage)
        return self._logged(record, json_response(200, answer,
                                                  {**headers, **record.hints.headers()}))

    # --- answering ----------------------------------------------------------------------------

    async def _whole(self, request: Request, prepared: Prepared, face: Face, reply: Reply,
                     headers: Mapping[str, str], record: Record) -> Response:
        sink = GatewaySink()

        async def work() -> tuple[dict[str, Any] | None, Written | None]:
            written = body = None
            try:
                done = None
                engine = self.engines[prepared.upstream]
                async for event in recovering(engine, prepared.turn, sink, TurnOptions(
                        stream=False, keep_partial=False, on_request_id=record.hints.heard,
                        on_upstream=record.waited,
                        trace=record.span, offload=prepared.heavy)):
                    record.marks.setdefault("first_byte", time.monotonic())
                    if isinstance(event, Done):
                        done = event
                if done is not None:
                    body = _rendered(face.whole, done, reply)
            except Exception:
                sink.done = None  # the client is told it failed: the answer is not stored
                raise
            finally:
                with anyio.CancelScope(shield=True):  # the one write of this turn
                    written = await self.conversations.persist(prepared, sink)
            return body, written

        try:
            finished, result = await unless_disconnected(request.receive, work)
        except ThoughtlineError as exc:
            raise self._failure(exc, prepared) from None
        finally:
            record.fields.update(sink.log_fields())
        body, written = result or (None, None)
        if not finished or body is None:
            return self._logged(record, json_response(499, {}), "clientclosed")
        if written is not None and (branch := written.branch):  # the head moved: a branch
            headers, record.fields["session"] = {**headers, SESSION_HEADER: branch}, branch
        return self._logged(record, json_response(200, body, {**headers, **record.hints.headers()}))

    async def _stream(self, request: Request, prepared: Prepared, face: Face, reply: Reply,
                      headers: Mapping[str, str], record: Record) -> Any:
        sink = GatewaySink()
        events = recovering(self.engines[prepared.upstream], prepared.turn, sink, TurnOptions(
            stream=True, keep_partial=False, on_request_id=record.hints.heard,
            on_upstream=record.waited,
            trace=record.span, offload=prepared.heavy))
        try:
            finished, first = await unless_disconnected(request.receive, events.__anext__)
            record.marks["first_byte"] = time.monotonic()
        except ThoughtlineError as exc:
            await closed(events)
            sink.done = None  # the client is told it failed: the answer is not stored
            with anyio.CancelScope(shield=True):
                await self.conversations.persist(prepared, sink)
            record.fields.update(sink.log_fields())
            raise self._failure(exc, prepared) from None
        if not finished:
            await closed(events)
            return self._logged(record, json_response(499, {}), "clientclosed")
        outcome = {"value": "clientclosed"}

        async def frames() -> AsyncIterator[bytes]:
            writer = face.writer(reply)
            event: Any = first
            persisted = False
            try:
                opening = _rendered(writer.start)
                if opening:
                    yield opening
                while True:
                    if isinstance(event, Done):
                        last = _rendered(writer.finish, event)
                        persisted = True  # one write: a failed one is reported, never redone
                        with anyio.CancelScope(shield=True):
                            await self.conversations.persist(prepared, sink)
                        outcome["value"] = "ok"
                        yield last
                        return
                    frame = _rendered(writer.event, event)
                    if frame is not None:
                        yield frame
                    event = await events.__anext__()
            except ThoughtlineError as exc:
                sink.done = None  # the client is told it failed: the answer is not stored
                error = self._failure(exc, prepared)
                outcome["value"] = error.outcome
                record.fields["error"] = error.kind
                fail = getattr(writer, "fail", None)  # a face whose stream ends its own way
                yield fail(str(error), code=error.code or error.kind) if fail else \
                    error.frame(face)
            finally:
                await closed(events)
                if not persisted:  # what a failed or cut turn taught (it stored no turn)
                    with anyio.CancelScope(shield=True):
                        await self.conversations.persist(prepared, sink)
                record.fields.update(sink.log_fields())

        async def on_close(completed: bool) -> None:
            self._ended(record, 200, outcome["value"] if completed else "clientclosed")

        return EventStreamResponse(frames(), headers={
            **headers, **record.hints.headers(), OVERHEAD_HEADER: f"{record.overhead_ms():g}"},
            on_close=on_close)

    def _failure(self, exc: ThoughtlineError, prepared: Prepared) -> HttpError:
        """An upstream or store failure as an OpenAI error (the upstream's key redacted)."""
        name = prepared.upstream.name
        if isinstance(exc, ProviderError):
            failed = provider_failure(exc, prepared.upstream, prepared.turn.provider.api_key())
            error = HttpError(failed.status, failed.text, kind=failed.kind, code=failed.code)
        elif isinstance(exc, ProtocolError):
            error = HttpError(502, _redact(f"upstream {name!r} sent a broken answer: {exc}",
                                           prepared), kind="upstream_error", code="bad_upstream")
        elif isinstance(exc, StoreError):
            error = HttpError(503, f"the answer could not be stored: {exc}", kind="server_error")
        elif isinstance(exc, UsageError):  # the request asks what the upstream cannot take
            error = HttpError(400, _redact(f"upstream {name!r} cannot take this request: {exc}",
                                           prepared), code="invalid_request")
        else:
            error = HttpError(500, _redact(f"the gateway cannot reach upstream {name!r}: {exc}",
                                           prepared), kind="server_error")
        error.outcome = "error"
        return error


def _priced(turn: TurnInput) -> int:
    """The tokens ``turn`` would be sent with (its route's estimate)."""
    estimator = Estimator.for_config(turn.codec, turn.route, turn.config, ledger=turn.ledger)
    return estimator.scale(estimator.raw(turn.history, turn.pending))


def _verified(minter: Minter, tenant: str, parsed: ClientRequest,
              record: Record) -> dict[int, str]:
    """The echoed minted values that verify for ``tenant``; the others counted in the log."""
    refs, rejected = minter.verified(tenant, parsed.minted)
    if rejected:
        record.fields["minted_rejected"] = rejected
    return refs


def _rendered(render: Any, *args: Any, **kwargs: Any) -> Any:
    """A frame or body of the answer; an answer that cannot be written is a broken answer."""
    try:
        return render(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"the answer cannot be written for the client: {exc}") from exc


def _redact(text: str, prepared: Prepared) -> str:
    key = prepared.turn.provider.api_key()
    return redact(text, (key,) if key else ())


def create_app(gateway: Gateway) -> Front:
    """The ASGI app serving ``gateway`` (closed when the app shuts down)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await gateway.warm()
        try:
            yield
        finally:
            await gateway.aclose()

    posts = {path: gateway.endpoint(face) for face in FACES for path in all_paths(face)}
    posts |= {path: gateway.counter(MESSAGES) for path in both_ways(MESSAGES.count_paths)}
    posts |= {path: gateway.endpoint(RESPONSES, compact=True)
              for path in both_ways(RESPONSES.compact_paths)}
    gets = {"/v1/models": gateway.models, "/healthz": gateway.healthz,
            "/readyz": gateway.readyz, "/metrics": gateway.metrics_text}
    return Front(posts, gets, lifespan, heads={"/": gateway.probe}, access=gateway.access)
