"""The retained tail bounded by tokens (issue 46 item 1): ``sessions compact`` and chat's
``/compact`` without N (both ``compress`` with no ``keep``) keep the longest tail under
``core.tail_budget`` — a share of the window and half of what the session costs now — and
shorten bulky tool outputs in it (head and end kept); an explicit N keeps N turns verbatim, as
documented."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session
from thoughtline.compaction import CompactionSettings, compress
from thoughtline.compaction.core import TRIMMED, tail_budget
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator

BULKY = 40_000  # characters of each tool output (~10K tokens)
LEFT_OUT = TRIMMED.split("{n}")[1].strip()


def _two_bulky_exchanges(emu: ChatEmulator, store: Store) -> Session:
    async def scenario() -> Session:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        # 8 messages ([compaction] keep's old default left nothing to cut), the last tool
        # output alone more than half of the session
        for i, size in enumerate((BULKY, 2 * BULKY)):
            await tool_loop(session, i, result_size=size)
        await session.aclose()
        return session

    return run(scenario())


def _cli(home: Path, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update({"THOUGHTLINE_HOME": str(home), "DEEPSEEK_API_KEY": key})
    return subprocess.run([sys.executable, "-m", "thoughtline.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False, env=env,
                          stdin=subprocess.DEVNULL)


def test_tail_budget_is_a_share_of_the_window_and_below_the_size_before() -> None:
    assert tail_budget(200_000, 1_000_000) == 50_000  # a quarter of the window
    assert tail_budget(200_000, 30_000) == 15_000  # half of what it costs now
    assert tail_budget(None, 10**7) == 32_768  # the documented default window, 128K
    assert tail_budget(None, 100) < 100


def test_compress_without_a_count_keeps_a_token_bounded_tail(emu: ChatEmulator,
                                                            store: Store) -> None:
    session = _two_bulky_exchanges(emu, store)

    async def scenario() -> tuple[object, object]:
        opened = Session.resume(store, session.id)
        counted = await compress(opened, keep=8)
        bounded = await compress(opened, settings=CompactionSettings())
        await opened.aclose()
        return counted, bounded

    counted, bounded = run(scenario())
    assert not counted.compacted and "last 8 turns" in counted.reason  # N as documented
    assert bounded.compacted, bounded.reason
    assert bounded.tokens_after < bounded.tokens_before * 0.6  # a tail of half, + summary
    assert "shortened bulky tool outputs" in bounded.salvaged
    history = Session.resume(store, session.id).history
    (result,) = [p for m in history for p in m.tool_results]  # exchange 0 was summarized
    assert LEFT_OUT in result.content
    assert result.content.startswith("fact 1 ") and len(result.content) < 1.2 * BULKY  # of 2×


def test_sessions_compact_without_keep_uses_the_token_bounded_tail(
        emu: ChatEmulator, store: Store, home: Path, deepseek_key: str) -> None:
    session = _two_bulky_exchanges(emu, store)
    kept = _cli(home, deepseek_key, "sessions", "compact", session.id, "--keep", "8", "--json")
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["compacted"] is False
    done = _cli(home, deepseek_key, "sessions", "compact", session.id, "--json")
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout)
    assert reported["compacted"] is True
    assert reported["tokens_after"] < reported["tokens_before"] * 0.6  # a tail of half, + summary
