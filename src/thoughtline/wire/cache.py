"""The one wire cache: every turn encoded once, stored under what it depends on, spliced after.

A codec's turn encoder (``codecs.base.TurnEncoder``) encodes a request turn by turn; this cache
walks the history once per request and remembers the walk. A request's walk goes on from:

1. the previous walk under its plan, when the history only grew since and the walk starts in an
   equal state (a session's next request: only its new turns are walked);
2. the last walk stored with a resumed history (``lastwalk``), when the history is exactly the one
   it was stored for and the walk starts where one of its views did: each stored turn's form is
   picked by the context the view names (nothing decoded, no codec rule asked of a stored turn);
3. nothing: the history is decoded (a resumed one, once, through the store's verified load) and
   each turn taken from this session's memo, else ``encode_turn`` — the ordinary load.

The codec's one duty to the cache is ``context``: what a turn's bytes depend on. What went into
a request is written through (``forms``) once its turns are appended.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

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
from thoughtline.store.wireforms import WireForm, keyed_form, walk_key
from thoughtline.wire.facts import read_meta
from thoughtline.wire.lastwalk import LastWalk, dump
from thoughtline.wire.stored import Forms, Joined, StoredHistory
from thoughtline.wire.walk import UNKNOWN, Facts, Steps, common

__all__ = ["WireCache", "encode"]

#: What a history may be followed by on its next request (``WireCache.forms``).
_NEXT_USER = Message(role="user", parts=(Text(text="…"),))


def encode(codec: Codec, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
           cache: WireCache | None) -> Encoded:
    """The request for ``history``: through ``cache`` if it is one, else the codec's."""
    if not isinstance(cache, WireCache):
        return codec.encode_request(history, plan, spec, cache)
    return cache.encode(codec, history, plan, spec)


