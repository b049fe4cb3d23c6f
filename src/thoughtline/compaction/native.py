"""The provider's own compaction as the summarizer (``[compaction] native = true``).

A codec that has one offers ``native_compaction(provider)``: the request parameters and headers
that ask for it, how to read the answer (the readable summary and the block, kept verbatim with
its signature or encrypted content) and which 400 names it. Any failure falls back to our own
summarizer; a 400 naming compaction also turns native compaction off for the session, recorded in
the session's settings (``thoughtline.native_compaction``) the way a verdict is, so later
compactions go straight to ours. This module knows no wire field names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from thoughtline.codecs.base import Lesson
from thoughtline.errors import ThoughtlineError
from thoughtline.events import Done
from thoughtline.messages import Message, Opaque

if TYPE_CHECKING:
    from thoughtline.session import Session

SETTINGS = "thoughtline.native_compaction"  # the session settings namespace it records in


class Native(Protocol):
    """What a codec's ``native_compaction`` hook returns (see ``codecs.anthropic.compaction``)."""

    params: Mapping[str, Any]
    headers: Mapping[str, str]
    #: A message that asks for the compaction after the history (None: the params ask for it).
    trigger: Message | None

    def read(self, message: Message) -> tuple[str, Opaque] | None: ...

    def names_it(self, status: int | None, body: str) -> bool: ...


def turned_off(session: Session) -> str:
    """Why native compaction is off for ``session`` ("" when it is not)."""
    found = session.config.api_settings(SETTINGS)
    return str(found.get("reason", "turned off")) if found.get("off") else ""


def offered(session: Session) -> Native | None:
    hook = getattr(session.codec, "native_compaction", None)
    return hook(session.provider) if hook is not None else None


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
class NativeSummarizer:
    """Asks the session's own route for its compaction of a history; None means fall back
    (``note`` says why). ``calls`` counts the requests sent."""

    session: Session
    native: Native
    calls: int = 0
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.session.provider.id}/{self.session.provider.model} (native)"

    async def __call__(self, history: Sequence[Message]) -> tuple[str, Opaque] | None:
        """The summary ("" when the block is not readable: ours writes the text) and the
        block, verbatim."""
        from thoughtline.turn import TurnEngine, TurnInput, TurnOptions

        session = self.session
        provider = replace(session.provider,
                           headers={**(session.provider.headers or {}), **self.native.headers})
        config = replace(session.config, provider=provider, tools=(),
                         params={**session.config.params, **self.native.params})
        trigger = self.native.trigger
        earlier, last = ((tuple(history), (trigger,)) if trigger is not None
                         else (tuple(history[:-1]), tuple(history[-1:])))
        turn = TurnInput(codec=session.codec, provider=provider, config=config,
                         history=earlier, pending=last,
                         ledger=session.store.verdicts(), session=session.id,
                         purpose="compaction")
        engine = TurnEngine(session.transport, session.log)
        done: Done | None = None
        self.calls += 1
        try:
            async for event in engine.run(turn, NoSink(session),
                                          TurnOptions(stream=False, keep_partial=False,
                                                      requests=1)):
                if isinstance(event, Done):
                    done = event
        except ThoughtlineError as exc:
            status, body = getattr(exc, "status", None), getattr(exc, "body", "")
            if self.native.names_it(status, body):
                reason = f"the provider rejected it ({status}): {body[:200]}"
                session.remember({SETTINGS: {"off": True, "reason": reason}})
                self.note = (f"native compaction failed and is off for this session ({reason}); "
                             "our summarizer stood in")
            else:
                self.note = f"native compaction failed ({exc}); our summarizer stood in"
            return None
        made = self.native.read(done.message) if done is not None else None
        if made is None:
            self.note = ("native compaction returned no single signed compaction block; our "
                         "summarizer stood in")
        return made
