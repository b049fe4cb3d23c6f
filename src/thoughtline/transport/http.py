"""HTTP transport: POST a serialized body, return JSON or a stream of ``(event type, payload)``.

Owns timeouts, bounded retries with backoff (429, 5xx, connection errors; ``Retry-After``
honoured), authentication through the target's ``httpx.Auth`` (applied anew on every attempt, so
SigV4 re-signs each retry), the response framings (SSE, the AWS event stream decoded by botocore's
parser, a streamed JSON array), telling the caller each response's request id, and the mapping of
httpx exceptions to ``ProviderError`` — once, here. It knows nothing of routes, carriers or
reasoning; the learn-once fallback sits above it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import httpcore
import httpx
import orjson
from httpx_sse import EventSource, SSEError

from thoughtline.codecs.shape import deeper_than, too_deep
from thoughtline.errors import ProtocolError, ProviderBusy, ProviderError, StreamInterrupted
from thoughtline.transport.redact import cut, redact

#: The backoff's sleep (a seam, so tests can record what was waited instead of timing it).
_sleep = asyncio.sleep

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

#: Response headers that carry the upstream's own id of a request, the first present wins:
#: Anthropic's ``request-id`` (platform.claude.com/docs/en/api/errors), the ``x-request-id`` of
#: OpenAI (platform.openai.com/docs/api-reference/debugging-requests) and of most
#: OpenAI-compatible servers, AWS's ``x-amzn-requestid`` (Bedrock).
REQUEST_ID_HEADERS = ("request-id", "x-request-id", "x-amzn-requestid")


@dataclass(frozen=True, kw_only=True, slots=True)
class TransportConfig:
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    #: How long the response may take to start (0: only ``read_timeout`` applies).
    first_byte_timeout: float = 0.0
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    #: After this many seconds without a response, ``on_wait`` is told (once per attempt).
    waiting_after: float = 3.0
    #: The pool: at most this many connections per client (one client per plain/TLS target),
    #: and how long a request waits for one to come free (0: as long as ``read_timeout``).
    max_connections: int = 100
    pool_timeout: float = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class PoolState:
    """A transport's connection pools right now (what a soak test or a /metrics page reads)."""

    #: Open connections, and those of them serving a request (checked out of the pool).
    connections: int = 0
    in_use: int = 0
    #: Requests waiting for a connection to come free.
    waiting: int = 0


#: Failures before the request left this machine: retrying them cannot bill a request twice.
#: Anything later (a read timeout, a connection dropped mid-answer) may have reached the model.
#: A pool timeout was not sent either, but it is not retried: the wait already happened.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


class _ReclaimingPool(httpcore.AsyncConnectionPool):
    """httpcore's pool less one leak (encode/httpcore#1093, open on httpcore 1.0.9): a request
    cancelled after the pool made it a new connection but before it opened it (a gateway client
    leaving, a pool timeout firing as a slot came free) leaves that connection behind. Never
    opened, it is never idle, closed nor expired: it holds a slot for good, and once all slots are
    held every request waits out the pool timeout. Whenever the pool rebalances, an unopened
    connection that no request holds is dropped first (the rule pydantic/httpx2#983 adopted)."""

    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        held = {id(request.connection) for request in self._requests}
        self._connections = [connection for connection in self._connections
                             if id(connection) in held or connection.info() != "CONNECTING"]
        return super()._assign_requests_to_connections()


