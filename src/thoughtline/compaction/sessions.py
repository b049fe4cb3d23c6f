"""Compaction of a stored session: ``compress`` (one generation written atomically), the
summarizer through the turn engine, and ``AutoCompaction`` (once per threshold crossing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from thoughtline import config as config_mod
from thoughtline.codecs import registry
from thoughtline.codecs.base import Lesson
from thoughtline.errors import ContextOverflow, ProviderError, ThoughtlineError
from thoughtline.estimate import (
    CALIBRATION,
    PLAUSIBLE,
    SAMPLE_FLOOR,
    Estimator,
    calibration_key,
    calibration_of,
    observe,
    plausible,
)
from thoughtline.events import Done, Event, Notice, TextDelta
from thoughtline.fallback import overflowed
from thoughtline.messages import Message
from thoughtline.modelconfig import ModelConfig
from thoughtline.wirecache import WireCache

if TYPE_CHECKING:
    from thoughtline.session import Session

from thoughtline.compaction import native as native_mod
from thoughtline.compaction.core import (
    CompactionRules,
    CompactionSettings,
    Summarize,
    compact_history,
    rules_for,
)
from thoughtline.compaction.native import NativeSummarizer

# --- sessions -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionResult:
    """What ``compress`` did to a session (``to_json`` is the public ``--json`` object)."""

    session: str
    compacted: bool
    turns_before: int
    turns_after: int
    tokens_before: int
    tokens_after: int
    reason: str = ""
    salvaged: tuple[str, ...] = ()
    dropped_checkpoints: int = 0
    generation: int | None = None  # the archived generation's number
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    native: str = ""  # what native compaction did ("" when it was not asked)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session": self.session, "compacted": self.compacted,
                               "turns_before": self.turns_before, "turns_after": self.turns_after,
                               "tokens_before": self.tokens_before,
                               "tokens_after": self.tokens_after}
        if not self.compacted:
            out["reason"] = self.reason
        return out

    def describe(self) -> str:
        note = f" ({self.native})" if self.native else ""
        if not self.compacted:
            return f"not compacted: {self.reason}{note}"
        line = (f"compacted: {self.turns_before} → {self.turns_after} turns, "
                f"~{self.tokens_before} → ~{self.tokens_after} tokens (generation "
                f"{self.generation} kept; 'thoughtline sessions restore {self.session[:12]} "
                f"--generation {self.generation}' undoes it)")
        line += f"; {self.native}" if self.native else ""
        if self.salvaged:
            line += f"; salvage: {', '.join(self.salvaged)}"
        for api, values in self.settings.items():
            shown = ", ".join(f"{k}={v}" for k, v in values.items())
            line += (f"; {api} requests now carry {shown} (thinking blocks bound to the old "
                     "prefix are dropped by the provider and reported, instead of a 400)")
        return line


class NoSink:
    """The summary request stores nothing: it is not a turn of the session."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def learned(self, lesson: Lesson) -> None:
        if lesson.verdict is not None:  # what the route taught still goes to the ledger
            self._session.store.record_verdict(lesson.verdict)

    def finished(self, pending: Sequence[Message], done: Done) -> None:
        pass

    def interrupted(self, pending: Sequence[Message], partial: Message | None) -> None:
        pass


@dataclass(kw_only=True, slots=True)
class EngineSummarizer:
    """Summarizes through the ``TurnEngine``: the session's own model, or a configured one."""

    session: Session
    provider: config_mod.ProviderConfig
    config: ModelConfig
    on_progress: Callable[[int], None] | None = None

    @property
    def label(self) -> str:
        return f"{self.provider.id}/{self.provider.model}"

    @property
    def rules(self) -> CompactionRules:
        codec = registry.codec(self.provider.api)
        p = self.provider
        return rules_for(codec, codec.resolve(p.route_id, p.base_url, p.model, echo=p.echo))

    async def __call__(self, prompt: Sequence[Message]) -> tuple[str, str | None]:
        from thoughtline.turn import TurnEngine, TurnInput, TurnOptions

        session = self.session
        turn = TurnInput(codec=registry.codec(self.provider.api), provider=self.provider,
                         config=replace(self.config, tools=()), history=(), pending=prompt,
                         ledger=session.store.verdicts(), session=session.id,
                         purpose="compaction")
        engine = TurnEngine(session.transport, session.log)
        chars = 0
        done: Done | None = None
        async for event in engine.run(turn, NoSink(session), TurnOptions(keep_partial=False)):
            if isinstance(event, TextDelta):
                chars += len(event.text)
                if self.on_progress is not None:
                    self.on_progress(chars)
            elif isinstance(event, Done):
                done = event
        assert done is not None
        return done.message.text, done.finish