class WireCache:
    """A session's memo of its turns' wire forms (turns are immutable; see the module doc)."""

    def __init__(self) -> None:
        #: Per plan digest: each turn encoded here, by its message's identity (and its context's
        #: stored key unless that is ""), with the message (an id can be reused).
        self._memo: dict[str, dict[object, tuple[Message, bytes, Named]]] = {}
        self._digests: dict[tuple[str, str, Any], str] = {}
        self._last: dict[tuple[str, str], Steps] = {}
        #: Per encoder type: each stored meta read so far (None: not one ``_form`` wrote).
        self._metas: dict[type, dict[str, tuple[TurnFacts, Any] | None]] = {}
        #: Per (stored history, plan digest): its stored last walk, read once (None: none).
        self._points: dict[tuple[StoredHistory, str], LastWalk | None] = {}
        #: (message id, plan digest, context) of every form known to be stored.
        self._written: set[tuple[str, str, str]] = set()
        #: Per plan digest: the (message id, key) of this session's last stored walk.
        self._walked: dict[str, tuple[str, str]] = {}
        self._superseded: list[tuple[str, str]] = []
        #: The body an API's module-level ``encode_request(cache=…)`` last returned, and the
        #: index of its request (``codecs.flat.cached_body``; a session never sets it).
        self.last: tuple[object, object] | None = None

    def __len__(self) -> int:
        return sum(len(m) for m in self._memo.values())

    # --- requests -----------------------------------------------------------------------------

    def digest(self, codec: Codec, plan: ReplayPlan) -> str:
        """The plan digest a turn encoder's stored forms are keyed by."""
        key = (codec.api, codec.turns.version, plan.key)
        if key not in self._digests:
            self._digests[key] = plan_digest(plan, api=key[0], version=key[1])
        return self._digests[key]

    def encode(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
               spec: RequestSpec) -> Encoded:
        return codec.turns.assemble(self.walk(codec, history, plan, spec), spec, plan)

    def walk(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
             spec: RequestSpec) -> Walk[Any, Any]:
        """The walk of ``history`` under ``plan`` (each turn's bytes and facts)."""
        encoder = codec.turns
        digest = self.digest(codec, plan)
        stored = _stored_of(history)
        split = len(stored.ids) if stored is not None else 0
        tokens: list[object] = list(history) if stored is None else [*stored.ids, *history[split:]]
        last = self._last.get((codec.api, digest))
        kept = common(last.tokens, tokens) if last is not None else 0
        if stored is not None and kept < split and stored.plan != digest:
            # (forms stored under another plan digest may be another API's: decoded)
            return self._decoded(codec, history, plan, spec)
        # (the stored turns' facts, read on first need; ``tuple``: there are none)
        source = tuple if stored is None else self._stored_source(encoder, stored, digest)
        facts = (last.facts.kept(kept, tokens, split, source) if last is not None and kept
                 else Facts(tokens, encoder.facts, split, source))
        read: Sequence[TurnFacts] = facts if encoder.flat else facts.all()
        start = encoder.start(plan, spec, read)
        if last is None or not last.goes_on(kept, start, flat=encoder.flat):
            kept = 0
        rows: list[Forms] = []
        if stored is not None and kept < split:
            rows = stored.rows()
            steps = self._resumed(encoder, stored, digest, rows,
                                  Steps(tokens=tokens, start=start, facts=facts, state=start))
        elif last is not None and kept:
            steps = last.kept(kept, tokens, start, facts, flat=encoder.flat)
        else:
            steps = Steps(tokens=tokens, start=start, facts=facts, state=start)
        if not self._walk_on(encoder, digest, read, plan, steps, rows):
            return self._decoded(codec, history, plan, spec)
        self._last[(codec.api, digest)] = steps
        return steps.walk(read, history)

    def _stored_source(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory,
                       digest: str) -> Callable[[], list[TurnFacts]]:
        """The stored turns' facts, read once, when a walk first needs them: from their last
        walk, else their forms' metas, else their messages (decoded)."""

        @functools.cache
        def read() -> list[TurnFacts]:
            found = self._point(encoder, stored, digest)
            facts = found.facts() if found is not None else None
            if facts is None and stored.plan == digest:
                facts = self._meta_facts(encoder, stored)
            if facts is None:
                facts = list(map(encoder.facts, stored[:len(stored.ids)]))
            return facts

        return read

    def _meta_facts(self, encoder: TurnEncoder[Any, Any],
                    stored: StoredHistory) -> list[TurnFacts] | None:
        """The stored turns' facts from their forms' metas (None: one has no readable meta)."""
        out = []
        for row in stored.rows():
            read = self._meta(encoder, next(iter(row.values()))[1]) if row else None
            if read is None:
                return None
            out.append(read[0])
        return out

    def _resumed(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory, digest: str,
                 rows: list[Forms], steps: Steps) -> Steps:
        """``steps`` with the stored turns the stored last walk's view that starts where it does
        names (nothing decoded); else as it is, for ``_walk_on`` to walk their forms (a walk
        that starts where no stored view did, e.g. after a new system turn)."""
        point = self._point(encoder, stored, digest)
        view = point.view(encoder, steps.start) if point is not None else None
        picked = None
        # (at C speed, every stored turn; one without the form its context names: None)
        with contextlib.suppress(KeyError, TypeError):
            picked = list(map(operator.getitem, rows, view.contexts)) if view else None
        if view is None or picked is None:
            return steps
        steps.state, steps.afters, steps.contexts = view.end, view.afters, list(view.contexts)
        steps.turns = list(map(operator.itemgetter(0), picked))  # (each form's data)
        if not encoder.flat:
            steps.states = [*itertools.repeat(UNKNOWN, len(rows) - 1), view.end]
        return steps

    def _walk_on(self, encoder: TurnEncoder[Any, Any], digest: str, facts: Sequence[TurnFacts],
                 plan: ReplayPlan, steps: Steps, rows: list[Forms]) -> bool:
        """Walk ``steps`` on from the turns it holds: a stored turn (of ``rows``) by its form
        under its context and the form's meta, a message from the memo, else encoded once.
        False: a stored turn has no such form (the history is decoded instead)."""
        memo, encode_turn = self._memo.setdefault(digest, {}), encoder.encode_turn
        context_of, advance, flat = encoder.context, encoder.advance, encoder.flat
        turns, afters, contexts, states = steps.turns, steps.afters, steps.contexts, steps.states
        tokens: list[Any] = steps.tokens  # (after the stored turns: messages)
        state, stored = steps.state, len(rows)
        context: Context = ""
        for index in range(len(turns), len(tokens)):
            if not flat:
                context = context_of(state, index, facts[index])
            if index < stored:
                form = rows[index].get(context if type(context) is str else context_key(context))
                read = None if form is None else self._meta(encoder, form[1])
                if form is None or read is None:
                    return False
                data, after = form[0], read[1]
            else:
                message = tokens[index]
                at = id(message) if context == "" else (  # (as ``_turn_of``; inlined: per turn)
                    id(message), context if type(context) is str else context_key(context))
                hit = memo.get(at)
                if hit is not None and hit[0] is message:
                    data, after = hit[1], hit[2]
                else:
                    data, after = encode_turn(message, plan, context)
                    memo[at] = (message, data, after)
            if not flat:
                state = advance(state, facts[index], context, after)
                states.append(state)
            turns.append(data)
            afters.append(after)
            contexts.append(context)
        steps.state = state
        return True

    def _meta(self, encoder: TurnEncoder[Any, Any], meta: str) -> tuple[TurnFacts, Any] | None:
        """A stored form's meta read (``_form`` wrote it), once per distinct meta."""
        memo = self._metas.setdefault(type(encoder), {})
        if meta not in memo:
            memo[meta] = read_meta(meta, encoder.extra_type, encoder.after_type)
        return memo[meta]

    def _decoded(self, codec: Codec, history: Sequence[Message], plan: ReplayPlan,
                 spec: RequestSpec) -> Walk[Any, Any]:
        """The ordinary load: the stored history decoded (once, verified), then walked."""
        stored = _stored_of(history)
        if stored is not None:  # (reading its facts may have decoded it already)
            list(stored)  # (decodes it: from now on its messages are what is walked)
        return self.walk(codec, history, plan, spec)

    def _point(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory,
               digest: str) -> LastWalk | None:
        """The last walk stored with ``stored`` for ``digest``, read once (None: none)."""
        key = (stored, digest)  # (a history hashes by identity)
        if key not in self._points:
            raw = stored.walk if stored.plan == digest else None
            self._points[key] = None if raw is None else LastWalk.read(encoder, raw,
                                                                      len(stored.ids))
        return self._points[key]

    def _turn_of(self, encoder: TurnEncoder[Any, Any], digest: str, plan: ReplayPlan,
                 messages: Sequence[Any]) -> Callable[[int, Context], tuple[bytes, Named]]:
        """Turn ``index`` of ``messages`` in ``context``: from the memo, else encoded once."""
        memo, encode_turn = self._memo.setdefault(digest, {}), encoder.encode_turn

        def turn(index: int, context: Context) -> tuple[bytes, Named]:
            message = messages[index]
            key = id(message) if context == "" else (id(message), context_key(context))
            hit = memo.get(key)
            if hit is not None and hit[0] is message:
                return hit[1], hit[2]
            data, after = encode_turn(message, plan, context)
            memo[key] = (message, data, after)
            return data, after

        return turn

    # --- writing through ----------------------------------------------------------------------

    def forms(self, codec: Codec, history: Sequence[Message], ids: Sequence[str],
              plan: ReplayPlan, spec: RequestSpec) -> list[WireForm]:
        """The forms of ``history``'s turns (store ids ``ids``) under ``plan`` not stored yet,
        and their walk's checkpoint (``lastwalk``); ``unwritten`` if their write fails.

        A turn's context may depend on what follows it (e.g. a new user turn closes the tool
        loop): unless the encoder is flat, the history is walked both as it is and followed by a
        user turn, so the next request finds its forms and its view whichever turn it sends."""
        encoder = codec.turns
        if len(ids) != len(history) or not ids:
            return []
        digest = self.digest(codec, plan)
        views = [history] if encoder.flat else [history, Joined(history, [_NEXT_USER])]
        out: list[WireForm] = []
        walks, ran = [], []
        size = len(ids)
        for view in views:
            walk = self.walk(codec, view, plan, spec)
            walks.append(walk)
            out += self._unwritten(walk, _stored_of(view), ids, digest)
            last = self._last[(codec.api, digest)]
            end = last.start if encoder.flat else last.states[size - 1]
            ran.append((last.start, last.contexts[:size], last.afters[:size], end))
        if not encoder.flat:
            out += self._later(codec, walks[0], history, ids, digest, plan)
        if all(end is not UNKNOWN for *_, end in ran):
            key = walk_key(digest, ids)
            out.append(keyed_form(key, ids, dump(encoder, walks[0].facts[:size], ran)))
            self._supersede(history, digest, (ids[-1], key))
        return out

    def _supersede(self, history: Sequence[Message], digest: str, key: tuple[str, str]) -> None:
        """Note ``key`` as the session's last walk under ``digest``: the one before it (written
        here, or loaded with a resumed history) is superseded. (A branch that shared it resumes
        on its stored forms instead: ``_walk_on``.)"""
        before = self._walked.get(digest)
        stored = history.stored if isinstance(history, Joined) else history
        if before is None and isinstance(stored, StoredHistory) and stored.ids and (
                stored.walk is not None and stored.plan == digest):
            before = (stored.ids[-1], walk_key(digest, stored.ids))
        self._superseded = [before] if before is not None and before != key else []
        self._walked[digest] = key

    def superseded(self) -> list[tuple[str, str]]:
        """The (message id, key) of the stored last walks the last ``forms`` made obsolete,
        deleted as its forms are stored: a walk row holds the whole history's walk."""
        return self._superseded

    def _unwritten(self, walk: Walk[Any, Any], stored: StoredHistory | None,
                   ids: Sequence[str], digest: str) -> list[WireForm]:
        """The forms of ``walk``'s turns under the contexts they were walked in, but those known
        to be stored."""
        out: list[WireForm] = []
        for index, mid in enumerate(ids):
            key = context_key(walk.contexts[index])
            if not self._new(mid, digest, key) or (
                    stored is not None and index < len(stored.ids) and stored.plan == digest
                    and key in stored.rows()[index]):
                continue
            out.append(_form(mid, digest, key, walk.facts[index], walk.afters[index],
                             walk.turns[index]))
        return out

    def _later(self, codec: Codec, walk: Walk[Any, Any], history: Sequence[Message],
               ids: Sequence[str], digest: str, plan: ReplayPlan) -> list[WireForm]:
        """The forms of the turns held as messages under the contexts a later request may put
        them in (``Codec.later_contexts``); a stored turn's were written with it."""
        stored = _stored_of(history)
        turn = self._turn_of(codec.turns, digest, plan, history)
        out: list[WireForm] = []
        for index in range(len(stored.ids) if stored is not None else 0, len(ids)):
            for context in codec.later_contexts(walk.state, walk.contexts[index]):
                key = context_key(context)
                if self._new(ids[index], digest, key):
                    data, after = turn(index, context)
                    out.append(_form(ids[index], digest, key, walk.facts[index], after, data))
        return out

    def _new(self, mid: str, digest: str, key: str) -> bool:
        """Whether the form of ``mid`` under (``digest``, ``key``) is not known to be stored;
        from now on it is (``unwritten`` takes it back if its write fails)."""
        if (mid, digest, key) in self._written:
            return False
        self._written.add((mid, digest, key))
        return True

    def unwritten(self, forms: Sequence[WireForm]) -> None:
        """A write of ``forms`` failed: they are offered again next time."""
        self._written.difference_update((f.message_id, f.plan, f.context) for f in forms)


def _form(mid: str, digest: str, key: str, facts: TurnFacts, after: Named,
          data: bytes) -> WireForm:
    """A turn's stored form: its bytes, its facts and after facts as the meta."""
    meta = {**facts.to_json(), "after": after.to_json()}
    return WireForm(message_id=mid, plan=digest, context=key, meta=orjson.dumps(meta).decode(),
                    data=data)


def _stored_of(history: Sequence[Message]) -> StoredHistory | None:
    """The resumed history under ``history`` while it is not decoded: once it is, its decoded
    (and verified) messages are what is sent, so its stored forms are not read any more."""
    stored = history.stored if isinstance(history, Joined) else history
    return stored if isinstance(stored, StoredHistory) and not stored.decoded else None