def _reclaiming(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """``client`` with its pool made a ``_ReclaimingPool`` (httpx builds the pool itself, with the
    client's proxies and TLS settings; only its class changes, no state is added)."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if type(pool) is httpcore.AsyncConnectionPool:
        pool.__class__ = _ReclaimingPool
    return client


class FirstByteTimeout(Exception):
    """The response did not start within ``first_byte_timeout``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """Where a request goes, how it is authenticated and framed, and what to call it in errors.

    ``framing`` is how a *streamed* answer is framed (``sse``, ``aws-eventstream``,
    ``json-array``); whole answers are one JSON document.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    route: str = ""
    provider: str = ""
    auth: httpx.Auth | None = None
    framing: str = "sse"
    #: Values never to appear in an error's text or body (the key the request authenticates
    #: with): a provider may echo them back, whole or cut short.
    secrets: tuple[str, ...] = ()
    #: Told the request id of every response the upstream sends ("" when it names none): a
    #: stream's before its first event, an error's before it is raised.
    on_request_id: Callable[[str], None] | None = None
    #: Told before each retry why the request is sent again: the status retried, or None when
    #: the upstream was not reached (a span per request sent is ended and the next begun).
    on_retry: Callable[[int | None], None] | None = None
    #: Told the seconds of each wait on the upstream: a request until its answer's headers (a
    #: whole answer: until its body is read), a retry's backoff, each stream event (its read
    #: and parse) — what a server subtracts to know its own time.
    on_upstream: Callable[[float], None] | None = None


class Transport(Protocol):
    """What the turn engine needs from a transport (HTTP here; tests may plug their own)."""

    attempts: int
    retries: int
    #: Told (one line of text) when an answer is slow to start or a Retry-After wait begins.
    on_wait: Callable[[str], None] | None

    async def post_json(self, target: Target, body: bytes) -> Any: ...

    def stream_events(self, target: Target, body: bytes) -> AsyncIterator[tuple[str, Any]]: ...

    async def aclose(self) -> None: ...


def provider_message(body: str) -> str:
    """The human part of an error body (``error.message``, ``message``, or the text)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.strip()[:500]
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, Mapping):
        error = data.get("error", data)
        if isinstance(error, Mapping):
            message = error.get("message")
            if isinstance(message, str | Mapping | list):
                try:
                    text = message if isinstance(message, str) else orjson.dumps(
                        message).decode()
                except orjson.JSONEncodeError:  # nested deeper than orjson writes
                    return body.strip()[:500]
                raw = error.get("metadata", {}).get("raw") if isinstance(
                    error.get("metadata"), Mapping) else None
                return f"{text} ({raw})" if isinstance(raw, str) else text
        elif isinstance(error, str):
            return error
    return body.strip()[:500]