def summarizer_for(session: Session, settings: CompactionSettings,
                   on_progress: Callable[[int], None] | None = None) -> EngineSummarizer:
    if not settings.summarizer:
        return EngineSummarizer(session=session, provider=session.provider,
                                config=session.config, on_progress=on_progress)
    provider_id, _, model = settings.summarizer.partition("/")
    provider = config_mod.provider(provider_id, settings.config, model=model)
    return EngineSummarizer(session=session, provider=provider,
                            config=ModelConfig(provider=provider), on_progress=on_progress)


def session_estimator(session: Session, *, fresh_cache: bool = False) -> Estimator:
    """The estimator of the session's next request (its route, plan, tools and calibration)."""
    codec = session.codec
    return Estimator.for_config(codec, session.route, session.config,
                                ledger=session.store.verdicts(),
                                cache=WireCache() if fresh_cache else session.wire_cache)


async def compress(session: Session, *, keep: int | None = None,
                   pending: Sequence[Message] = (), budget: int | None = None,
                   settings: CompactionSettings | None = None,
                   summarize: Summarize | None = None,
                   on_progress: Callable[[int], None] | None = None,
                   native: NativeSummarizer | None = None) -> CompactionResult:
    """Compact ``session`` now: summarize the head, keep at least the last ``keep`` messages
    verbatim, write a new generation and continue from it. ``budget`` (tokens) makes the tail
    walk keep as much tail as fits; without one everything before the kept tail is summarized.
    Ctrl-C or a crash before the store write leaves the session as it was. With
    ``settings.native`` the route's own compaction is asked first (``native``, made here when
    not given) where it has one and it is not off for the session."""
    settings = settings or CompactionSettings()
    keep = settings.keep if keep is None else max(0, keep)
    stored = [m.id for m in session.store.load_history(session.id).messages]
    if len(stored) != len(session.history):
        session.reload()  # another process added turns: compact what is stored
    history = session.history
    route = session.route
    rules = rules_for(session.codec, route)
    engine_summarizer = summarizer_for(session, settings, on_progress)
    window = settings.window(session.provider)
    cap = max(256, min(4000, window // 20)) if window else 2000
    reader = settings.window(engine_summarizer.provider)  # the summarizer's own window
    native = native or native_summarizer(session, settings)
    outcome = await compact_history(
        history, estimator=session_estimator(session, fresh_cache=True),
        summarize=summarize or engine_summarizer, keep=keep, pending=pending, budget=budget,
        rules=rules, summary_rules=engine_summarizer.rules, summary_cap=cap,
        prompt_budget=int(reader * 0.6) if reader else None, native=native)
    result = CompactionResult(session=session.id, compacted=outcome.compacted,
                              turns_before=len(history), turns_after=len(outcome.messages),
                              tokens_before=outcome.tokens_before,
                              tokens_after=outcome.tokens_after, reason=outcome.reason,
                              salvaged=outcome.salvaged,
                              dropped_checkpoints=outcome.dropped_checkpoints,
                              native=_native_note(native))
    if not outcome.compacted:
        return result
    expect = (len(stored), stored[-1] if stored else None)  # refused if it changed meanwhile
    note = {"ended_by": "compaction", "turns_after": result.turns_after,
            "tokens_before": result.tokens_before, "tokens_after": result.tokens_after,
            "summarizer": (native.label if native is not None and not native.note
                           else engine_summarizer.label),
            "salvaged": list(outcome.salvaged)}
    number = session.store.replace_history(session.id, outcome.messages, expect=expect,
                                           note=note)
    session.reload()
    after = {api: dict(values) for api, values in rules.after_compaction.items()
             if api == session.codec.api}
    if after:
        session.remember(after)
    return replace(result, generation=number, settings=after)


def native_summarizer(session: Session, settings: CompactionSettings) -> NativeSummarizer | None:
    """The route's own compaction when ``native`` is set, the route has one and it is not off."""
    if not settings.native or native_mod.turned_off(session):
        return None
    offer = native_mod.offered(session)
    return NativeSummarizer(session=session, native=offer) if offer is not None else None


def _native_note(native: NativeSummarizer | None) -> str:
    if native is None or native.calls == 0:
        return ""
    return native.note or (f"{native.session.provider.id}'s own compaction is kept with the "
                           "checkpoint")


class AutoCompaction:
    """Compacts before a request whose estimate exceeds ``threshold`` × the context window, and
    after a request the provider rejected as over its context window.

    Before a request: at most once per threshold crossing; after compacting (or failing to gain
    anything) it waits until a request is priced under the threshold again. After a
    "context length exceeded" 4xx (``fallback.OVERFLOW_WORDINGS``): compact once and send the
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

    def limit(self, session: Session) -> int | None:
        window = self.settings.window(session.provider)
        return int(window * self.settings.threshold) if window else None

    async def around(self, session: Session, message: Message,
                     run: Callable[[], AsyncIterator[Event]]) -> AsyncIterator[Event]:
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

