"""The one wire cache: every turn encoded once, stored under what it depends on, spliced after.

A codec with a turn encoder (``codecs.base.TurnEncoder``) encodes a request turn by turn; this
cache walks the history once per request and remembers the walk. A request's walk goes on from:

1. the previous walk under its plan, when the history only grew since and the walk starts in an
   equal state (a session's next request: only its new turns are walked);
2. the last walk stored with a resumed history (``lastwalk``), when the history is exactly the one
   it was stored for and the walk starts in the state one of its views started in: each stored
   turn's form is picked by the context the view names, the view's end state read back (nothing
   decoded, no codec rule asked of a stored turn);
3. nothing: the history is decoded (a resumed one, once, through the store's verified load) and
   each turn taken from this session's memo by (message identity, plan digest, context), else
   ``encode_turn`` — the ordinary load.

The codec's one duty to the cache is ``context``: what a turn's bytes depend on. Write-through
(``forms``): the bytes that went into a request are stored once the turn is appended, under its
context (and the contexts a later request may put it in), with the walk's checkpoint.
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
from thoughtline.store.wireforms import WireForm, walk_form, walk_key
from thoughtline.wire.lastwalk import LastWalk, dump, read_meta
from thoughtline.wire.stored import Joined, StoredHistory
from thoughtline.wire.walk import UNKNOWN, Facts, Steps, common

__all__ = ["WireCache", "encode"]

#: What a history may be followed by on its next request (``WireCache.forms``).
_NEXT_USER = Message(role="user", parts=(Text(text="…"),))
_DATA = operator.itemgetter(0)  # (a stored form's bytes: its (data, meta)'s first)


def encode(codec: Codec, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
           cache: WireCache | None) -> Encoded:
    """The request for ``history``: through ``cache`` when there is one, else every turn encoded
    (``Codec.encode_request``)."""
    if not isinstance(cache, WireCache):
        return codec.encode_request(history, plan, spec, cache)
    return cache.encode(codec, history, plan, spec)


class WireCache:
    """A session's memo of its turns' wire forms (turns are immutable; see the module doc)."""

    def __init__(self) -> None:
        #: Per plan digest: each turn encoded here, by ``_memo_key`` (its message's identity,
        #: and its context unless that is ""), with the message (an id can be reused).
        self._memo: dict[str, dict[object, tuple[Message, bytes, Named]]] = {}
        self._digests: dict[tuple[str, str, Any], str] = {}
        self._last: dict[tuple[str, str], Steps] = {}
        #: Per encoder type: each stored meta read so far (None: not one ``_form`` wrote).
        self._metas: dict[type, dict[str, tuple[TurnFacts, Any] | None]] = {}
        #: Per (stored history, plan digest): its stored last walk, read once (None: none).
        self._points: dict[tuple[int, str], tuple[StoredHistory, LastWalk | None]] = {}
        #: (message id, plan digest, context) of every form known to be stored.
        self._written: set[tuple[str, str, str]] = set()
        #: Per plan digest: the (message id, key) of the last walk stored for this session's
        #: history, and those its last ``forms`` superseded (``superseded``).
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
        encoder = codec.turns
        key = (codec.api, encoder.version, plan.key)
        found = self._digests.get(key)
        if found is None:
            found = self._digests[key] = plan_digest(plan, api=codec.api,
                                                     version=encoder.version)
        return found

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
        tokens: list[object] = [*stored.ids, *history[split:]] if stored is not None else list(
            history)
        last = self._last.get((codec.api, digest))
        kept = common(last.tokens, tokens) if last is not None else 0
        if stored is not None and kept < split and stored.plan != digest:
            # (forms stored under another plan digest may be another API's: decoded)
            return self._decoded(codec, history, plan, spec)
        source = None if stored is None else self._stored_source(encoder, stored, digest)
        facts = (last.facts.kept(kept, tokens, split, source) if last is not None and kept
                 else Facts(tokens, encoder.facts, split, source))
        start = encoder.start(plan, spec, facts)
        read: Sequence[TurnFacts] = facts if encoder.flat else facts.all()
        if last is None or not last.goes_on(kept, start, flat=encoder.flat):
            kept = 0
        if stored is not None and kept < split:
            steps = self._resumed(encoder, stored, digest, read,
                                  Steps(tokens=tokens, start=start, facts=facts, state=start))
            if steps is None:
                return self._decoded(codec, history, plan, spec)
        elif last is not None and kept:
            steps = last.kept(kept, tokens, start, facts, flat=encoder.flat)
        else:
            steps = Steps(tokens=tokens, start=start, facts=facts, state=start)
        self._encoded(encoder, digest, read, plan, steps)
        self._last[(codec.api, digest)] = steps
        return steps.walk(read, history)

    def _stored_source(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory,
                       digest: str) -> Callable[[], list[TurnFacts]]:
        """How the stored turns' facts are read, once, when a walk first needs them: from their
        last walk, else from their forms' metas, else from their messages (decoded)."""

        @functools.cache
        def read() -> list[TurnFacts]:
            found = self._point(encoder, stored, digest) if stored.plan == digest else None
            facts = found.facts() if found is not None else None
            if facts is None and stored.plan == digest:
                facts = self._meta_facts(encoder, stored)
            if facts is None:
                facts = list(map(encoder.facts, stored[:len(stored.ids)]))
            return facts

        return read

    def _meta_facts(self, encoder: TurnEncoder[Any, Any],
                    stored: StoredHistory) -> list[TurnFacts] | None:
        """The facts of the stored turns from their forms' metas (None: a turn has no readable
        one)."""
        out = []
        for row in stored.rows():
            read = self._meta(encoder, next(iter(row.values()))[1]) if row else None
            if read is None:
                return None
            out.append(read[0])
        return out

    def _resumed(self, encoder: TurnEncoder[Any, Any], stored: StoredHistory, digest: str,
                 facts: Sequence[TurnFacts], steps: Steps) -> Steps | None:
        """``steps`` with the stored turns of a walk from its start, nothing decoded: the stored
        last walk's view that starts there, each form picked by the context it names; else
        walked on their forms (``_on_forms``). None: a turn has no form for its context."""
        point = self._point(encoder, stored, digest)
        view = point.view(encoder, steps.start) if point is not None else None
        rows = stored.rows()
        picked = None
        # (at C speed: a resume's first request picks every stored turn's form here; a turn
        # without the form its context names leaves ``picked`` None)
        with contextlib.suppress(KeyError, TypeError):
            picked = list(map(operator.getitem, rows, view.contexts)) if view else None
        if view is None or picked is None:
            return self._on_forms(encoder, rows, facts, steps)
        steps.state, steps.turns, steps.afters = view.end, list(map(_DATA, picked)), view.afters
        steps.contexts = list(view.contexts)
        if not encoder.flat:
            steps.states = [*itertools.repeat(UNKNOWN, len(rows) - 1), view.end]
        return steps

    def _on_forms(self, encoder: TurnEncoder[Any, Any], rows: list[dict[str, tuple[bytes, str]]],
                  facts: Sequence[TurnFacts], steps: Steps) -> Steps | None:
        """``steps`` with the stored turns walked as any walk is (``context``, ``advance``),
        each turn's form found under its context and its after facts read from the form's meta:
        where a walk starts in a state no stored view started in (e.g. a new system turn, or a
        resumed session's later request moved where its tool loop starts)."""
        state, flat = steps.state, encoder.flat
        context: Context = ""
        for index, row in enumerate(rows):
            if not flat:
                context = encoder.context(state, index, facts[index])
            form = row.get(context if type(context) is str else context_key(context))
            read = None if form is None else self._meta(encoder, form[1])
            if form is None or read is None:
                return None
            if not flat:
                state = encoder.advance(state, facts[index], context, read[1])
                steps.states.append(state)
            steps.turns.append(form[0])
            steps.afters.append(read[1])
            steps.contexts.append(context)
        steps.state = state
        return steps

    def _meta(self, encoder: TurnEncoder[Any, Any], meta: str) -> tuple[TurnFacts, Any] | None:
        """A stored form's meta read (``_form`` wrote it), once per distinct meta."""
        memo = self._metas.setdefault(type(encoder), {})
        if meta not in memo:
            memo[meta] = read_meta(encoder, meta)
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
        key = (id(stored), digest)
        found = self._points.get(key)
        if found is None or found[0] is not stored:
            raw = stored.walk if stored.plan == digest else None
            found = self._points[key] = (stored, None if raw is None else LastWalk.read(
                encoder, raw, len(stored.ids)))
        return found[1]

    def _encoded(self, encoder: TurnEncoder[Any, Any], digest: str,
                 facts: Sequence[TurnFacts], plan: ReplayPlan, steps: Steps) -> None:
        """Walk on the turns of ``steps`` held as messages (after those it holds), each from the
        memo or encoded once (a cold request walks every turn here)."""
        memo, encode_turn = self._digest_memo(digest), encoder.encode_turn
        context_of, advance, flat = encoder.context, encoder.advance, encoder.flat
        turns, afters, contexts, states = steps.turns, steps.afters, steps.contexts, steps.states
        messages: list[Any] = steps.tokens  # (from ``len(turns)`` on: messages)
        state = steps.state
        context: Context = ""
        for index in range(len(turns), len(messages)):
            message = messages[index]
            if not flat:
                context = context_of(state, index, facts[index])
            key = id(message) if context == "" else (  # (``_memo_key``, inlined: per turn)
                id(message), context if type(context) is str else context_key(context))
            hit = memo.get(key)
            if hit is not None and hit[0] is message:
                data, after = hit[1], hit[2]
            else:
                data, after = encode_turn(message, plan, context)
                memo[key] = (message, data, after)
            if not flat:
                state = advance(state, facts[index], context, after)
                states.append(state)
            turns.append(data)
            afters.append(after)
            contexts.append(context)
        steps.state = state

    def _digest_memo(self, digest: str) -> dict[object, tuple[Message, bytes, Named]]:
        return self._memo.setdefault(digest, {})

    # --- writing through ----------------------------------------------------------------------

    def forms(self, codec: Codec, history: Sequence[Message], ids: Sequence[str],
              plan: ReplayPlan, spec: RequestSpec) -> list[WireForm]:
        """The forms of ``history``'s turns (their store ids ``ids``) under ``plan`` that are not
        stored yet, and the checkpoint of their walk (``lastwalk``): what a resumed session's
        walk continues from. Pass them to ``written`` once stored.

        A turn's context may depend on what follows it (e.g. a new user turn closes the tool
        loop): unless the encoder is flat, the history is walked both as it is and followed by a
        user turn, so the next request finds its forms and its view whichever kind of turn it
        sends."""
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
            out += self._later(codec, encoder, walks[0], history, ids, digest, plan)
        if all(end is not UNKNOWN for *_, end in ran):
            out.append(walk_form(digest, ids, dump(encoder, walks[0].facts[:size], ran)))
            self._supersede(history, digest, (ids[-1], walk_key(digest, ids)))
        return out

    def _supersede(self, history: Sequence[Message], digest: str, key: tuple[str, str]) -> None:
        """Note ``key`` as the session's last walk under ``digest``: the one before it (written
        here, or loaded with a resumed history) is superseded. (A branch that shared it resumes
        on its stored forms instead: ``_on_forms``.)"""
        before = self._walked.get(digest)
        stored = history.stored if isinstance(history, Joined) else history
        if before is None and isinstance(stored, StoredHistory) and stored.ids and (
                stored.walk is not None and stored.plan == digest):
            before = (stored.ids[-1], walk_key(digest, stored.ids))
        self._superseded = [before] if before is not None and before != key else []
        self._walked[digest] = key

    def superseded(self) -> list[tuple[str, str]]:
        """The (message id, key) of the stored last walks the last ``forms`` made obsolete:
        deleted as its forms are stored (each walk row holds the whole history's walk, so a
        session keeps one, not one per turn)."""
        return self._superseded

    def _unwritten(self, walk: Walk[Any, Any], stored: StoredHistory | None,
                   ids: Sequence[str], digest: str) -> list[WireForm]:
        out: list[WireForm] = []
        written = self._written
        for index in range(len(ids)):
            context = walk.contexts[index]
            key = context if isinstance(context, str) else context_key(context)
            mid = ids[index]
            if (mid, digest, key) in written:
                continue
            written.add((mid, digest, key))  # (taken back by ``unwritten`` if the write fails)
            if (stored is not None and index < len(stored.ids) and stored.plan == digest
                    and key in stored.forms(index)):
                continue
            out.append(_form(mid, digest, key, walk.facts[index], walk.afters[index],
                             walk.turns[index]))
        return out

    def _later(self, codec: Codec, encoder: TurnEncoder[Any, Any], walk: Walk[Any, Any],
               history: Sequence[Message], ids: Sequence[str], digest: str,
               plan: ReplayPlan) -> list[WireForm]:
        """The forms of the turns held as messages under the contexts a later request may put
        them in (``Codec.later_contexts``); a stored turn's were written with it."""
        stored = _stored_of(history)
        out: list[WireForm] = []
        written = self._written
        memo = self._digest_memo(digest)
        for index in range(len(stored.ids) if stored is not None else 0, len(ids)):
            for context in codec.later_contexts(walk.state, walk.contexts[index]):
                key = context if isinstance(context, str) else context_key(context)
                mid = ids[index]
                if (mid, digest, key) in written:
                    continue
                written.add((mid, digest, key))  # (taken back by ``unwritten`` on a failure)
                message = history[index]
                at = _memo_key(message, key)
                hit = memo.get(at)
                if hit is not None and hit[0] is message:
                    data, after = hit[1], hit[2]
                else:
                    data, after = encoder.encode_turn(message, plan, context)
                    memo[at] = (message, data, after)
                out.append(_form(mid, digest, key, walk.facts[index], after, data))
        return out

    def unwritten(self, forms: Sequence[WireForm]) -> None:
        """A write of ``forms`` failed: they are offered again next time."""
        self._written.difference_update((f.message_id, f.plan, f.context) for f in forms)


def _form(mid: str, digest: str, key: str, facts: TurnFacts, after: Named,
          data: bytes) -> WireForm:
    """A turn's stored form: its bytes, and its facts and after facts as the meta (what the
    unanswered-call scan of a resumed history reads: ``stored``)."""
    meta = {**facts.to_json(), "after": after.to_json()}
    return WireForm(message_id=mid, plan=digest, context=key, meta=orjson.dumps(meta).decode(),
                    data=data)


def _memo_key(message: Message, key: str) -> object:
    """A turn's key in its digest's memo: its message's identity, with its context's stored key
    unless that is "" (most turns: an int, no tuple to make)."""
    return id(message) if not key else (id(message), key)


def _stored_of(history: Sequence[Message]) -> StoredHistory | None:
    """The resumed history under ``history`` while it is not decoded: once it is, its decoded
    (and verified) messages are what is sent, so its stored forms are not read any more."""
    stored = history.stored if isinstance(history, Joined) else history
    return stored if isinstance(stored, StoredHistory) and not stored.decoded else None
