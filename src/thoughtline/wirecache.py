"""The one wire cache: every turn encoded once, stored under what it depends on, spliced after.

A codec with a turn encoder (``codecs.base.TurnEncoder``) encodes a request turn by turn; this
cache walks the history once per request and takes each turn's bytes from, in order:

1. the previous walk, when the history only grew since and the walk starts in an equal state (a
   session's next request: only its new turns are walked);
2. the stored form of a resumed history's turn under (message id, plan digest, context) — read and
   verified by the store, spliced as ``orjson.Fragment`` bytes, nothing decoded;
3. this session's memo of turns it encoded, by (message identity, plan digest, context);
4. ``encode_turn`` — once: the bytes that go into the request are the bytes written through to
   the store (``forms``) after the turn is appended, so no turn is encoded twice.

A stored turn's ``TurnFacts`` (and its after facts) come with its form, so a resumed history is
walked without being decoded; a turn with no form for the plan at all is decoded (the whole stored
history, once, through the store's verified load) and encoded. A codec without a turn encoder is
encoded as a whole by its own ``encode_request`` with its own memo (``legacy``).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

import orjson

from thoughtline.codecs.base import (
    Codec,
    Context,
    Encoded,
    Named,
    RequestSpec,
    TurnEncoder,
    TurnFacts,
    Walk,
    context_key,
)
from thoughtline.messages import Message, Text
from thoughtline.replay import ReplayPlan, plan_digest
from thoughtline.store.wireforms import WireForm
from thoughtline.stored import Joined, StoredHistory
from thoughtline.wiremetas import Metas, Unread

__all__ = ["WireCache", "encode"]

#: How many pieces a remembered walk's array content may be in before they are joined again.
_CHUNKS = 32
#: What a history may be followed by on its next request (``WireCache.forms``).
_NEXT_USER = Message(role="user", parts=(Text(text="…"),))


@dataclass(frozen=True, kw_only=True, slots=True)
class _Remembered:
    """The last walk under one plan: what a history that only grew continues from."""

    tokens: list[object]  # per turn: its stored message id, or the message itself
    start: object
    states: list[object]  # the state after each turn (non-flat encoders only)
    turns: list[bytes]
    afters: list[object]  # after facts, or (None) a stored form's, not parsed yet
    #: (non-flat encoders only: a flat walk reads facts on demand); ``Unread`` while a resumed
    #: history's stored turns are not all read (the next walk reads them)
    facts: list[object] | Unread
    contexts: list[Context]
    #: The array content in pieces (``Fragment``s): earlier requests' turns joined into a few
    #: chunks, then the last walk's own turns one piece each (no copy of them yet)
    chunks: list[Any]
    ends: list[int]  # how many turns each chunk covers up to (the singles have no entry)
    singles: int  # where the last walk's one-turn pieces begin in ``chunks``


class _Lazy(Sequence[Any]):
    """A sequence whose entries are resolved on first read (a flat walk's facts and after
    facts: most requests never read them, a stored turn's are parsed only if asked)."""

    __slots__ = ("_entries", "_resolve")

    def __init__(self, entries: list[object], resolve: Any) -> None:
        self._entries, self._resolve = entries, resolve

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._resolve(index, self._entries[index])


def encode(codec: Codec, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
           cache: WireCache | None) -> Encoded:
    """The request for ``history``: through ``cache`` when there is one (which gives a codec
    without a turn encoder its own memo, from its ``new_cache``)."""
    if not isinstance(cache, WireCache):
        return codec.encode_request(history, plan, spec, cache)
    return cache.encode(codec, history, plan, spec)


class WireCache:
    """A session's memo of its turns' wire forms (turns are immutable; see the module doc)."""

    def __init__(self) -> None:
        #: Per plan digest: each turn encoded here, by ``_memo_key`` (its message's identity,
        #: and its context unless that is ""), with the message (an id can be reused).
        self._memo: dict[str, dict[object, tuple[Message, bytes, Named]]] = {}
        #: Per encoder type: the stored metas read so far (each distinct meta parsed once).
        self._readers: dict[type, Metas] = {}
        self._fact_memo: dict[tuple[int, type], tuple[Message, TurnFacts]] = {}
        self._digests: dict[tuple[str, str, Any], str] = {}
        self._last: dict[tuple[str, str], _Remembered] = {}
        self._legacy: dict[str, Any] = {}
        #: (message id, plan digest, context) of every form known to be stored.
        self._written: set[tuple[str, str, str]] = set()
        self._flat_done: dict[str, list[str]] = {}  # digest -> ids whose forms are all written
        #: The body an API's module-level ``encode_request(cache=…)`` last returned, and the
        #: index of its request (``codecs.flat.cached_body``; a session never sets it).
        self.last: tuple[object, object] | None = None

    def __len__(self) -> int:
        return (sum(len(m) for m in self._memo.values())
                + sum(len(c) for c in self._legacy.values() if c is not None))

    # --- requests -----------------------------------------------------------------------------

    def legacy(self, codec: Codec) -> Any:
        """The memo of a codec without a turn encoder (its own ``new_cache``)."""
        if codec.api not in self._legacy:
            self._legacy[codec.api] = codec.new_cache()
        return self._legacy[codec.api]

    def digest(self, codec: Codec, plan: ReplayPlan) -> str:
        """The plan digest a turn encoder's stored forms are keyed by."""
        encoder = codec.turns
        assert encoder is not None
        key = (codec.api, encoder.version, plan.key)
        found = self._digests.get(key)
        if found is None:
            found = self._digests[key] = plan_digest(plan, api=codec.api,
                                                     version=encoder.version)
        return found

    def encode(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
               spec: RequestSpec) -> Encoded:
        encoder = codec.turns
        if encoder is None:
            return codec.encode_request(history, plan, spec, self.legacy(codec))
        return encoder.assemble(self.walk(codec, history, plan, spec), spec, plan)

    def walk(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
             spec: RequestSpec) -> Walk[Any, Any]:
        """The walk of ``history`` under ``plan`` (each turn's bytes and facts)."""
        encoder = codec.turns
        assert encoder is not None
        digest = self.digest(codec, plan)
        stored = _stored_of(history)
        split = len(stored.ids) if stored is not None else 0
        tokens: list[object] = [*stored.ids, *history[split:]] if stored is not None else list(
            history)
        size = len(tokens)
        flat = encoder.flat
        last = self._last.get((codec.api, digest))
        kept = _common(last.tokens, tokens) if last is not None else 0

        def fact(index: int, entry: object) -> TurnFacts:
            return entry if isinstance(entry, TurnFacts) else self._facts(
                encoder, digest, entry, stored, index, history)

        raw_afters: dict[str, Any] = {}  # a stored meta's after facts, parsed but not read
        remembered: list[object] | Unread
        if flat:
            facts: Sequence[TurnFacts] = _Lazy(tokens, fact)
            remembered = []
        else:
            raw_facts: list[Any] = []
            metas: list[str] = []  # each stored row's first meta while it is unread, else ""
            if last is not None:  # (what the last walk left unread stays unread: a resumed
                before = last.facts  # session's next requests do not read every stored meta)
                if isinstance(before, Unread):
                    raw_facts, metas = before.entries[:kept], before.metas[:kept]
                else:
                    raw_facts = before[:kept]
            if stored is not None and kept < split and stored.plan == digest:
                raw_facts += stored.rows()[kept:]  # (read on first use: ``Unread``)
                metas = (metas or [""] * kept) + stored.metas()[kept:]
            raw_facts += [fact(i, tokens[i]) for i in range(len(raw_facts), split)]
            raw_facts += self._message_facts(encoder, tokens, len(raw_facts))
            facts = remembered = raw_facts
            if metas:
                metas += [""] * (size - len(metas))
                facts = remembered = self._metas(encoder).unread(raw_facts, metas, history,
                                                                 raw_afters)
        start = encoder.start(plan, spec, facts)
        if last is None or start != last.start:
            kept = 0
        if kept:
            assert last is not None
            state = last.start if flat else last.states[kept - 1]
            turns, afters = last.turns[:kept], last.afters[:kept]
            contexts, states = last.contexts[:kept], last.states[:kept]
            ends, chunks = _reused(last, turns)
        else:
            state, turns, afters, contexts, states, ends, chunks = start, [], [], [], [], [], []
        first = kept
        if flat and stored is not None and kept < split and stored.plan == digest:
            wires = stored.stored_wire(digest)[kept:]
            if _complete(wires):  # the usual resume: every stored turn's form, in one pass
                turns += wires
                afters += [None] * len(wires)  # (their stored meta, parsed if read)
                contexts += [""] * len(wires)
                first = split
        elif not flat and stored is not None and kept < split and stored.plan == digest:
            first, state = self._spliced(encoder, stored, remembered, kept, state,
                                         (turns, afters, contexts, states), raw_afters)
        if first >= split:  # the rest are messages (the usual case)
            state = self._encoded(encoder, digest, tokens, facts, first, state, plan,
                                  (turns, afters, contexts, states))
            first = size
        for index in range(first, size):
            context: Context = "" if flat else encoder.context(state, index, facts[index])
            data, after = self._form(encoder, digest, index, context, tokens, stored, history,
                                     plan)
            if not flat:
                if encoder.moves(state, facts[index]):
                    state = encoder.advance(state, facts[index], context, self._after(
                        encoder, index, after, tokens, stored, history, plan, contexts))
                states.append(state)
            turns.append(data)
            afters.append(after)
            contexts.append(context)
        # This walk's turns, stored forms included, one piece each: joined into one chunk only
        # if a later walk reuses them (``_reused``), so a resume's first request copies its
        # stored bytes once, into the body, and not into a joined chunk first.
        singles = len(chunks)  # (only the chunks need their ends: the singles are joined)
        chunks += map(orjson.Fragment, filter(None, itertools.islice(turns, kept, None)))
        walk: Walk[Any, Any] = Walk(
            state=state, turns=turns, fragments=chunks, facts=facts,
            afters=_Lazy(afters, lambda i, entry: self._after(encoder, i, entry, tokens,
                                                              stored, history, plan, contexts)),
            contexts=contexts, history=history)
        self._last[(codec.api, digest)] = _Remembered(
            tokens=tokens, start=start, states=states, turns=turns, afters=afters,
            facts=remembered, contexts=contexts, ends=ends, chunks=chunks, singles=singles)
        return walk

    def _after(self, encoder: TurnEncoder[Any, Any], index: int, entry: object,
               tokens: list[object], stored: StoredHistory | None,
               history: Sequence[Message], plan: ReplayPlan, contexts: list[Context]) -> Named:
        """A turn's after facts: ``entry`` itself, or parsed from a stored form's meta — ``entry``
        is (context, meta), or None for the stored form under its context in ``contexts`` — (a
        meta that does not parse: the turn encoded again, which decodes the stored history)."""
        if isinstance(entry, Named):
            return entry
        if entry is None:  # (a walk keeps these only over the same undecoded stored history)
            assert stored is not None
            context = contexts[index]
            entry = (context, stored.forms(index)[context_key(context)][1])
        assert isinstance(entry, tuple)
        parsed = self._metas(encoder).parse(entry[1])
        if parsed is not None:
            return parsed[1]
        token = tokens[index]
        message = token if isinstance(token, Message) else history[index]
        return encoder.encode_turn(message, plan, entry[0])[1]

    def _facts(self, encoder: TurnEncoder[Any, Any], digest: str, token: object,
               stored: StoredHistory | None, index: int,
               history: Sequence[Message]) -> TurnFacts:
        if isinstance(token, Message):
            key = (id(token), type(encoder))
            hit = self._fact_memo.get(key)
            if hit is None or hit[0] is not token:
                hit = self._fact_memo[key] = (token, encoder.facts(token))
            return hit[1]
        assert stored is not None  # (forms under another digest may be another API's)
        forms = stored.forms(index) if stored.plan == digest else {}
        return self._metas(encoder).row_facts(index, forms, history)  # (none: decoded)

    def _message_facts(self, encoder: TurnEncoder[Any, Any], tokens: list[Any],
                       begin: int) -> list[TurnFacts]:
        """The facts of the turns held as messages, ``tokens[begin:]``. Not memoized: a walk
        that continues the last one takes its facts from it; only turns after an edit in the
        middle of a history are read again (a memo cost every cold walk more than that)."""
        return list(map(encoder.facts, itertools.islice(tokens, begin, None)))

    def _encoded(self, encoder: TurnEncoder[Any, Any], digest: str, messages: list[Any],
                 facts: Sequence[TurnFacts], begin: int, state: object, plan: ReplayPlan,
                 into: tuple[list[Any], list[Any], list[Any], list[Any]]) -> object:
        """Walk the turns held as messages from ``begin`` (``_form``'s memo or encoded once, in
        one loop: a cold request walks every turn here): the state after the last."""
        turns, afters, contexts, states = into
        memo, encode_turn = self._digest_memo(digest), encoder.encode_turn
        context_of, advance, flat = encoder.context, encoder.advance, encoder.flat
        context: Context = ""
        for index in range(begin, len(messages)):
            message = messages[index]
            if not flat:
                fact = facts[index]
                context = context_of(state, index, fact)
            key = id(message) if context == "" else (  # (``_memo_key``, inlined: per turn)
                id(message), context if type(context) is str else context_key(context))
            hit = memo.get(key)
            if hit is not None and hit[0] is message:
                data, after = hit[1], hit[2]
            else:
                data, after = encode_turn(message, plan, context)
                memo[key] = (message, data, after)
            if not flat:  # (its after facts are at hand: no ``moves`` asked first)
                state = advance(state, fact, context, after)
                states.append(state)
            turns.append(data)
            afters.append(after)
            contexts.append(context)
        return state

    def _spliced(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory,
                 facts: list[Any] | Unread, begin: int, state: object,
                 into: tuple[list[Any], list[Any], list[Any], list[Any]],
                 raw_afters: dict[str, Any]) -> tuple[int, object]:
        """Walk the stored turns from ``begin`` on their stored forms (nothing decoded) while
        each has one for its context: where that stopped, and the state there. A run of turns whose
        contexts their rows settle (``TurnEncoder.settled``) is walked without their facts.

        In two passes: the contexts and states first (a turn that moves the state has its form
        and after facts read there), then every turn's form under its context, at C speed; the
        walk stops at the first turn without one (what the first pass walked past it is
        dropped: states are values, and a log a later state extended is branched, not edited)."""
        turns, afters, contexts, states = into
        reader = self._metas(encoder)
        rows = stored.rows()
        settled, context_of = encoder.settled, encoder.context
        advance, moves = encoder.advance, encoder.moves
        # (a walk that continues another over a new start has its facts read already)
        read: Callable[[int], TurnFacts]
        if isinstance(facts, Unread):
            entries, read, texts = facts.entries, facts.at, facts.metas
        else:
            entries, read, texts = facts, facts.__getitem__, [""] * len(facts)
        known, facts_of = reader.facts, reader.facts_of  # (most metas repeat a handful)
        after_of = reader.after_of
        keys: dict[Any, str] = {}  # each context that is no string -> its stored key
        moved: list[tuple[int, Named]] = []  # (index, after facts) of the turns that moved it
        stop = len(rows)
        initial = state
        index = begin
        while index < stop:
            # (a run's contexts are the keys its forms are stored under: strings)
            run, run_states = settled(state, index, rows)
            if run:
                contexts += run
                states += run_states
                state = run_states[-1]
                index += len(run)
                if index >= stop:
                    break
            fact = entries[index]  # (its facts, read from its meta now if not yet)
            if type(fact) is not TurnFacts:
                fact = known.get(texts[index]) or facts_of(texts[index], raw_afters)
                if fact is None:  # (a meta that holds none: the row's others, or the turn)
                    fact = read(index)
                else:
                    entries[index] = fact
            context = context_of(state, index, fact)
            if type(context) is not str and context not in keys:
                keys[context] = context_key(context)
            if moves(state, fact):  # (its after facts now: the next state needs them)
                row = rows[index].get(keys.get(context, context))  # type: ignore[arg-type]
                after = None if row is None else after_of(row[1], raw_afters)
                if after is None:
                    stop = index
                    break
                moved.append((index, after))
                state = advance(state, fact, context, after)
            states.append(state)
            contexts.append(context)
            index += 1
        walked = contexts[begin:]
        picked = list(map(dict.get, rows[begin:stop],
                          map(keys.get, walked, walked) if keys else walked))
        if None in picked:  # (a turn without a form for its context: encoded from there)
            stop = begin + picked.index(None)
            del picked[stop - begin:], states[stop:], contexts[stop:]
            state = states[-1] if stop > begin else initial
        forms = cast("list[tuple[bytes, str]]", picked)  # (no None left: cut above)
        turns += map(operator.itemgetter(0), forms)
        afters += [None] * len(forms)  # (parsed from its form's meta when read: ``_after``)
        for index, after in moved:
            if index < stop:
                afters[index] = after
        return stop, state

    def _metas(self, encoder: TurnEncoder[Any, Any]) -> Metas:
        found = self._readers.get(type(encoder))
        if found is None:
            found = self._readers[type(encoder)] = Metas(encoder)
        return found

    def _form(self, encoder: TurnEncoder[Any, Any], digest: str, index: int, context: Context,
              tokens: list[object], stored: StoredHistory | None, history: Sequence[Message],
              plan: ReplayPlan) -> tuple[bytes, object]:
        key = context if isinstance(context, str) else context_key(context)
        token = tokens[index]
        if isinstance(token, Message):
            message = token
        else:
            assert stored is not None
            row = stored.forms(index).get(key) if stored.plan == digest else None
            if row is not None:  # its after facts are parsed when read (``_after``)
                return row[0], (context, row[1])
            message = history[index]  # decodes the stored history (once)
        memo, at = self._digest_memo(digest), _memo_key(message, key)
        hit = memo.get(at)
        if hit is not None and hit[0] is message:
            return hit[1], hit[2]
        data, after = encoder.encode_turn(message, plan, context)
        memo[at] = (message, data, after)
        return data, after

    def _digest_memo(self, digest: str) -> dict[object, tuple[Message, bytes, Named]]:
        return self._memo.setdefault(digest, {})

    # --- writing through ----------------------------------------------------------------------

    def forms(self, codec: Codec, history: Sequence[Message], ids: Sequence[str],
              plan: ReplayPlan, spec: RequestSpec) -> list[WireForm]:
        """The forms of ``history``'s turns (their store ids ``ids``) under ``plan`` that are not
        stored yet: what the walk of the next request takes from this cache (encoded now, once,
        if it was not encoded already). Pass them to ``written`` once stored.

        A turn's context may depend on what follows it (e.g. a new user turn closes the tool
        loop): unless the encoder is flat, the history is walked both as it is and followed by a
        user turn, so the next request finds its forms whichever kind of turn it sends."""
        encoder = codec.turns
        if encoder is None or len(ids) != len(history):
            return []
        digest = self.digest(codec, plan)
        views = [history] if encoder.flat else [history, Joined(history, [_NEXT_USER])]
        start = 0
        done = self._flat_done.get(digest) if encoder.flat else None
        if done is not None and len(done) <= len(ids) and all(map(operator.is_, done, ids)):
            start = len(done)
        out: list[WireForm] = []
        walks = []
        for view in views:
            walk = self.walk(codec, view, plan, spec)
            walks.append(walk)
            out += self._unwritten(walk, _stored_of(view), ids, digest, start)
        if not encoder.flat:
            out += self._later(codec, encoder, walks[0], history, ids, digest, plan)
        if encoder.flat:
            self._flat_done[digest] = list(ids)
        return out

    def _unwritten(self, walk: Walk[Any, Any], stored: StoredHistory | None,
                   ids: Sequence[str], digest: str, start: int) -> list[WireForm]:
        out: list[WireForm] = []
        written = self._written
        for index in range(start, len(ids)):
            context = walk.contexts[index]
            key = context if isinstance(context, str) else context_key(context)
            mid = ids[index]
            if (mid, digest, key) in written:
                continue
            written.add((mid, digest, key))  # (taken back by ``unwritten`` if the write fails)
            if (stored is not None and index < len(stored.ids) and stored.plan == digest
                    and key in stored.forms(index)):
                continue
            meta = {**walk.facts[index].to_json(), "after": walk.afters[index].to_json()}
            out.append(WireForm(message_id=mid, plan=digest, context=key,
                                meta=orjson.dumps(meta).decode(), data=walk.turns[index]))
        return out

    def _later(self, codec: Codec, encoder: TurnEncoder[Any, Any], walk: Walk[Any, Any],
               history: Sequence[Message], ids: Sequence[str], digest: str,
               plan: ReplayPlan) -> list[WireForm]:
        """The forms of the turns held as messages under the contexts a later request may put
        them in (``Codec.later_contexts``); a stored turn's were written with it."""
        stored = _stored_of(history)
        out: list[WireForm] = []
        written = self._written
        for index in range(len(stored.ids) if stored is not None else 0, len(ids)):
            for context in codec.later_contexts(walk.state, walk.contexts[index]):
                key = context if isinstance(context, str) else context_key(context)
                mid = ids[index]
                if (mid, digest, key) in written:
                    continue
                written.add((mid, digest, key))  # (taken back by ``unwritten`` on a failure)
                message = history[index]
                memo, at = self._digest_memo(digest), _memo_key(message, key)
                hit = memo.get(at)
                if hit is not None and hit[0] is message:
                    data, after = hit[1], hit[2]
                else:
                    data, after = encoder.encode_turn(message, plan, context)
                    memo[at] = (message, data, after)
                meta = {**walk.facts[index].to_json(), "after": after.to_json()}
                out.append(WireForm(message_id=mid, plan=digest, context=key,
                                    meta=orjson.dumps(meta).decode(), data=data))
        return out

    def unwritten(self, forms: Sequence[WireForm]) -> None:
        """A write of ``forms`` failed: they are offered again next time."""
        self._written.difference_update((f.message_id, f.plan, f.context) for f in forms)
        for form in forms:
            self._flat_done.pop(form.plan, None)


def _complete(wires: list[bytes | None]) -> TypeGuard[list[bytes]]:
    """Whether every stored turn has its wire form."""
    return None not in wires


def _memo_key(message: Message, key: str) -> object:
    """A turn's key in its digest's memo: its message's identity, with its context's stored key
    unless that is "" (most turns: an int, no tuple to make)."""
    return id(message) if not key else (id(message), key)


def _stored_of(history: Sequence[Message]) -> StoredHistory | None:
    """The resumed history under ``history`` while it is not decoded: once it is, its decoded
    (and verified) messages are what is sent, so its stored forms are not read any more."""
    stored = history.stored if isinstance(history, Joined) else history
    return stored if isinstance(stored, StoredHistory) and not stored.decoded else None


def _reused(last: _Remembered, turns: list[bytes]) -> tuple[list[int], list[Any]]:
    """The pieces of ``last`` that cover the first ``len(turns)`` turns (their ends, the pieces),
    its one-turn pieces joined into one chunk (they are reused a second time: serialized as one
    piece from now on), and all of them joined again when a long session has made many."""
    kept = len(turns)
    reuse = bisect.bisect_right(last.ends, kept)
    if reuse >= _CHUNKS:
        reuse = 0
    ends, chunks = last.ends[:reuse], last.chunks[:reuse]
    covered = ends[-1] if ends else 0
    rest = [data for data in turns[covered:] if data]
    if rest:
        ends.append(kept)
        chunks.append(orjson.Fragment(b",".join(rest)))
    return ends, chunks


def _common(before: list[object], now: list[object]) -> int:
    """How many leading turns ``now`` shares with ``before``: by identity first, else by
    equality (a gateway decodes the history a client resends into new, equal messages; equal
    turns have equal forms, so the walk of the last request goes on from there). The identical
    prefix is found at C speed, so only the turns after it are compared by value."""
    same = list(map(operator.is_, before, now))
    try:
        count = same.index(False)
    except ValueError:
        return len(same)
    for a, b in zip(before[count:], now[count:], strict=False):
        if a is not b and a != b:
            break
        count += 1
    return count
