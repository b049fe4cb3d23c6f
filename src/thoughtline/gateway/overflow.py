"""Reactive compaction for the gateway: a turn the upstream rejects as over its context window is
compacted once and sent once more.

The client owns its conversation and resends all of it on every request, so the gateway never
rewrites the stored session: only the request that overflowed is compacted. Its head becomes one
checkpoint (the summary, asked of the same upstream through the same engine, logged with
``purpose: "compaction"``) and its tail goes back verbatim, exactly as ``compaction.core``
decides for a CLI session. A second overflow, or a history that cannot be shortened, is a
``ContextOverflow`` the face turns into the client's error. Nothing here reads wire fields: the
wordings are ``wordings.OVERFLOW_WORDINGS``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import replace

from thoughtline.codecs.base import Lesson
from thoughtline.compaction.core import compact_history, rules_for
from thoughtline.errors import ContextOverflow, ProviderError
from thoughtline.estimate import Estimator, context_window
from thoughtline.events import Done, Event
from thoughtline.messages import Message
from thoughtline.turn import TurnEngine, TurnInput, TurnOptions, TurnSink
from thoughtline.wordings import Wording, overflowed

__all__ = ["recovering"]


class _Discard:
    """The summary's request stores nothing and teaches the session nothing."""

    def learned(self, lesson: Lesson) -> None:
        pass

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        pass

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        pass


class _AsSent:
    """The retry's sink: what is stored is the client's turn as it came (``pending``), never
    the compacted request that carried it."""

    def __init__(self, sink: TurnSink, pending: Sequence[Message]) -> None:
        self._sink, self._pending = sink, pending

    def learned(self, lesson: Lesson) -> None:
        self._sink.learned(lesson)

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        self._sink.finished(self._pending, done)

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        self._sink.interrupted(self._pending, partial)


async def recovering(engine: TurnEngine, turn: TurnInput, sink: TurnSink,
                     options: TurnOptions) -> AsyncIterator[Event]:
    """``engine.run(turn, …)``; after a context-length rejection of a turn that yielded nothing
    yet: one compaction (one summary request), then the turn once more."""
    started = False
    try:
        async with aclosing(engine.run(turn, sink, options)) as events:
            async for event in events:
                started = True
                yield event
        return
    except ProviderError as error:
        wording = None if started else overflowed(error.status, error.body)
        if wording is None or error.attempts >= 2:  # no request left for the turn
            raise
        first = error
    retry = await _compacted(engine, turn, wording, first, options)
    try:
        last = replace(options, requests=1)  # the turn's second and last request
        async with aclosing(engine.run(retry, _AsSent(sink, turn.pending), last)) as events:
            async for event in events:
                yield event
    except ProviderError as error:
        again = overflowed(error.status, error.body)
        if again is None:
            raise
        raise ContextOverflow(
            f"the conversation is still over {turn.provider.model}'s context window after one "
            f"compaction by the gateway ({again.id}); start a new conversation",
            status=error.status, body=error.body, route=error.route,
            provider=error.provider) from error


async def _compacted(engine: TurnEngine, turn: TurnInput, wording: Wording,
                     error: ProviderError, options: TurnOptions) -> TurnInput:
    """``turn`` with its history compacted (or ``ContextOverflow`` when nothing can be)."""
    route = turn.route
    estimator = Estimator.for_config(turn.codec, route, turn.config, ledger=turn.ledger)
    # What the gateway has not stored yet comes as pending: the whole request is compacted,
    # up to the message being answered.
    whole = [*turn.history, *turn.pending]
    history, pending = whole[:-1], whole[-1:]
    rejected = estimator.price(whole)
    window = context_window(turn.provider.model)
    rules = rules_for(turn.codec, route)

    async def summarize(prompt: Sequence[Message]) -> tuple[str, str | None]:
        ask = TurnInput(codec=turn.codec, provider=turn.provider,
                        config=replace(turn.config, tools=()), history=(), pending=prompt,
                        ledger=turn.ledger, session=turn.session, purpose="compaction")
        done: Done | None = None
        summary = TurnOptions(stream=False, keep_partial=False, trace=options.trace,
                              on_upstream=options.on_upstream)
        async for event in engine.run(ask, _Discard(), summary):
            if isinstance(event, Done):
                done = event
        assert done is not None
        return done.message.text, done.finish

    # The rejection proves the usable window is under what was sent: the tail, the result and
    # the summarizer's own prompt are bounded by that, not by the model's nominal window.
    usable = min(window, rejected) if window else rejected
    outcome = await compact_history(
        history, estimator=estimator, summarize=summarize, window=usable, pending=pending,
        budget=int(usable * 0.4), rules=rules, summary_rules=rules,
        summary_cap=max(256, min(4000, usable // 20)),
        prompt_budget=int(usable * 0.6))
    if not outcome.compacted:
        raise ContextOverflow(
            f"the conversation is over {turn.provider.model}'s context window ({wording.id}) "
            f"and the gateway could not shorten it ({outcome.reason}); start a new "
            "conversation", status=error.status, body=error.body, route=error.route,
            provider=error.provider) from error
    after = {api: values for api, values in rules.after_compaction.items()
             if api == turn.codec.api}
    config = turn.config.learned(settings=after) if after else turn.config
    return replace(turn, history=tuple(outcome.messages), pending=tuple(pending),
                   config=config, cache=None)
