"""Sessions: send a turn, stream its events, store it, resume it, branch it.

Owns the turn lifecycle: build the request from the stored history through the replay plan and
the route's codec, send it, fold the answer, apply the learn-once fallback (at most one retry per
turn), and append the finished turn atomically. It never mutates stored history; it knows no wire
field names (those are the codec's) and no SQL (the store's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from thoughtline import config as config_mod
from thoughtline import fallback, replay
from thoughtline.codecs import registry
from thoughtline.errors import ProtocolError, ProviderError, StreamInterrupted, UsageError
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, Origin, ToolResult, ToolSpec, tool_results, user
from thoughtline.messages import system as system_message
from thoughtline.requestlog import RequestLog
from thoughtline.routes import Route, is_local_endpoint, resolve
from thoughtline.routes.resolve import ECHO_CARRIER
from thoughtline.store.base import LoadProblem, SessionRecord, Store

if TYPE_CHECKING:
    from thoughtline.transport import HttpTransport, Target


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnOptions:
    stream: bool = True
    keep_partial: bool = True  # store an interrupted answer marked incomplete (else drop it)


def _tools_to_json(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools]


def _tools_from_json(raw: Iterable[Mapping[str, Any]]) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(name=t["name"], description=t.get("description", ""),
                          parameters=t.get("parameters", {})) for t in raw)


class Session:
    """A durable conversation. Create with ``Session.create`` or ``Session.resume``."""

    def __init__(self, *, store: Store, record: SessionRecord, history: Sequence[Message],
                 problems: Sequence[LoadProblem] = (), transport: HttpTransport | None = None,
                 log: RequestLog | None = None) -> None:
        self.store = store
        self.record = record
        self._history: list[Message] = list(history)
        self.problems = tuple(problems)
        self._transport = transport
        self.log = log
        cfg = record.model_config
        self.provider = config_mod.ProviderConfig.from_json(cfg["provider"])
        self.tools = _tools_from_json(cfg.get("tools", ()))
        self.params: dict[str, Any] = dict(cfg.get("params", {}))
        self._verdicts = [replay.Verdict.from_json(v) for v in cfg.get("verdicts", ())]
        self._cache = registry.codec(self.provider.api).WireCache()

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(cls, store: Store, provider: config_mod.ProviderConfig, *, title: str = "",
               tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
               system: str | None = None, tenant: str = "", **kwargs: Any) -> Session:
        model_config = {"provider": provider.to_json(), "tools": _tools_to_json(tools),
                        "params": dict(params or {}), "verdicts": [], "fingerprints": []}
        record = store.create_session(title=title, model_config=model_config, tenant=tenant)
        session = cls(store=store, record=record, history=(), **kwargs)
        if system:
            session._append([system_message(system)])
        return session

    @classmethod
    def resume(cls, store: Store, ref: str | None = None, **kwargs: Any) -> Session:
        """Reopen by id, unique prefix or title; ``None`` takes the latest session."""
        record = store.get_session(ref) if ref else store.latest_session()
        if record is None:
            raise UsageError("there is no session to continue yet: start one with "
                             "'thoughtline chat'")
        loaded = store.load_history(record.id)
        return cls(store=store, record=record, history=[m.message for m in loaded.messages],
                   problems=loaded.problems, **kwargs)

    # --- state --------------------------------------------------------------------------------

    @property
    def transport(self) -> HttpTransport:
        """The HTTP transport, made on first use (httpx is only imported to send)."""
        if self._transport is None:
            from thoughtline.transport import HttpTransport

            self._transport = HttpTransport()
        return self._transport

    @transport.setter
    def transport(self, transport: HttpTransport) -> None:
        self._transport = transport

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def history(self) -> tuple[Message, ...]:
        return tuple(self._history)

    @property
    def verdicts(self) -> tuple[replay.Verdict, ...]:
        return tuple(self._verdicts)

    @property
    def route(self) -> Route:
        p = self.provider
        return resolve(p.route_id, p.base_url, p.model, echo=p.echo)  # type: ignore[arg-type]

    def known_verdicts(self) -> list[replay.Verdict]:
        """The session's own verdicts plus what the global ledger learned elsewhere."""
        return [*self._verdicts, *self.store.verdicts()]

    def set_model(self, model: str) -> None:
        self.set_provider(replace(self.provider, model=model))

    def set_provider(self, provider: config_mod.ProviderConfig) -> None:
        self.provider = provider
        self._save_config()

    def _save_config(self) -> None:
        cfg = {**self.record.model_config, "provider": self.provider.to_json(),
               "verdicts": [v.to_json() for v in self._verdicts]}
        self.store.set_model_config(self.id, cfg)
        self.record = replace(self.record, model_config=cfg)

    def _append(self, messages: Sequence[Message]) -> None:
        self.store.append(self.id, messages)
        self._history.extend(messages)

    def branch(self, at: int | None = None, title: str = "") -> Session:
        """A new session sharing the first ``at`` turns (default all), reasoning untouched."""
        record = self.store.branch(self.id, at=at, title=title)
        kept = self._history if at is None else self._history[:at]
        return Session(store=self.store, record=record, history=kept, transport=self._transport,
                       log=self.log)

    # --- requests -----------------------------------------------------------------------------

    def build_request(self, pending: Sequence[Message] = (), *, stream: bool = False,
                      verdicts: Iterable[replay.Verdict] | None = None,
                      ) -> tuple[dict[str, Any], replay.ReplayPlan]:
        """The body the next request would carry (history + pending), and its plan."""
        route = self.route
        plan = replay.plan(route, self.known_verdicts() if verdicts is None else verdicts)
        codec = registry.codec(self.provider.api)
        body = codec.encode_request(
            [*self._history, *pending], plan, model=self.provider.model, tools=self.tools,
            params=self.params, stream=stream, stream_usage=route.stream_usage,
            cache=self._cache)
        return body, plan

    def _target(self, route: Route, *, stream: bool) -> Target:
        p = self.provider
        if not p.base_url:
            raise UsageError(f"provider {p.id!r} has no base URL: pass --base-url or set "
                             f"base_url under [providers.{p.id}] in config.toml")
        key = p.api_key()
        if key is None and p.key_env and not is_local_endpoint(route.host):
            raise UsageError(f"no API key for {p.id}: set the environment variable {p.key_env} "
                             f"(or name another variable with --api-key-env / api_key_env in "
                             f"config.toml)")
        from thoughtline.transport import Target

        codec = registry.codec(p.api)
        return Target(url=codec.endpoint(p.base_url, p.model, stream=stream),
                      headers={**codec.auth_headers(key), **(p.headers or {})},
                      route=route.row, provider=p.id)

    async def send(self, turn: str | Message | Sequence[ToolResult],
                   options: TurnOptions | None = None) -> Done:
        """Send one turn and return the folded answer (already stored)."""
        done: Done | None = None
        async for event in self.stream(turn, options):
            if isinstance(event, Done):
                done = event
        assert done is not None
        return done

    async def stream(self, turn: str | Message | Sequence[ToolResult],
                     options: TurnOptions | None = None) -> AsyncIterator[Event]:
        """Send one turn; yield reasoning/text deltas, notices, and finally ``Done``.

        At most two requests: the second only when the first's 4xx taught a new verdict. Every
        request sent gets one log record, also when its stream breaks or is cancelled.
        """
        options = options or TurnOptions()
        pending = [_as_message(turn)]
        learned: list[_Learned] = []
        for attempt in (1, 2):
            route = self.route
            body, plan = self.build_request(pending, stream=options.stream)
            target = self._target(route, stream=options.stream)
            record = _Request(route=route, body=body, attempt=attempt, learned=tuple(learned),
                              started=time.monotonic(), retries_before=self.transport.retries)
            lesson: _Learned | None = None
            try:
                async for event in self._exchange(route, target, body, pending, options):
                    if isinstance(event, Done):
                        record.finish(200, "ok")
                    yield event
                return
            except ProviderError as error:
                record.finish(error.status, "error")
                # A lesson from the retry's own rejection is kept for later turns, not retried.
                lesson = self._learn(error, body, plan, route, pending, stream=options.stream)
                if lesson is None or attempt == 2:
                    raise
            except ProtocolError:
                record.finish(200, "interrupted")
                raise
            except (asyncio.CancelledError, GeneratorExit):
                record.finish(record.status, record.outcome or "cancelled")
                raise
            finally:
                self._log(record)
            learned.append(lesson)
            yield Notice(fallback.describe(lesson.classification, model=route.model))

    def _learn(self, error: ProviderError, body: Mapping[str, Any], plan: replay.ReplayPlan,
               route: Route, pending: Sequence[Message], *, stream: bool) -> _Learned | None:
        if error.status is not None and not 400 <= error.status < 500:
            return None
        codec = registry.codec(self.provider.api)
        sent = set(codec.wire_summary(body, self._cache)["carriers"])
        c = fallback.classify(error.status, error.body, sent=sent, must_echo=plan.pad)
        if c.action == "drop" and (c.drop & plan.carriers):
            verdict = replay.Verdict(provider=route.provider, host=route.host, model=route.model,
                                     drop=frozenset(c.drop & plan.carriers), reason=c.reason)
        elif (c.action == "pad" and not plan.pad and ECHO_CARRIER in route.carriers
              and self.provider.echo != "never"):
            verdict = replay.Verdict(provider=route.provider, host=route.host, model=route.model,
                                     pad=True, reason=c.reason)
        else:
            return None
        retry, _ = self.build_request(pending, stream=stream,
                                      verdicts=[*self.known_verdicts(), verdict])
        if retry == body:
            # E.g. a pad demanded while every assistant turn already carries reasoning_content,
            # or after reasoning_content was learned unknown: the retry would be the same request.
            return None
        self._remember(verdict)
        return _Learned(verdict=verdict, classification=c)

    def _remember(self, verdict: replay.Verdict) -> None:
        for i, known in enumerate(self._verdicts):
            if known.key == verdict.key:
                self._verdicts[i] = known.merged(verdict)
                break
        else:
            self._verdicts.append(verdict)
        self._save_config()
        self.store.record_verdict(verdict)

    async def _exchange(self, route: Route, target: Target, body: Mapping[str, Any],
                        pending: list[Message], options: TurnOptions) -> AsyncIterator[Event]:
        codec = registry.codec(self.provider.api)
        origin = Origin(api=self.provider.api, provider=route.provider, host=route.host,
                        model=self.provider.model)
        raw = orjson.dumps(body)
        if not options.stream:
            done = codec.decode_response(await self.transport.post_json(target, raw), origin)
            self._append([*pending, done.message])
            yield done
            return
        fold = codec.StreamFold(origin)
        finished = False
        try:
            async for chunk in self.transport.stream_events(target, raw):
                for event in fold.add(chunk):
                    yield event
            if fold.finish_reason is None:
                raise StreamInterrupted("the stream ended before the provider finished the "
                                        "answer")
            done = fold.finish(complete=True)
            self._append([*pending, done.message])
            finished = True
            yield done
        finally:
            if not finished and options.keep_partial and fold.saw_chunk:
                partial = fold.finish(complete=False)
                if partial.message.parts:
                    self._append([*pending, partial.message])

    def _log(self, request: _Request) -> None:
        if self.log is None:
            return
        route, body = request.route, request.body
        summary = registry.codec(self.provider.api).wire_summary(body, self._cache)
        self.log.write({
            "session": self.id, "route": route.row, "api": route.api,
            "provider": route.provider, "host": route.host, "model": route.model,
            "status": request.status, "outcome": request.outcome or "cancelled",
            "attempt": request.attempt, "stream": bool(body.get("stream")),
            "duration_ms": round((time.monotonic() - request.started) * 1000, 1),
            "retries": self.transport.retries - request.retries_before, **summary,
            "verdicts": [v.verdict.to_json() for v in request.learned],
        })


@dataclass(frozen=True, slots=True)
class _Learned:
    verdict: replay.Verdict
    classification: fallback.Classification


@dataclass(kw_only=True, slots=True)
class _Request:
    """One HTTP request of a turn, as the request log records it."""

    route: Route
    body: Mapping[str, Any]
    attempt: int
    learned: tuple[_Learned, ...]
    started: float
    retries_before: int
    status: int | None = None
    outcome: str = ""

    def finish(self, status: int | None, outcome: str) -> None:
        self.status, self.outcome = status, outcome


def _as_message(turn: str | Message | Sequence[ToolResult]) -> Message:
    if isinstance(turn, str):
        return user(turn)
    if isinstance(turn, Message):
        return turn
    return tool_results(turn)
