"""One client request as a turn: rehydrate, pick the session, run the engine, store the answer.

Owns the gateway's ``TurnSink``: it keeps what the engine reports in memory (the engine calls a
sink synchronously, on the event loop) and ``persist`` writes it afterwards in worker-thread
calls — the learned lessons merged into the session's config and the tenant's ledger, then the
client's new messages and the answer through ``persist.write_turn``, the path the CLI's
``Session`` uses too: appended atomically with the answer's lookup keys where the matched turn
is the session's head, on a branch where it is not (a client that regenerated an answer and went
on), written once (retried only while nothing was written), rescued to a file when it cannot be
stored. A new conversation's session is stored with its first answer (its id is chosen before, so
every response names it): a failed, refused or abandoned request leaves no session behind. The
answer is stored before the client sees its end, so every turn a client can resend is findable,
also after a SIGKILL; a client told "not stored" finds nothing stored. Knows no wire names:
parsing and rendering are the client codec's, upstream shaping is the upstream codec's (through
the ``TurnEngine``).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from thoughtline.codecs import registry
from thoughtline.codecs.base import Codec, Lesson
from thoughtline.codecs.face import ClientRequest
from thoughtline.config import ProviderConfig
from thoughtline.errors import NotFound, StoreError
from thoughtline.events import Done
from thoughtline.gateway import mint, rehydrate
from thoughtline.gateway.config import GatewayConfig, Upstream
from thoughtline.gateway.memo import ItemsMemo, Memos
from thoughtline.gateway.offload import off_loop
from thoughtline.gateway.storage import AsyncStore
from thoughtline.messages import Message
from thoughtline.modelconfig import ModelConfig, merge
from thoughtline.persist import TurnWrite, Written, default_rescue_dir, write_turn
from thoughtline.store.base import SessionRecord, Store, new_session_id
from thoughtline.store.rehydration import NAMED, IndexKey, Rehydrated
from thoughtline.turn import TurnInput
from thoughtline.verdicts import Verdict
from thoughtline.wire.cache import WireCache


class UnknownSession(NotFound):
    """``X-Thoughtline-Session`` names no session of this tenant (HTTP 404)."""


@dataclass(kw_only=True, slots=True)
class GatewaySink:
    """Collects one turn's outcome; ``persist`` stores it (the engine's calls stay cheap)."""

    lessons: list[Lesson] = field(default_factory=list)
    pending: Sequence[Message] = ()
    done: Done | None = None
    #: Why the lessons could not be stored ("" : they were, or there were none); the turn's own
    #: outcome does not depend on it (a lesson not kept is learned again, one request later).
    lessons_unsaved: str = ""

    def learned(self, lesson: Lesson) -> None:
        self.lessons.append(lesson)

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        self.pending, self.done = pending, done

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        """The client never received a whole answer it could resend: nothing to index."""

    def log_fields(self) -> dict[str, Any]:
        """What the request log says of the turn's lessons: why they were not stored, and the
        fallback wordings that matched."""
        fields: dict[str, Any] = {}
        if self.lessons_unsaved:
            fields["lessons_unsaved"] = self.lessons_unsaved
        wordings = [lesson.wording for lesson in self.lessons if lesson.wording]
        if wordings:
            fields["wordings"] = wordings
        return fields


@dataclass(frozen=True, kw_only=True, slots=True)
class Prepared:
    """Everything a request needs once the store has been asked."""

    tenant: str
    session: SessionRecord
    upstream: Upstream
    turn: TurnInput
    rehydration: rehydrate.Rehydration
    stored_config: ModelConfig
    #: The messages as the client sent them (the answer's place is computed from these).
    client_messages: Sequence[Message] = ()
    #: Further keys the answer is stored under (its minted reference, the client's session name).
    answer_keys: Sequence[IndexKey] = ()
    #: How many turns ``session`` holds up to the matched turn: where the answer goes.
    at: int = 0
    #: The answer's place (``rehydrate.Chain.places[-1]`` of ``client_messages``).
    place: bytes = b""
    #: ``session`` is not stored yet (a new conversation): it is stored with the turn's answer,
    #: so a request that stores no turn leaves no session behind.
    new: bool = False
    #: A large request: its CPU work runs off the event loop (``offload``).
    heavy: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class _Found:
    session: SessionRecord
    matched: rehydrate.Rehydration
    verdicts: list[Verdict]
    at: int
    new: bool = False


def named_key(name: str) -> IndexKey:
    """The key a turn is stored under by the conversation id its client named."""
    return IndexKey(kind=NAMED, key="n1:" + hashlib.sha256(name.encode()).hexdigest())


@dataclass(frozen=True, kw_only=True, slots=True)
class _Ask:
    """What one request asks the store: the session it names (ours, or the client's own name
    for its conversation) and the minted references its messages carried (index → reference)."""

    ref: str | None
    hint: str
    minted: Mapping[int, IndexKey]


def _scope(store: Store, tenant: str, ask: _Ask) -> tuple[SessionRecord | None, str | None]:
    if ask.ref:
        try:
            named = store.get_session(ask.ref, tenant=tenant)
        except NotFound:
            raise UnknownSession(f"X-Thoughtline-Session {ask.ref!r} names no session of this "
                                 "tenant; omit the header to start or find one") from None
        return named, named.id
    if ask.hint:  # the client's own conversation id: the session of its newest turn, if any
        (found,) = store.rehydrate(tenant, [named_key(ask.hint)])
        if found is not None:
            return None, found.session_id
    return None, None


TITLE_WORDS = 60  # characters of the first user message a new gateway session is titled with


def session_title(messages: Sequence[Message], upstream: str, tenant: str) -> str:
    """A new gateway session's title: the start of the client's first user message on one line,
    then the upstream and the tenant's label (its stored id, never its token; none without
    tokens), so ``sessions list`` tells gateway conversations apart."""
    first = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
    text = " ".join(first.split())
    if len(text) > TITLE_WORDS:
        text = text[:TITLE_WORDS - 1].rstrip() + "…"
    where = f"via {upstream}" + (f", tenant {tenant}" if tenant else "")
    return f"{text} ({where})" if text else f"gateway ({where})"


def _lookups(store: Store, tenant: str, messages: Sequence[Message], ask: _Ask,
             provider: ProviderConfig, tools: Any, create: bool = True,
             title: str = "gateway", digests: rehydrate.Chain | None = None) -> _Found:
    """One worker-thread visit: the named session, one lookup per message, the ledger
    (``digests``: the messages' ``rehydrate.chain``, computed once per request)."""
    named, scope = _scope(store, tenant, ask)
    digests = digests or rehydrate.chain(messages)
    plain = rehydrate.lookup_keys(messages, digests)
    keys = [ask.minted.get(i, k) for i, k in enumerate(plain)]
    hits: list[Rehydrated | None] = (store.rehydrate(tenant, keys, session_id=scope) if any(keys)
                                     else [None] * len(keys))
    second = [(p if k is not p else rehydrate.fallback_key(m, k, v)) if h is None else None
              for m, k, p, h, v in zip(messages, keys, plain, hits, digests.visible,
                                       strict=True)]
    if any(second):  # only for turns whose place was not found (e.g. the client edited history)
        for index, hit in enumerate(store.rehydrate(tenant, second, session_id=scope)):
            if hit is not None:
                keys[index], hits[index] = second[index], hit
    matched = rehydrate.apply(messages, keys, hits, digests)
    session = named
    wanted = matched.session_id or scope
    if session is None and wanted:
        session = store.get_session(wanted, tenant=tenant)
    if session is None:  # a new conversation: its session is stored with its first answer
        now = time.time()
        new = SessionRecord(id=new_session_id() if create else "", title=title if create else "",
                            created_at=now, updated_at=now, tenant=tenant,
                            model_config=ModelConfig(provider=provider,
                                                     tools=tuple(tools)).to_json())
        return _Found(session=new, matched=matched, verdicts=store.verdicts(tenant=tenant), at=0,
                      new=create)
    if not create:
        return _Found(session=session, matched=matched, verdicts=store.verdicts(tenant=tenant),
                      at=session.turns)
    session, at = _place(store, session, matched)
    return _Found(session=session, matched=matched, verdicts=store.verdicts(tenant=tenant), at=at)


def _place(store: Store, session: SessionRecord,
           matched: rehydrate.Rehydration) -> tuple[SessionRecord, int]:
    """Where the answer goes: after the matched turn. When that turn is not the session's head
    (the client regenerated an answer and went on), on a branch forking right after it — made
    now, so the response names the session the answer will be in."""
    at = store.position(session.id, matched.head_id) if matched.head_id else None
    if at is None or at == session.turns:  # None: the session does not show it (compacted)
        return session, session.turns
    return store.branch(session.id, at=at, title=f"{session.title or 'gateway'} (branch)"), at


#: Conversations whose wire cache is kept in memory (each holds its turns' encoded items).
CACHED_CONVERSATIONS = 64


class Conversations:
    """Turns requests into engine turns and stores their outcomes."""

    def __init__(self, config: GatewayConfig, store: AsyncStore) -> None:
        self.config = config
        self.store = store
        self.rescue_dir = default_rescue_dir(store.store)
        self._caches: OrderedDict[tuple[str, str, str], WireCache] = OrderedDict()
        #: What a resent conversation's requests share (``memo``): its items' conversion, its
        #: messages' digests. ``Memos(entries=0)`` turns it off.
        self.memos = Memos()

    def items_memo(self, tenant: str) -> ItemsMemo | None:
        """``tenant``'s memo of its items' conversion, for its face's parse (None: off)."""
        return self.memos.items(tenant)

    def wire_cache(self, tenant: str, conversation: str, codec: Codec) -> WireCache:
        """The codec's wire cache of one conversation, kept across its requests (the most
        recently used ``CACHED_CONVERSATIONS``): a request that resends the history the last
        one sent encodes only its new turns and splices the bytes earlier requests serialized.
        A cache's output depends only on the messages it is given (it checks them by identity
        or equality), so a shared key costs a miss, never a wrong request."""
        key = (tenant, conversation, codec.api)
        cache = self._caches.pop(key, None)  # (an empty cache is falsy: compared to None)
        if cache is None:
            cache = WireCache()  # the core's: one per conversation, whatever its API
        self._caches[key] = cache
        while len(self._caches) > CACHED_CONVERSATIONS:
            self._caches.popitem(last=False)
        return cache

    async def prepare(self, tenant: str, request: ClientRequest, upstream: Upstream,
                      model: str, session_ref: str | None, *,
                      minted: Mapping[int, str] | None = None,
                      answer_ref: str = "", create: bool = True,
                      heavy: bool = False) -> Prepared:
        """The turn for ``request``. ``minted``: the verified references the client's messages
        carried (index → reference); ``answer_ref``: the reference of the answer's own minted
        values (it is stored under it); ``create=False``: a new conversation gets no session
        (its ``id`` is "": a request that is only priced, never sent); ``heavy``: the digest
        chain is computed off the event loop."""
        provider = _with_headers(upstream.for_model(model), request)
        codec = registry.codec(provider.api)
        messages, digests = await off_loop(heavy, _digested, request, self.memos)
        ask = _Ask(ref=session_ref, hint=request.session_hint,
                   minted={i: mint.index_key(r) for i, r in (minted or {}).items()})
        found = await self.store.call(_lookups, self.store.store, tenant, messages, ask,
                                      provider, request.tools, create,
                                      session_title(messages, upstream.name, tenant), digests)
        matched, session = found.matched, found.session
        stored = ModelConfig.from_json(session.model_config) if session.model_config else \
            ModelConfig(provider=provider)
        config = replace(stored, provider=provider, tools=request.tools,
                         params=_params(request, codec))
        turn = TurnInput(codec=codec, provider=provider, config=config,
                         history=matched.history, pending=matched.pending,
                         ledger=tuple(found.verdicts), session=session.id,
                         # keyed by the session the client's history was found in: a branch
                         # made for this answer shares its parent's turns
                         cache=self.wire_cache(tenant, matched.session_id or session.id, codec)
                         if create else None)
        extra = [mint.index_key(answer_ref)] if answer_ref else []
        if request.session_hint:
            extra.append(named_key(request.session_hint))
        return Prepared(tenant=tenant, session=session, upstream=upstream, turn=turn,
                        rehydration=matched, stored_config=stored,
                        client_messages=messages, at=found.at, answer_keys=tuple(extra),
                        place=digests.places[-1], new=found.new, heavy=heavy)

    async def persist(self, prepared: Prepared, sink: GatewaySink) -> Written | None:
        """Store what the turn learned and (when it finished) the turn itself, once.

        Returns where the turn was stored (None: it did not finish); raises ``StoreError``
        (``persist.Unsaved`` naming the rescue file) when it could not be, and then nothing of
        it is stored.
        """
        session = prepared.session
        if sink.lessons:
            update = _merge_lessons(prepared, sink.lessons)
            if prepared.new:  # the session's lessons go with it, stored with its first turn
                session = replace(session, model_config=update(session.model_config))
            try:
                await self.store.learned(
                    None if prepared.new else session.id, update,
                    [x.verdict for x in sink.lessons if x.verdict is not None],
                    tenant=prepared.tenant)
            except StoreError as exc:
                sink.lessons_unsaved = str(exc)
        done = sink.done
        if done is None:
            return None
        place = prepared.place or rehydrate.prefixes(prepared.client_messages)[-1]
        write = TurnWrite(session=session, at=prepared.at, new=prepared.new,
                          messages=[*sink.pending, done.message], tenant=prepared.tenant,
                          keys=[*rehydrate.index_keys(done.message, place),
                                *prepared.answer_keys])
        return await self.store.call(write_turn, self.store.store, write,
                                     rescue_dir=self.rescue_dir)


    async def store_compaction(self, prepared: Prepared, bundle: Message,
                               ref: str) -> Written:
        """Store a compaction's bundle under the answer's minted reference ``ref`` through the
        same path as a turn: after the matched turn, on a branch when the head moved, in a
        rescue file (``persist.Unsaved``) when it cannot be stored."""
        write = TurnWrite(session=prepared.session, at=prepared.at, messages=[bundle],
                          tenant=prepared.tenant, keys=[mint.index_key(ref)], new=prepared.new)
        return await self.store.call(write_turn, self.store.store, write,
                                     rescue_dir=self.rescue_dir)


def _params(request: ClientRequest, codec: Codec) -> Mapping[str, Any]:
    """The client's parameters the upstream's API reads (the face maps or drops the rest)."""
    return request.params_to(codec.api)


def _with_headers(provider: ProviderConfig, request: ClientRequest) -> ProviderConfig:
    """The provider with the client's headers its API takes (e.g. Anthropic versions, betas)."""
    given = request.headers_for.get(provider.api)
    if not given:
        return provider
    return replace(provider, headers={**(provider.headers or {}), **given})


def _digested(request: ClientRequest, memos: Memos,
              ) -> tuple[tuple[Message, ...], rehydrate.Chain]:
    """The client's messages (``_unminted``) and their digest chain, computed once: for the
    lookups and the answer's place. The chain is taken of the messages as parsed (the objects
    ``memos.element`` remembers): it is the same, as it digests no reasoning."""
    return _unminted(request, memos.unreasoned), rehydrate.chain(request.messages,
                                                                  memos.element)


def _unminted(request: ClientRequest, unreasoned: Callable[[Message], Message],
              ) -> tuple[Message, ...]:
    """The client's messages without the reasoning it carried next to a minted value: that text
    is the gateway's own copy of a stored turn (swapped back in when the value verifies), never
    the client's to send — a forged or foreign value leaves the turn without reasoning.
    (``unreasoned``: a message without its reasoning parts, ``Memos.unreasoned``.)"""
    if not request.minted:
        return request.messages
    carried = {m.message for m in request.minted}
    return tuple(unreasoned(m) if i in carried else m for i, m in enumerate(request.messages))


def _merge_lessons(prepared: Prepared, lessons: Sequence[Lesson]) -> Any:
    base = prepared.stored_config
    mine = base
    for lesson in lessons:
        mine = mine.after(lesson)

    def update(stored: Mapping[str, Any]) -> Mapping[str, Any]:
        return merge(stored, mine, base=base)

    return update
