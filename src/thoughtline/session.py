"""Sessions: a durable conversation on top of the stateless turn engine.

Owns the session lifecycle: create, resume, branch, switch model; hand each turn to the
``TurnEngine`` with the stored history and the typed model config, and be its ``TurnSink`` —
persist what a rejection taught (merged into the stored config, never overwriting another
writer's), append finished turns atomically, keep an interrupted answer marked incomplete, and
never lose a finished, billed answer when the store write fails. Turns are written through
``persist.write_turn``, the gateway's path too: the head check (a branch when another writer went
on), the retry while nothing was written, the rescue file the error names. It never mutates stored
history; it knows no wire field names
(the codec's), no API (the registry's) and no SQL (the store's).
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thoughtline import config as config_mod
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import Codec, Lesson
from thoughtline.codecs.common import refused_params
from thoughtline.errors import StoreError, UsageError
from thoughtline.events import Done, Event
from thoughtline.messages import Message, ToolResult, ToolSpec, as_message
from thoughtline.messages import system as system_message
from thoughtline.modelconfig import (
    ModelConfig,
    hold_imported,
    imported_held,
    merge,
    merge_settings,
    provider_untrusted,
    unheld_import,
)
from thoughtline.persist import (
    WRITE_ATTEMPTS,
    NewGeneration,
    TurnWrite,
    default_rescue_dir,
    write_turn,
)
from thoughtline.requestlog import RequestLog
from thoughtline.routes.resolve import Route
from thoughtline.store.base import LoadProblem, ProblemKind, SessionRecord, Store
from thoughtline.turn import TurnEngine, TurnInput, TurnOptions
from thoughtline.wire.cache import WireCache
from thoughtline.wire.stored import StoredHistory

if TYPE_CHECKING:
    from thoughtline.transport import HttpTransport

__all__ = ["Session", "TurnOptions"]

_COMPACTION_MOVED = ("Session.compaction is gone: compaction wraps the session now; call "
                     "AutoCompaction(...).send(session, turn) or .stream(session, turn) "
                     "(thoughtline.compaction.auto)")

_WRITE_ATTEMPTS = WRITE_ATTEMPTS  # delays before each try of a failed turn write


class Session:
    """A durable conversation. Create with ``Session.create`` or ``Session.resume``."""

    def __init__(self, *, store: Store, record: SessionRecord, history: Sequence[Message],
                 problems: Sequence[LoadProblem] = (), transport: HttpTransport | None = None,
                 log: RequestLog | None = None,
                 provider: config_mod.ProviderConfig | None = None,
                 rescue_dir: Path | None = None, ids: Sequence[str] | None = None) -> None:
        self.store = store
        self.record = record
        #: The history: a plain list, or the stored one a resume splices (decoded on first need).
        self._history: list[Message] | StoredHistory = list(history)
        self.problems = tuple(problems)
        self._transport = transport
        self.log = log
        self._config = ModelConfig.from_json(record.model_config)
        self._loaded = self._config
        if provider is not None and provider.headers:
            # Headers live in memory only (they may hold secrets): take them from the caller.
            self._config = replace(self._config, provider=replace(
                self._config.provider, headers=provider.headers))
        self._cache = WireCache()
        self._rescue_dir = rescue_dir
        self._busy = False
        # Content ids of ``_history``, for stored wire forms (None: unknown, no forms stored).
        self._ids: list[str] | None = list(ids) if ids is not None else (
            [] if not history else None)
        # The params and settings an imported file named, once the user trusts it (in memory
        # only: the stored config never holds them, so the next resume asks again).
        self._trusted: tuple[Mapping[str, Any], Mapping[str, Mapping[str, Any]]] | None = None

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(cls, store: Store, provider: config_mod.ProviderConfig, *, title: str = "",
               tools: Sequence[ToolSpec] = (), params: Mapping[str, Any] | None = None,
               system: str | None = None, tenant: str = "", **kwargs: Any) -> Session:
        codec = registry.codec(provider.api)  # an unknown API: a usage error, nothing stored
        refused = refused_params(params or {}, codec.owned)
        if refused:
            raise UsageError(f"request params cannot set {', '.join(refused)}: the {codec.api} "
                             "request builder writes them itself (params only add fields)")
        model_config = ModelConfig(provider=provider, tools=tuple(tools),
                                   params=dict(params or {})).to_json()
        record = store.create_session(title=title, model_config=model_config, tenant=tenant)
        session = cls(store=store, record=record, history=(), provider=provider, **kwargs)
        if system:
            session._append([system_message(system)])
        return session

    @classmethod
    def resume(cls, store: Store, ref: str | None = None, *,
               config: config_mod.Config | None = None, **kwargs: Any) -> Session:
        """Reopen by id, unique prefix or title; ``None`` takes the latest session.

        ``config`` (the loaded ``config.toml``) supplies what is never stored, such as a named
        provider's extra headers.
        """
        record = store.get_session(ref) if ref else store.latest_session()
        if record is None:
            raise UsageError("there is no session to continue yet: start one with "
                             "'thoughtline chat'")
        if unheld_import(record.model_config):  # imported before a file's params were held
            record = store.update_model_config(
                record.id, lambda stored: hold_imported(stored) if unheld_import(stored)
                else stored)
        if config is not None and "provider" not in kwargs and not provider_untrusted(
                record.model_config):  # an imported URL never gets config.toml's headers
            stored = ModelConfig.from_json(record.model_config).provider
            headers = config_mod.headers_for(stored.id, config)
            if headers:
                kwargs["provider"] = replace(stored, headers=headers)
        session = cls(store=store, record=record, history=(), **kwargs)
        if not session._resume_spliced():
            loaded = store.load_history(record.id)
            session._history = [m.message for m in loaded.messages]
            session._ids = [m.id for m in loaded.messages]
            session.problems = tuple(loaded.problems)
        return session

    def _resume_spliced(self) -> bool:
        """Resume from stored wire forms (read and verified, not rebuilt) when the codec's turns
        are stored. The canonical history is decoded, and verified, only when something needs
        it."""
        digest = self._forms_digest(TurnEngine.plan(self._turn([])))
        if digest is None:
            return False
        found = self.store.load_wire_forms(self.id, digest)
        ids = list(map(operator.itemgetter(1), found.entries))
        scan = replay.scan_from_json(found.scan) if found.scan is not None else None
        self._history = StoredHistory(ids=ids, forms=found.forms, plan=digest,
                                      load=self._loader(self.id), scan=scan, walk=found.walk)
        self._ids = list(ids)
        failed = set(found.problems)  # (most resumes: none, and no entry is looked at)
        self.problems = tuple(
            LoadProblem(seq=seq, kind=ProblemKind.WIRE_FORM, digest=mid,
                        detail="its stored wire form failed its digest: it was left out and is "
                               "rebuilt from the canonical history")
            for seq, mid in found.entries if mid in failed) if failed else ()
        return True

    def _forms_digest(self, plan: replay.ReplayPlan) -> str | None:
        """The plan digest the codec's stored forms are keyed by (None: it stores none)."""
        codec = self.codec
        return self._cache.digest(codec, plan) if codec.turns is not None else None

    def _loader(self, session_id: str) -> Callable[[], list[Message]]:
        """Decode the stored history of ``session_id`` on first need; what the verified load
        finds damaged is added to ``problems`` (and left out, as on an ordinary resume)."""
        def load() -> list[Message]:
            loaded = self.store.load_history(session_id)
            known = set(self.problems)
            self.problems += tuple(p for p in loaded.problems if p not in known)
            return [m.message for m in loaded.messages]
        return load

    # --- state --------------------------------------------------------------------------------

    @property
    def transport(self) -> HttpTransport:
        """The HTTP transport, made on first use (httpx is only imported to send)."""
        if self._transport is None:
            from thoughtline.transport import HttpTransport
            from thoughtline.transport.http import TransportConfig

            # The provider's own timeouts (config.toml), the transport's defaults otherwise.
            self._transport = HttpTransport(TransportConfig(**self.provider.timeouts()))
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
    def view(self) -> Sequence[Message]:
        """The history as held, not copied (a resumed one is decoded only when indexed): read
        it, never edit it."""
        return self._history

    @property
    def turns(self) -> int:
        """How many turns the history holds (without decoding a resumed one)."""
        return len(self._history)

    @property
    def config(self) -> ModelConfig:
        return self._config

    @property
    def provider(self) -> config_mod.ProviderConfig:
        return self._config.provider

    @property
    def wire_cache(self) -> WireCache:
        """The memo of this session's turns' wire forms (the estimator shares it)."""
        return self._cache

    @property
    def codec(self) -> Codec:
        return registry.codec(self._config.provider.api)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return self._config.tools

    @property
    def params(self) -> Mapping[str, Any]:
        return self._config.params

    @property
    def verdicts(self) -> tuple[replay.Verdict, ...]:
        return self._config.verdicts

    @property
    def fingerprints(self) -> frozenset[str]:
        return self._config.fingerprints

    @property
    def route(self) -> Route:
        return registry.route_for(self.codec, self.provider)

    def trust_imported(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Send the request params and settings this session's imported file named (held out
        of its config at import) with this session's requests, under its own, for as long as
        this object lives; nothing is written. Returns them (both empty: nothing was held)."""
        params, settings = imported_held(self.record.model_config)
        self._trusted = (params, settings) if params or settings else None
        self._cache = WireCache()
        return params, settings

    def _request_config(self) -> ModelConfig:
        """The config requests are built from: the stored one, plus what a trusted file held."""
        if self._trusted is None:
            return self._config
        params, settings = self._trusted
        return replace(self._config, params={**params, **self._config.params},
                       settings=merge_settings(settings, self._config.settings))

    def set_model(self, model: str) -> None:
        self.set_provider(replace(self.provider, model=model))

    def set_provider(self, provider: config_mod.ProviderConfig) -> None:
        registry.codec(provider.api)
        self._save(replace(self._config, provider=provider))
        self._cache = WireCache()

    def _save(self, mine: ModelConfig) -> None:
        """Merge ``mine`` into the stored config (another process may have written meanwhile)."""
        base = self._loaded
        record = self.store.update_model_config(self.id, lambda stored: merge(stored, mine,
                                                                              base=base))
        self.record = record
        stored = ModelConfig.from_json(record.model_config)
        self._loaded = stored
        self._config = replace(stored, provider=replace(stored.provider,
                                                        headers=mine.provider.headers))

    def remember(self, settings: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge per-session settings (by namespace) into the stored config."""
        self._save(self._config.learned(settings=settings))

    def reload(self) -> None:
        """Re-read the record and history from the store (after a compaction or a restore)."""
        self.record = self.store.get_session(self.id)
        loaded = self.store.load_history(self.id)
        self._history = [m.message for m in loaded.messages]
        self._ids = [m.id for m in loaded.messages]
        self.problems = tuple(loaded.problems)
        self._store_wire_forms()  # the new turns' forms, so the next resume splices them too

    def replace_history(self, messages: Sequence[Message], *, at: int, head: str | None,
                        note: Mapping[str, Any]) -> int:
        """Continue from ``messages`` — a compaction of the first ``at`` stored turns, ``head``
        the last one's id — as the session's next generation, through the one persistence path
        (``persist.write_turn``): on a branch the session follows when another writer went on
        meanwhile; when it cannot be stored, saved to the rescue file the error names and the
        session goes on as it was. Returns the archived generation's number."""
        written = write_turn(self.store, TurnWrite(
            session=self.record, at=at, messages=messages, tenant=self.record.tenant,
            branch_title=f"{self.record.title or 'untitled'} (compacted)",
            replaces=NewGeneration(head=head, note=note)),
            rescue_dir=self._rescue_dir or default_rescue_dir(self.store),
            attempts=_WRITE_ATTEMPTS)
        self.record = written.session
        self.reload()
        assert written.generation is not None, "a replacing write names its generation"
        return written.generation

    def _append(self, messages: Sequence[Message]) -> None:
        """Store turns as they are (one try: a failure is the store's own error)."""
        self._write(messages, rescue_dir=None, attempts=(0.0,))

    def _write(self, messages: Sequence[Message], *, rescue_dir: Path | None,
               attempts: Sequence[float]) -> None:
        """Append through the one persistence path (``persist``): after the history this
        session holds, or — when another writer extended the session since it was loaded — on
        a branch from there, since this answer was written against that history."""
        written = write_turn(self.store, TurnWrite(
            session=self.record, at=len(self._history), messages=messages,
            tenant=self.record.tenant,
            branch_title=f"{self.record.title or 'untitled'} (concurrent)"),
            rescue_dir=rescue_dir, attempts=attempts)
        if written.branched:
            self.record = written.session
        self._history.extend(messages)
        if self._ids is not None:
            self._ids.extend(m.id for m in written.stored)
            self._store_wire_forms()

    def _store_wire_forms(self) -> None:
        """Store the wire forms of the turns the next request carries that are not stored yet
        (the core's cache encodes each turn once: these are the bytes that request splices),
        and where the unanswered-call scan stands after them."""
        ids = self._ids
        if ids is None:
            return
        from thoughtline.store.wireforms import keyed_form, scan_key

        codec = self.codec
        turn = self._turn([])
        plan = TurnEngine.plan(turn)
        digest = self._forms_digest(plan)
        if digest is None:
            return
        forms = self._cache.forms(codec, self._history, ids, plan,
                                  TurnEngine.spec(turn, stream=True))
        rows = list(forms)
        if ids:  # and where the unanswered-call scan stands after them, so a resume starts there
            scan = replay.scan_to_json(replay.scan_state(self._history))
            rows.append(keyed_form(scan_key(ids), ids, scan))
        try:
            self.store.put_wire_forms(rows, drop=self._cache.superseded())
        except StoreError:
            self._cache.unwritten(forms)
            return  # a cache: the next resume re-encodes what is missing

    def branch(self, at: int | None = None, title: str = "") -> Session:
        """A new session sharing the first ``at`` turns (default all), reasoning untouched."""
        record = self.store.branch(self.id, at=at, title=title)
        kept = list(self._history) if at is None else self._history[:at]
        ids = None if self._ids is None else self._ids[:len(kept)]
        return Session(store=self.store, record=record, history=kept, transport=self._transport,
                       log=self.log, provider=self.provider, rescue_dir=self._rescue_dir,
                       ids=ids)

    # --- requests -----------------------------------------------------------------------------

    def _turn(self, pending: Sequence[Message], config: ModelConfig | None = None) -> TurnInput:
        return TurnInput(codec=self.codec, provider=self.provider,
                         config=config or self._request_config(),
                         history=self._history, pending=pending,
                         ledger=self.store.verdicts(tenant=self.record.tenant),
                         cache=self._cache, session=self.id)

    def append(self, messages: Sequence[Message]) -> None:
        """Store turns that were answered elsewhere (an import, a test, a benchmark) as if they had
        been answered here: atomically, with their wire forms. Nothing is sent."""
        self._append(messages)

    def request_bytes(self, pending: Sequence[Message] = (), *, stream: bool = False) -> bytes:
        """The exact bytes the next request would carry (history + pending)."""
        encoded, _ = TurnEngine.build(self._turn(pending), stream=stream)
        return encoded.raw

    def build_request(self, pending: Sequence[Message] = (), *, stream: bool = False,
                      verdicts: Iterable[replay.Verdict] | None = None,
                      ) -> tuple[Mapping[str, Any], replay.ReplayPlan]:
        """The body the next request would carry (history + pending), and its plan."""
        config = self._request_config()
        turn = self._turn(pending)
        if verdicts is not None:
            turn = replace(turn, config=replace(config, verdicts=tuple(verdicts)), ledger=())
        encoded, plan = TurnEngine.build(turn, stream=stream)
        return encoded.body, plan

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

        At most two requests per turn (see ``TurnEngine.run``). One turn at a time: a second
        turn attempted while one is in flight is refused (nothing is sent or interleaved).
        """
        if self._busy:
            raise UsageError(f"session {self.id[:12]} is already answering a turn; wait for it "
                             "to finish (one turn at a time per session)")
        self._busy = True
        try:
            engine = TurnEngine(self.transport, self.log)
            async for event in engine.run(self._turn([as_message(turn)]), _Sink(self),
                                          options or TurnOptions()):
                yield event
        finally:
            self._busy = False

    # --- the sink side ------------------------------------------------------------------------

    @property
    def compaction(self) -> None:
        raise AttributeError(_COMPACTION_MOVED)

    @compaction.setter
    def compaction(self, value: object) -> None:
        # A session no longer hands itself to compaction: setting the old attribute would
        # silently compact nothing, so it says where compaction went instead.
        raise AttributeError(_COMPACTION_MOVED)

    def _learned(self, lesson: Lesson) -> None:
        self._save(self._config.after(lesson))
        if lesson.verdict is not None:
            self.store.record_verdict(lesson.verdict, tenant=self.record.tenant)

    def _store_turn(self, messages: Sequence[Message]) -> None:
        """A finished answer: retried while nothing was written; one that still cannot be
        stored is spilled to a rescue file the error names (``persist.write_turn``)."""
        self._write(messages, rescue_dir=self._rescue_dir or default_rescue_dir(self.store),
                    attempts=_WRITE_ATTEMPTS)


class _Sink:
    """The session as the turn engine's sink."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def learned(self, lesson: Lesson) -> None:
        self._session._learned(lesson)

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        self._session._store_turn([*pending, done.message])

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        if partial is not None:
            self._session._store_turn([*pending, partial])
