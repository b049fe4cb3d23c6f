"""Compaction of a stored session: ``compress`` (one generation written through the session's
persistence path) and the summarizer through the turn engine. ``auto`` compacts automatically.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from thoughtline import config as config_mod
from thoughtline.codecs import registry
from thoughtline.estimate import Estimator
from thoughtline.events import Done, TextDelta
from thoughtline.messages import Message
from thoughtline.modelconfig import ModelConfig
from thoughtline.wire.cache import WireCache

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
from thoughtline.compaction.native import NativeSummarizer, NoSink

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
    #: The session compacted when another writer went on meanwhile and the compacted history
    #: went on a branch of it (``session``); "" when it went on the session itself.
    branched_from: str = ""

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
        if self.branched_from:
            line += (f"; session {self.branched_from[:12]} got new turns from another writer "
                     f"meanwhile, so this is a new branch, {self.session[:12]}, and they stay "
                     "where they are")
        if self.salvaged:
            line += f"; salvage: {', '.join(self.salvaged)}"
        for api, values in self.settings.items():
            shown = ", ".join(f"{k}={v}" for k, v in values.items())
            line += (f"; {api} requests now carry {shown} (thinking blocks bound to the old "
                     "prefix are dropped by the provider and reported, instead of a 400)")
        return line


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
        return rules_for(codec, registry.route_for(codec, self.provider))

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
    verbatim (``keep``, else ``settings.keep``; when neither is given the retained tail is
    bounded by tokens, ``core.tail_budget`` of the session's window, and its bulky tool outputs
    may be shortened), write a new generation and continue from it. ``budget`` (tokens) makes
    the tail walk keep as much tail as fits; without one (and a message count) everything
    before the kept tail is summarized.
    Ctrl-C or a crash before the store write leaves the session as it was. With
    ``settings.native`` the route's own compaction is asked first (``native``, made here when
    not given) where it has one and it is not off for the session."""
    settings = settings or CompactionSettings()
    keep = settings.keep if keep is None else max(0, keep)  # None: a token-bounded tail
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
        summarize=summarize or engine_summarizer, keep=keep, window=window, pending=pending,
        budget=budget, rules=rules, summary_rules=engine_summarizer.rules, summary_cap=cap,
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
    note = {"ended_by": "compaction", "turns_after": result.turns_after,
            "tokens_before": result.tokens_before, "tokens_after": result.tokens_after,
            "summarizer": (native.label if native is not None and not native.note
                           else engine_summarizer.label),
            "salvaged": list(outcome.salvaged)}
    # The one persistence path: on a branch when another writer went on meanwhile (never over
    # turns the summary did not see), in a rescue file when it cannot be stored.
    number = session.replace_history(outcome.messages, at=len(stored),
                                     head=stored[-1] if stored else None, note=note)
    if session.id != result.session:
        result = replace(result, session=session.id, branched_from=result.session)
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
