"""``sessions compact``, ``sessions show --generations`` and ``sessions restore`` through the real
entry point (a subprocess with its own state home)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from compaction_support import TOOLS, deepseek, run, tool_loop

from thoughtline import Session
from thoughtline.messages import dumps
from thoughtline.store.base import Store
from thoughtline.testing import ChatEmulator


def _cli(home: Path, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update({"THOUGHTLINE_HOME": str(home), "DEEPSEEK_API_KEY": key})
    return subprocess.run([sys.executable, "-m", "thoughtline.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False, env=env,
                          stdin=subprocess.DEVNULL)


def test_compact_show_generations_and_restore(emu: ChatEmulator, store: Store, home: Path,
                                              deepseek_key: str) -> None:
    async def scenario() -> Session:
        session = Session.create(store, deepseek(emu), tools=TOOLS)
        for i in range(4):
            await tool_loop(session, i)
        await session.aclose()
        return session

    session = run(scenario())
    original = [dumps(m) for m in session.history]

    nothing = _cli(home, deepseek_key, "sessions", "compact", session.id[:10], "--keep", "40",
                   "--json")
    assert nothing.returncode == 0, nothing.stderr
    reported = json.loads(nothing.stdout)
    assert reported["compacted"] is False and reported["reason"]
    assert reported["turns_before"] == reported["turns_after"] == 16

    done = _cli(home, deepseek_key, "sessions", "compact", session.id, "--keep", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("compacted: 16 → ")
    assert f"sessions restore {session.id[:12]} --generation 0" in done.stdout
    assert "compacting: summarizing" in done.stderr  # the progress line, off a terminal

    listing = _cli(home, deepseek_key, "sessions", "show", session.id, "--generations")
    lines = listing.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("  generation   0     16 turns")
    assert "compacted to 5 turns" in lines[0] and lines[1].startswith("* generation   1")

    bad = _cli(home, deepseek_key, "sessions", "restore", session.id, "--generation", "7")
    assert bad.returncode == 2 and "no archived generation 7" in bad.stderr

    back = _cli(home, deepseek_key, "sessions", "restore", session.id, "--generation", "0")
    assert back.returncode == 0 and "as generation 2" in back.stdout
    assert [dumps(m.message) for m in store.load_history(session.id).messages] == original
    shown = json.loads(_cli(home, deepseek_key, "sessions", "show", session.id,
                            "--generations", "--json").stdout)
    assert [(g["generation"], g["turns"], g["current"]) for g in shown["generations"]] == [
        (0, 16, False), (1, 5, False), (2, 16, True)]
    assert shown["generations"][1]["note"] == {"ended_by": "restore", "restored": 0}


def test_a_demo_session_compacts_offline(home: Path, deepseek_key: str) -> None:
    for text in ("first question", "second question", "third question"):
        args = ("chat", "--provider", "demo", "-p", text, "--json")
        if text != "first question":
            args = ("chat", "-c", "-p", text, "--json")
        made = _cli(home, deepseek_key, *args)
        assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout)["session"]
    compacted = _cli(home, deepseek_key, "sessions", "compact", session, "--keep", "2", "--json")
    assert compacted.returncode == 0, compacted.stderr
    reported = json.loads(compacted.stdout)
    assert reported["compacted"] is True
    assert (reported["turns_before"], reported["turns_after"]) == (6, 3)


def test_chat_compacts_automatically_from_config_toml(emu: ChatEmulator, home: Path,
                                                      deepseek_key: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[providers.ds]\npreset = "deepseek"\nbase_url = "{emu.base_url}"\n'
        'context_window = 1200\n\n[compaction]\nthreshold = 0.8\nkeep = 2\n')
    said: list[str] = []
    for i in range(12):
        args = ["chat", "-p", f"question {i}: " + "tell me more " * 8]
        args[1:1] = ["--provider", "ds"] if i == 0 else ["-c"]
        turn = _cli(home, deepseek_key, *args)
        assert turn.returncode == 0, turn.stderr
        said.append(turn.stderr)
    compacted = [i for i, err in enumerate(said) if "automatic compacted:" in err]
    assert compacted and all(b - a > 1 for a, b in itertools.pairwise(compacted))
    assert "Traceback" not in "".join(said)
