"""Automatic compaction: ``AutoCompaction`` wraps a session's turns (once per threshold
crossing before a request, once after a context-length 4xx) and calibrates the estimator from
what the provider reports.

It drives the session from outside (``send`` / ``stream`` take the session), so the session
never refers to compaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from thoughtline.compaction.core import CompactionSettings, Summarize
from thoughtline.compaction.sessions import (
    CompactionResult,
    compress,
    native_summarizer,
    session_estimator,
    summarizer_for,
)
from thoughtline.errors import ContextOverflow, ProviderError, ThoughtlineError, UsageError
from thoughtline.estimate import (
    CALIBRATION,
    PLAUSIBLE,
    SAMPLE_FLOOR,
    calibration_key,
    calibration_of,
    observe,
    plausible,
)
from thoughtline.events import Done, Event, Notice
from thoughtline.messages import Message, ToolResult, as_message
from thoughtline.turn import TurnOptions
from thoughtline.wordings import overflowed

if TYPE_CHECKING:
    from thoughtline.session import Session


class TurnRun(Protocol):
    """Sends the turn and yields its events: as asked, or with at most ``requests`` requests
    (the retry after an overflow passes 1: the turn's second and last request)."""

    def __call__(self, requests: int = ..., /) -> AsyncIterator[Event]: ...


class AutoCompaction:
    """Compacts before a request whose estimate exceeds ``threshold`` × the context window, and
    after a request the provider rejected as over its context window.

    Before a request: at most once per threshold crossing; after compacting (or failing to gain
    anything) it waits until a request is priced under the threshold again. After a
    "context length exceeded" 4xx (``wordings.OVERFLOW_WORDINGS``): compact once and send the
    turn once more; the summary's own request is counted (``summary_requests``) and logged with
    ``purpose: "compaction"``, and a second overflow is a ``ContextOverflow``. It also calibrates
    the estimator from each answer's reported prompt size (every input-token count), ignoring
    an implausible one (``estimate.PLAUSIBLE``) with one notice per session.
    """

    def __init__(self, settings: CompactionSettings,
                 on_progress: Callable[[int], None] | None = None,
                 summarize: Summarize | None = None) -> None:
        self.settings = settings
        self.on_progress = on_progress
        self.summarize = summarize  # None: the session's model or the configured summarizer
        self.armed = True
        self.compactions = 0
        self.overflows = 0  # turns the provider rejected as over its context window
        self.summary_requests = 0  # summarizer requests sent, before a turn or after a 4xx
        self.ignored_samples = 0  # reported prompt sizes calibration left out
        self.last: CompactionResult | None = None  # the latest attempt's result
        self._answering: set[Session] = set()  # with a turn (and its compaction) in flight

    def limit(self, session: Session) -> int | None:
        window = self.settings.window(session.provider)
        return int(window * self.settings.threshold) if window else None

    async def send(self, session: Session, turn: str | Message | Sequence[ToolResult],
                   options: TurnOptions | None = None) -> Done:
        """``session.send`` with automatic compaction around the turn (see ``stream``)."""
        done: Done | None = None
        async for event in self.stream(session, turn, options):
            if isinstance(event, Done):
                done = event
        assert done is not None
        return done

    async def stream(self, session: Session, turn: str | Message | Sequence[ToolResult],
                     options: TurnOptions | None = None) -> AsyncIterator[Event]:
        """``session.stream`` with automatic compaction around the turn: compacted first when
        it would not fit, sent once more after a context-length 4xx (its second and last
        request); the session itself knows nothing of compaction. One turn at a time per
        session, its compaction included (as ``session.stream`` refuses a second turn)."""
        if session in self._answering:
            raise UsageError(f"session {session.id[:12]} is already answering a turn; wait for "
                             "it to finish (one turn at a time per session)")
        message = as_message(turn)
        chosen = options or TurnOptions()

        def run(requests: int = chosen.requests) -> AsyncIterator[Event]:
            return session.stream(message, replace(chosen,
                                                   requests=min(requests, chosen.requests)))

        self._answering.add(session)
        try:
            async for event in self.around(session, message, run):
                yield event
        finally:
            self._answering.discard(session)

    async def around(self, session: Session, message: Message,
                     run: TurnRun) -> AsyncIterator[Event]:
        limit = self.limit(session)
        raw: int | None = None
        if limit is not None:
            estimator = session_estimator(session)
            raw = estimator.raw(session.view, [message])
            if estimator.scale(raw) > limit:
                if self.armed:
                    self.armed = False
                    budget = int(limit * self.settings.target)
                    notice = await self._compact(session, message, budget)
                    yield Notice(notice)
                    raw = session_estimator(session).raw(session.view, [message])
            else:
                self.armed = True
        try:
            async for event in self._calibrated(session, raw, run):
                yield event
            return
        except ProviderError as error:
            wording = overflowed(error.status, error.body)
            if wording is None:
                raise
            first = error
        self.overflows += 1
        if first.attempts >= 2:  # the turn already sent its two requests: none is left
            raise ContextOverflow(f"{session.provider.model} rejected the turn's second request "
                                  f"as over its context window ({wording.id}); compact the "
                                  "session (/compact, or thoughtline sessions compact) and send "
                                  "it again", status=first.status, body=first.body,
                                  route=first.route, provider=first.provider) from first
        self.armed = False
        estimator = session_estimator(session)
        rejected = estimator.price([*session.view, message])
        budget = int(min(rejected, limit or rejected) * self.settings.target)
        notice = await self._compact(session, message, budget, strict=True)
        if self.last is None or not self.last.compacted:
            raise ContextOverflow(f"the conversation is over {session.provider.model}'s context "
                                  f"window ({wording.id}) and compaction could not shorten it "
                                  f"({notice}); start a new session or compact with a smaller "
                                  "--keep", status=first.status, body=first.body,
                                  route=first.route, provider=first.provider) from first
        yield Notice(f"{session.provider.model} rejected the turn as over its context window "
                     f"({wording.id}): {notice}; sending it once more")
        raw = session_estimator(session).raw(session.view, [message])
        try:  # the turn's second and last request: no fallback retry after it
            async for event in self._calibrated(session, raw, lambda: run(1)):
                yield event
        except ProviderError as error:
            again = overflowed(error.status, error.body)
            if again is None:
                raise
            raise ContextOverflow(f"the conversation is still over {session.provider.model}'s "
                                  f"context window after one automatic compaction ({again.id}); "
                                  "start a new session or compact with a smaller --keep",
                                  status=error.status, body=error.body, route=error.route,
                                  provider=error.provider) from error

    async def _calibrated(self, session: Session, raw: int | None,
                          run: Callable[[], AsyncIterator[Event]]) -> AsyncIterator[Event]:
        """The turn's events; its answer's reported prompt size calibrates the estimator first
        (a notice before ``Done`` says so the first time a report is ignored)."""
        async for event in run():
            if isinstance(event, Done) and raw is not None:
                notice = self._calibrate(session, raw, event.usage.prompt_size)
                if notice:
                    yield Notice(notice)
            yield event

    async def _compact(self, session: Session, message: Message, budget: int, *,
                       strict: bool = False) -> str:
        summarize = _Counted(self.summarize or summarizer_for(session, self.settings,
                                                              self.on_progress))
        native = native_summarizer(session, self.settings) if self.summarize is None else None
        try:
            result = await compress(session, pending=[message], settings=self.settings,
                                    budget=budget, summarize=summarize,
                                    on_progress=self.on_progress, native=native)
        except ThoughtlineError as exc:
            self.summary_requests += summarize.calls + (native.calls if native else 0)
            self.last = None
            if strict:
                return f"automatic compaction failed ({exc})"
            return f"automatic compaction failed ({exc}); the turn is sent uncompacted"
        self.summary_requests += summarize.calls + (native.calls if native else 0)
        self.last = result
        if result.compacted:
            self.compactions += 1
        return "automatic " + result.describe()

    def _calibrate(self, session: Session, raw: int, reported: int) -> str:
        route = session.route
        known = calibration_of(session.config, route)
        if raw >= SAMPLE_FLOOR and reported > 0 and not plausible(raw=raw, reported=reported):
            self.ignored_samples += 1
            if self.ignored_samples > 1:
                return ""
            low, high = PLAUSIBLE
            return (f"{route.provider} reported a prompt of {reported} tokens for a request "
                    f"estimated at ~{raw}: outside {low}–{high}× the estimate, so the token "
                    "estimate ignores it (and any further such report this session)")
        updated = observe(known, raw=raw, reported=reported)
        if updated is None or (known.samples >= _SETTLED
                               and abs(updated.ratio - known.ratio) < 0.005 * known.ratio):
            return ""  # a settled ratio that barely moved is not worth a store write per turn
        session.remember({CALIBRATION: {calibration_key(route): updated.to_json()}})
        return ""


class _Counted:
    """A summarizer that counts the requests it was asked to make."""

    def __init__(self, summarize: Summarize) -> None:
        self._summarize = summarize
        self.calls = 0

    async def __call__(self, prompt: Sequence[Message]) -> tuple[str, str | None]:
        self.calls += 1
        return await self._summarize(prompt)


_SETTLED = 8  # calibration samples after which small changes are no longer stored