def _text(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def request_id(headers: Mapping[str, str]) -> str:
    """The upstream's id of the request a response answers ("" when it names none)."""
    return next((headers[name] for name in REQUEST_ID_HEADERS if headers.get(name)), "")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unparseable: fall back to our own backoff
    return max(0.0, parsed.timestamp() - time.time())


class HttpTransport:
    """One httpx.AsyncClient; ``attempts`` counts HTTP requests actually sent."""

    def __init__(self, config: TransportConfig | None = None,
                 client: httpx.AsyncClient | None = None,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.config = config or TransportConfig()
        self._given = client
        self._clients: dict[bool, httpx.AsyncClient] = {}
        self.attempts = 0
        self.retries = 0
        #: Told, in words, when a response is slow to start and each second of a Retry-After
        #: wait ("waiting for deepseek… (Ctrl-C to stop)"); a CLI prints it, a library ignores it.
        self.on_wait = on_wait

    def _client_for(self, url: str) -> httpx.AsyncClient:
        """The client for a URL, made on first use. Plain-HTTP targets (loopback emulators, local
        servers) get a client that never loads the CA store: about 0.1 s saved per process."""
        if self._given is not None:
            return self._given
        tls = not url.startswith("http://")
        client = self._clients.get(tls)
        if client is None:
            config = self.config
            timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout,
                                    pool=config.pool_timeout or config.read_timeout)
            limits = httpx.Limits(max_connections=config.max_connections,
                                  max_keepalive_connections=min(20, config.max_connections))
            client = _reclaiming(httpx.AsyncClient(timeout=timeout, limits=limits, verify=tls))
            self._clients[tls] = client
        return client

    def warm(self, url: str) -> None:
        """Make the client for ``url`` now (its imports and, for TLS, the CA store): a server's
        start, so its first request does not pay for them."""
        self._client_for(url)

    def pool_state(self) -> PoolState:
        """The connections of every client this transport made (a given client included)."""
        clients = [*self._clients.values(), *([self._given] if self._given else [])]
        connections = in_use = waiting = 0
        for client in clients:
            # httpx keeps its httpcore pool private; read it defensively (no API promises it).
            pool = getattr(getattr(client, "_transport", None), "_pool", None)
            for connection in getattr(pool, "connections", ()):
                if connection.is_closed():
                    continue
                connections += 1
                in_use += not connection.is_idle()
            waiting += sum(1 for request in getattr(pool, "_requests", ()) if request.is_queued())
        return PoolState(connections=connections, in_use=in_use, waiting=waiting)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
        if self._given is not None:
            await self._given.aclose()

    def _error(self, target: Target, message: str, *, status: int | None = None,
               body: str = "") -> ProviderError:
        return ProviderError(redact(message, target.secrets), status=status,
                             body=redact(body, target.secrets), route=target.route,
                             provider=target.provider, retries=self.retries)

    def _unreachable(self, url: str, exc: Exception) -> str:
        """Why the last attempt failed; httpx timeouts carry no text of their own."""
        if isinstance(exc, httpx.ConnectTimeout):
            return (f"could not connect to {url} within {self.config.connect_timeout:g} s "
                    "(connect timeout)")
        if isinstance(exc, httpx.ReadTimeout):
            return f"no answer from {url} within {self.config.read_timeout:g} s (read timeout)"
        if isinstance(exc, FirstByteTimeout):
            return (f"no answer from {url} within {self.config.first_byte_timeout:g} s "
                    "(first-byte timeout)")
        if isinstance(exc, httpx.PoolTimeout):
            return (f"no free connection to {url} within {self._pool_wait():g} s: all "
                    f"{self.config.max_connections} are busy (pool timeout; nothing was sent)")
        if isinstance(exc, httpx.TimeoutException):
            return f"{url} timed out after {self.config.read_timeout:g} s ({type(exc).__name__})"
        return f"could not reach {url}: {_text(exc)}"

    def _pool_wait(self) -> float:
        return self.config.pool_timeout or self.config.read_timeout

    def _tell(self, text: str) -> None:
        if self.on_wait is not None:
            self.on_wait(text)

    async def _backoff(self, attempt: int, headers: Mapping[str, str] | None,
                       target: Target) -> None:
        delay = _retry_after(headers) if headers is not None else None
        honoured = delay is not None
        if delay is None:
            delay = min(self.config.backoff_cap, self.config.backoff_base * 2 ** attempt)
            delay *= 0.5 + random.random() / 2
        delay = min(delay, self.config.backoff_cap)
        if not honoured or delay < 1:
            await _sleep(delay)
            return
        who = target.provider or target.url
        while delay > 0:  # a countdown, one line a second, while honouring Retry-After
            self._tell(f"{who} asked to retry later (Retry-After): retrying in {delay:.0f} s "
                       "(Ctrl-C to stop)")
            step = min(1.0, delay)
            await _sleep(step)
            delay -= step

    async def _request(self, client: httpx.AsyncClient, request: httpx.Request, *,
                       stream: bool, target: Target) -> httpx.Response:
        """One attempt; tells ``on_wait`` when the answer is slow to start, and enforces the
        first-byte timeout (the response's headers are its first bytes).

        The send is awaited in the caller's own task, never in a task of its own: when the
        caller is cancelled (a gateway client left), the cancellation reaches httpcore inside
        the send, which closes the connection; a detached send task would keep it checked out.
        """
        limit = self.config.first_byte_timeout or None
        notice = None
        if self.on_wait is not None and (limit is None or limit > self.config.waiting_after):
            notice = asyncio.get_running_loop().call_later(
                self.config.waiting_after, self._tell,
                f"waiting for {target.provider or target.url}… (Ctrl-C to stop)")
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await client.send(request, stream=stream, auth=target.auth)
        except TimeoutError:
            if deadline.expired():
                raise FirstByteTimeout() from None
            raise
        finally:
            if notice is not None:
                notice.cancel()

    async def _send(self, target: Target, body: bytes, *, stream: bool) -> httpx.Response:
        """Send with retries; returns a response with a 2xx status (stream left open)."""
        headers = {"content-type": "application/json", **target.headers}
        for attempt in range(self.config.max_retries + 1):
            last = attempt == self.config.max_retries
            self.attempts += 1
            try:
                client = self._client_for(target.url)
                request = client.build_request("POST", target.url, content=body,
                                                     headers=headers)
                with _waiting(target):
                    response = await self._request(client, request, stream=stream,
                                                   target=target)
            except httpx.PoolTimeout as exc:
                raise ProviderBusy(self._unreachable(target.url, exc), route=target.route,
                                   provider=target.provider, retries=self.retries) from exc
            except (httpx.TimeoutException, httpx.TransportError, FirstByteTimeout) as exc:
                if not isinstance(exc, _NOT_SENT):
                    # The POST may have reached the model: a retry could run (and bill) it
                    # twice, and none of the routes documents an idempotency key.
                    raise self._error(target, self._unreachable(target.url, exc) + "; not "
                                      "retried, since the request may have reached the model"
                                      ) from exc
                if last:
                    raise self._error(target, self._unreachable(target.url, exc)) from exc
                self.retries += 1
                if target.on_retry is not None:
                    target.on_retry(None)
                with _waiting(target):
                    await self._backoff(attempt, None, target)
                continue
            if target.on_request_id is not None:
                target.on_request_id(request_id(response.headers))
            if response.status_code < 400:
                return response
            try:
                # Redacted whole before anything cuts it (provider_message keeps 500 chars).
                text = redact((await response.aread()).decode("utf-8", "replace"),
                              target.secrets)
            finally:
                await response.aclose()
            if response.status_code in RETRY_STATUSES and not last:
                self.retries += 1
                if target.on_retry is not None:
                    target.on_retry(response.status_code)
                with _waiting(target):
                    await self._backoff(attempt, response.headers, target)
                continue
            raise self._error(target, provider_message(text), status=response.status_code,
                              body=text)
        raise AssertionError("unreachable")  # pragma: no cover

    async def post_json(self, target: Target, body: bytes) -> Any:
        response = await self._send(target, body, stream=False)
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            shown = cut(response.text, target.secrets, 200)
            raise self._error(target, f"the response is not JSON: {shown!r}",
                              status=response.status_code, body=response.text) from exc
        if deeper_than(data, raw=response.content):
            raise ProtocolError(too_deep("the response"))
        return data

    async def stream_events(self, target: Target, body: bytes) -> AsyncIterator[tuple[str, Any]]:
        """Yield each stream event as ``(event type, parsed JSON payload)``.

        SSE: the ``event:`` name ("" when absent), ending at ``data: [DONE]``; the AWS event
        stream: the ``:event-type`` header of each frame; a JSON array: ("", element). A stream
        that ends early ends silently: the caller's fold decides whether what arrived was
        complete. A connection error mid-stream raises StreamInterrupted.
        """
        response = await self._send(target, body, stream=True)
        framing = _FRAMINGS.get(target.framing)
        if framing is None:
            await response.aclose()
            raise ValueError(f"unknown stream framing {target.framing!r}")
        try:
            async with contextlib.aclosing(framing(response)) as events:
                told = target.on_upstream
                if told is None:
                    async for event in events:
                        yield event
                    return
                while True:  # each event's wait told (the loop above without the clock)
                    start = time.monotonic()
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                    finally:
                        told(time.monotonic() - start)
                    yield event
        except SSEError as exc:
            raise StreamInterrupted(f"not an event stream: {exc}") from exc
        except _Malformed as exc:
            raw = exc.data if isinstance(exc.data, str) else bytes(exc.data).decode(
                "utf-8", "replace")
            raise StreamInterrupted(f"malformed {exc.what}: "
                                    f"{cut(raw, target.secrets, 200)!r}") from exc
        except httpx.TimeoutException as exc:
            raise StreamInterrupted(
                f"the stream from {target.provider or target.url} stalled: nothing arrived for "
                f"{self.config.read_timeout:g} s (read timeout)") from exc
        except httpx.TransportError as exc:
            raise StreamInterrupted(f"the stream from {target.provider or target.url} broke "
                                    f"off: {_text(exc)}") from exc
        finally:
            await response.aclose()


@contextlib.contextmanager
def _waiting(target: Target) -> Iterator[None]:
    """Tell ``target.on_upstream`` how long the block took (also when it raised)."""
    if target.on_upstream is None:
        yield
        return
    start = time.monotonic()
    try:
        yield
    finally:
        target.on_upstream(time.monotonic() - start)


class _Malformed(Exception):
    """A stream element that is not JSON; shown (redacted, then cut) by ``stream_events``."""

    def __init__(self, what: str, data: bytes | str) -> None:
        super().__init__(what)
        self.what, self.data = what, data


def _json(data: bytes | str, what: str) -> Any:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _Malformed(what, data) from exc
    if deeper_than(value, raw=data):
        raise ProtocolError(too_deep(f"a {what}"))
    return value


async def _sse(response: httpx.Response) -> AsyncGenerator[tuple[str, Any], None]:
    async with contextlib.aclosing(EventSource(response).aiter_sse()) as events:
        async for event in events:
            data = event.data
            if not data:
                continue
            if data.strip() == "[DONE]":
                await _drained(events)
                return
            # httpx-sse reports a missing ``event:`` line as "message" (the SSE default).
            kind = "" if event.event == "message" else event.event
            yield kind, _json(data, "stream event")


#: How long the end of a body may take to arrive after ``[DONE]`` (it is normally in the same
#: packet): read to its end, the connection goes back to the pool instead of being closed. The
#: answer's end waits for it, so it is short: a slower upstream only loses the reuse.
DRAIN_SECONDS = 0.01


async def _drained(events: AsyncIterator[Any]) -> None:
    """Read what follows ``[DONE]`` (nothing, normally) so the upstream connection is reused;
    an upstream that keeps the body open is cut as before, its connection closed.

    The bound is an anyio cancel scope, not ``asyncio.timeout``: reaching the body's end closes
    the response, and httpcore shields that close from cancellation with anyio scopes only. A
    plain asyncio cancellation landing in it (the bound expiring just then, likely on a loaded
    machine) left the request checked out of the pool for good, its connection "in use"."""
    with contextlib.suppress(httpx.HTTPError, SSEError), anyio.move_on_after(DRAIN_SECONDS):
        async for _ in events:
            pass


async def _aws_eventstream(response: httpx.Response) -> AsyncGenerator[tuple[str, Any], None]:
    from botocore.eventstream import EventStreamBuffer, ParserError

    buffer = EventStreamBuffer()
    async for chunk in response.aiter_bytes():
        buffer.add_data(chunk)
        try:
            for message in buffer:
                headers = message.headers
                kind = headers.get(":event-type") or headers.get(":exception-type") or ""
                if headers.get(":message-type") == "exception":
                    kind = "exception:" + str(headers.get(":exception-type", ""))
                payload = _json(message.payload, "event-stream frame") if message.payload else {}
                yield str(kind), payload
        except ParserError as exc:
            raise StreamInterrupted(f"malformed AWS event-stream frame: {exc}") from exc


async def _json_array(response: httpx.Response) -> AsyncGenerator[tuple[str, Any], None]:
    # A streamed JSON array: "[{...}\r\n,{...}]" arrives in pieces; yield each complete element.
    decoder = _ArrayElements()
    async for chunk in response.aiter_text():
        for element in decoder.feed(chunk):
            yield "", _json(element, "stream element")


class _ArrayElements:
    """Splits a JSON array arriving in pieces into its top-level elements' texts."""

    def __init__(self) -> None:
        self._buffer: list[str] = []
        self._depth = 0
        self._in_string = False
        self._escape = False

    def feed(self, text: str) -> list[str]:
        out: list[str] = []
        buffer = self._buffer
        for char in text:
            if self._in_string:
                buffer.append(char)
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                continue
            if self._depth == 0 and (char in "[,]" or char.isspace()):
                continue  # the array's own brackets, separators and line breaks
            buffer.append(char)
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            elif char in "}]":
                self._depth -= 1
                if self._depth == 0:
                    out.append("".join(buffer))
                    buffer.clear()
        return out


_FRAMINGS = {"sse": _sse, "aws-eventstream": _aws_eventstream, "json-array": _json_array}
