"""A compaction whose head would be the last compaction's summary alone does not pay for a
summary of that summary (issue 46 item 7): it gains only what the tail can give, or says there
is nothing to gain — without a summarizer request."""

from __future__ import annotations

from collections.abc import Sequence

from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session
from thoughtline.compaction import compact_history, is_checkpoint
from thoughtline.estimate import Estimator
from thoughtline.messages import Message
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator


class _Counting:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, prompt: Sequence[Message]) -> tuple[str, str | None]:
        self.calls += 1
        return "what happened so far, in a few words", "stop"


def _history(emu: ChatEmulator, store: Store, loops: int) -> tuple[list[Message], Estimator]:
    async def scenario() -> tuple[list[Message], Estimator]:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        for i in range(loops):
            await tool_loop(session, i)
        await session.aclose()
        return list(session.history), Estimator.for_config(session.codec, session.route,
                                                           session.config)
    return run(scenario())


def test_compacting_a_compacted_history_again_asks_no_summary(emu: ChatEmulator,
                                                              store: Store) -> None:
    history, estimator = _history(emu, store, 4)
    first = _Counting()
    once = run(compact_history(history, estimator=estimator, summarize=first, keep=4))
    assert once.compacted and first.calls == 1
    compacted = list(once.messages)
    assert sum(is_checkpoint(m) for m in compacted) == 1
    second = _Counting()
    again = run(compact_history(compacted, estimator=estimator, summarize=second, keep=4))
    assert second.calls == 0
    assert not again.compacted and "nothing to gain" in again.reason
    assert list(again.messages) == compacted


def test_a_head_with_new_turns_after_the_summary_is_still_summarized(emu: ChatEmulator,
                                                                     store: Store) -> None:
    history, estimator = _history(emu, store, 4)
    once = run(compact_history(history, estimator=estimator, summarize=_Counting(), keep=8))
    summarize = _Counting()  # two exchanges after the summary: the older one joins the head
    more = run(compact_history(list(once.messages), estimator=estimator, summarize=summarize,
                               keep=4))
    assert summarize.calls == 1 and more.compacted
